import { InputError } from "./errors.js";
import { escapeUnprintable, firstUnprintable } from "./printable.js";
import { escapeLoneSurrogates, wellFormedProblem } from "./well-formed.js";

/**
 * A job's ref is the user's own name for it: it is stored, looked up and
 * printed in every listing (`jobs`, `show`, progress lines). A ref holding a
 * control character could act on the terminal that prints it (see
 * printable.ts), so it is refused at every entry (CLI flag, batch line,
 * library call) rather than escaped at every print.
 */
export const MAX_REF_LENGTH = 200;

export const REF_ALLOWED = `1 to ${MAX_REF_LENGTH} printable characters of well-formed Unicode (no control characters, line or paragraph separators, bidirectional formatting characters or lone surrogates)`;

/** What is wrong with a ref, or null when it is acceptable. */
export function refProblem(ref: unknown): string | null {
  if (typeof ref !== "string") return "must be a string";
  // Before anything else: a lone surrogate would be stored as U+FFFD, and two refs would name one job.
  const illFormed = wellFormedProblem(ref);
  if (illFormed !== null) return `"${escapeLoneSurrogates(escapeUnprintable(ref))}" ${illFormed}`;
  if (ref.trim().length === 0) return "must not be empty or blank";
  const length = [...ref].length;
  if (length > MAX_REF_LENGTH) return `is ${length} characters long, more than ${MAX_REF_LENGTH}`;
  const unprintable = firstUnprintable(ref);
  if (unprintable) return `"${escapeUnprintable(ref)}" holds the unprintable character ${unprintable.codePoint} at position ${unprintable.position}`;
  return null;
}

/** The ref, or an InputError naming `field` (`--ref`, `ref`). Nothing is stored or sent for a refused ref. */
export function validateRef(ref: unknown, field: string): string {
  const problem = refProblem(ref);
  if (problem !== null) throw new InputError(field, problem, REF_ALLOWED);
  return ref as string;
}

/** The start of a ref to search by (`ref_prefix`, `--ref-prefix`), or an InputError naming `field`: never empty nor longer than a ref. */
export function validateRefPrefix(value: string, field: string): string {
  const illFormed = wellFormedProblem(value);
  if (illFormed !== null) throw new InputError(field, `"${escapeLoneSurrogates(escapeUnprintable(value))}" ${illFormed}`, "the first characters of a ref, well-formed Unicode");
  if (value.length === 0) throw new InputError(field, "must not be empty (leave it out to list every ref)", "the first characters of a ref");
  const length = [...value].length;
  if (length > MAX_REF_LENGTH) throw new InputError(field, `is ${length} characters long, longer than any ref (${MAX_REF_LENGTH})`, `1 to ${MAX_REF_LENGTH} characters`);
  return value;
}
