/**
 * No spec publishes a prompt length limit for A, C, D, E or F; B publishes
 * one per field in its catalog records (`maxLength` in input_schema, enforced
 * by the schema check). Where none is published, a longer prompt is sent as
 * given, with a warning: the provider may refuse it or cut it short, and a
 * prompt of many kilobytes is more often a file pasted by mistake than meant.
 * 1,000 characters is past what a written prompt usually needs and below
 * where image and video APIs commonly draw their limits.
 */
export const LONG_PROMPT_CHARACTERS = 1_000;

/**
 * The warning for `text` in `field` when it is longer than LONG_PROMPT_CHARACTERS
 * (counted in characters, i.e. code points): one, or none, to spread into a
 * request's warnings. `silence` says who publishes no limit ("D publishes no
 * prompt length limit").
 */
export function longPromptWarnings(field: string, text: string, silence: string): string[] {
  const length = [...text].length;
  if (length <= LONG_PROMPT_CHARACTERS) return [];
  return [`${field} is ${length.toLocaleString("en-US")} characters long; ${silence}, so it is sent as given and may be refused or cut short (mediagate warns above ${LONG_PROMPT_CHARACTERS.toLocaleString("en-US")})`];
}
