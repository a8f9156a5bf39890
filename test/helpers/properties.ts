import fc from "fast-check";
import { expect } from "vitest";
import { InputError } from "../../src/core/errors.js";
import type { JobRequest, ValidatedRequest } from "../../src/providers/adapter.js";

/**
 * Shared pieces of the validators' property tests. Runs are bounded so the
 * whole suite stays fast (PROPERTY_RUNS=5000 for a longer hunt); a failing
 * case is shrunk and printed by fast-check with its seed.
 */
export const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS ?? 200) } as const;

export type Verdict = { kind: "accepted"; validated: ValidatedRequest } | { kind: "refused"; error: InputError };

/** A validator's answer: the request accepted, or refused with an InputError. Anything else thrown fails the property. */
export function verdictOf(validate: () => ValidatedRequest): Verdict {
  try {
    return { kind: "accepted", validated: validate() };
  } catch (error) {
    if (error instanceof InputError) return { kind: "refused", error };
    throw error;
  }
}

/** The top-level name a refusal's field starts with: `images[2] (a.png)` → `images`, `content[0].role` → `content`. */
export function fieldRoot(field: string): string {
  return field.replace(/^prompt flag /, "prompt flag:").split(/[.[ ]/)[0]!;
}

/**
 * A refusal names a field of the request (a key of its input, or one of the
 * request's own parts: model, operation, images, input), says what was wrong
 * in its reason, and its message is `field: reason…`.
 */
export function expectNamesAField(error: InputError, request: JobRequest, otherNames: readonly string[] = []): void {
  const names = new Set(["model", "operation", "images", "input", ...Object.keys(request.input), ...otherNames]);
  expect(names.has(fieldRoot(error.field)), `the refusal's field "${error.field}" names nothing in the request (${error.message})`).toBe(true);
  expect(error.reason.trim().length).toBeGreaterThan(0);
  expect(error.message.startsWith(`${error.field}: `)).toBe(true);
}

/** Runs `validate` and expects a refusal naming `field` (exactly, or as its root when `root` is set). */
export function expectRefusedNaming(validate: () => ValidatedRequest, field: string | RegExp): InputError {
  const verdict = verdictOf(validate);
  expect(verdict.kind, "expected a refusal").toBe("refused");
  const error = (verdict as { error: InputError }).error;
  if (typeof field === "string") expect(error.field).toBe(field);
  else expect(error.field).toMatch(field);
  return error;
}

/** Printable text that is not blank: a plausible prompt. */
export const promptText = fc
  .string({ unit: "grapheme-ascii", minLength: 1, maxLength: 80 })
  .filter((text) => text.trim().length > 0 && !/--/.test(text));

/** Values of every JSON type (and undefined), for fields given the wrong thing. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 12 }),
  fc.constant(""),
  fc.constant("   "),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
);

/** Sets `key` of `target` to `value`, or removes it when `value` is undefined (so "absent" is generated too). */
export function withField(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...target };
  if (value === undefined) delete copy[key];
  else copy[key] = value;
  return copy;
}
