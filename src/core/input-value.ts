import { InputError } from "./errors.js";
import { JSON_DEPTH_ALLOWED, MAX_JSON_DEPTH } from "./json-text.js";
import { WELL_FORMED_ALLOWED, wellFormedProblem } from "./well-formed.js";

/**
 * A request's value as a caller built it (the library's and the AI SDK's
 * objects, or what a face parsed), held to what JSON text is held to before
 * it is parsed (json-text.ts), and its text to well-formed Unicode
 * (well-formed.ts): it is written as JSON when it is stored and sent, and V8
 * writes JSON recursively. Walked without recursion and never past the
 * depth bound, so a cyclic object is refused too. Bytes (an image read from
 * a file) are not walked.
 *
 * `outerLevels` counts the objects around the value (a request's `input` is
 * one level inside the request), so the bound counts from the outermost as
 * the text's does. Errors name the string's place: `input.prompt`,
 * `reference_images[1].fileName`.
 */
export function checkInputValue(value: unknown, field: string, outerLevels = 1): void {
  const pending: Array<{ value: unknown; level: number; path: string }> = [{ value, level: outerLevels, path: field }];
  while (pending.length > 0) {
    const { value: current, level, path } = pending.pop()!;
    if (typeof current === "string") {
      const problem = wellFormedProblem(current);
      if (problem !== null) throw new InputError(path, problem, WELL_FORMED_ALLOWED);
      continue;
    }
    if (typeof current !== "object" || current === null || ArrayBuffer.isView(current) || current instanceof ArrayBuffer) continue;
    if (level + 1 > MAX_JSON_DEPTH) throw new InputError(field, `is nested more than ${MAX_JSON_DEPTH} levels deep`, JSON_DEPTH_ALLOWED);
    if (Array.isArray(current)) {
      for (const [index, child] of current.entries()) pending.push({ value: child, level: level + 1, path: `${path}[${index}]` });
      continue;
    }
    for (const [key, child] of Object.entries(current)) {
      const problem = wellFormedProblem(key);
      if (problem !== null) throw new InputError(`${path} (a key)`, problem, WELL_FORMED_ALLOWED);
      pending.push({ value: child, level: level + 1, path: `${path}.${key}` });
    }
  }
}
