import { InputError } from "./errors.js";
import { JSON_DEPTH_ALLOWED, MAX_JSON_DEPTH } from "./json-text.js";

/**
 * A request's value as a caller built it (the library's and the AI SDK's
 * objects, or what a face parsed), held to the bounds JSON text is held to
 * before it is parsed (json-text.ts): it is written as JSON when it is
 * stored and sent, and V8 writes JSON recursively. Walked without recursion,
 * and never past the bound, so a cyclic object is refused too. Bytes (an
 * image read from a file) are not walked.
 *
 * `outerLevels` counts the objects around the value (a request's `input` is
 * one level inside the request), so the bound counts from the outermost as
 * the text's does.
 */
export function checkInputValue(value: unknown, field: string, outerLevels = 1): void {
  const pending: Array<{ value: unknown; level: number }> = [{ value, level: outerLevels }];
  while (pending.length > 0) {
    const { value: current, level } = pending.pop()!;
    if (typeof current !== "object" || current === null || ArrayBuffer.isView(current) || current instanceof ArrayBuffer) continue;
    if (level + 1 > MAX_JSON_DEPTH) throw new InputError(field, `is nested more than ${MAX_JSON_DEPTH} levels deep`, JSON_DEPTH_ALLOWED);
    for (const child of Array.isArray(current) ? current : Object.values(current)) pending.push({ value: child, level: level + 1 });
  }
}
