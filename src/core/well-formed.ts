import { InputError } from "./errors.js";

/**
 * Text that is not well-formed Unicode (a lone UTF-16 surrogate, which a
 * JSON escape such as "\ud800" makes) has no UTF-8 form: a store or a
 * provider writes U+FFFD in its place, so it would be kept changed, and two
 * different texts would become one ("a\ud800b" and "a\udc00b" would name one
 * job). It is refused wherever text is taken: refs, prompts and every other
 * string of a request, names, keys, URLs, query values.
 */
export const WELL_FORMED_ALLOWED = "well-formed Unicode text (a UTF-16 surrogate only as half of a pair)";

/** The first lone surrogate of `text` ("U+D800", at a 1-based position in code points), or null when the text is well-formed. */
export function loneSurrogate(text: string): { codeUnit: string; position: number } | null {
  if (text.isWellFormed()) return null;
  let position = 0;
  for (const character of text) {
    position++;
    const code = character.charCodeAt(0);
    // Iterating by code point yields a pair whole, so a surrogate seen alone is lone.
    if (character.length === 1 && code >= 0xd800 && code <= 0xdfff) return { codeUnit: `U+${code.toString(16).toUpperCase()}`, position };
  }
  return null;
}

/** Why `text` is not well-formed (for a message naming its field), or null. */
export function wellFormedProblem(text: string): string | null {
  const lone = loneSurrogate(text);
  return lone === null ? null : `holds a lone surrogate ${lone.codeUnit} at position ${lone.position}, which is not a character`;
}

/** The text, or an InputError naming `field`. */
export function checkWellFormed(text: string, field: string): string {
  const problem = wellFormedProblem(text);
  if (problem !== null) throw new InputError(field, problem, WELL_FORMED_ALLOWED);
  return text;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Text with each lone surrogate written as `\uXXXX`, so a message can quote it: printed as it is, it would show as U+FFFD. */
export function escapeLoneSurrogates(text: string): string {
  return text.replace(LONE_SURROGATE, (unit) => `\\u${unit.charCodeAt(0).toString(16)}`);
}
