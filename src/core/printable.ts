/**
 * Characters a terminal or a table acts on instead of showing: C0 and C1
 * controls and DEL (Cc), the line and paragraph separators (Zl, Zp), and the
 * bidirectional formatting characters that reorder what is shown (ALM, LRM,
 * RLM, LRE…RLO, LRI…PDI). ESC alone can retitle a terminal or rewrite the
 * screen; a newline breaks a table row.
 */
const UNPRINTABLE = /[\p{Cc}\p{Zl}\p{Zp}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, "gu");

export interface UnprintableCharacter {
  /** "U+001B" */
  codePoint: string;
  /** 1-based, in characters (code points). */
  position: number;
}

/** The first unprintable character of `text`, or null when it has none. */
export function firstUnprintable(text: string): UnprintableCharacter | null {
  const match = UNPRINTABLE.exec(text);
  if (!match) return null;
  return {
    codePoint: `U+${match[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`,
    position: [...text.slice(0, match.index)].length + 1,
  };
}

/** Text with every unprintable character written as `\uXXXX`, so a message can quote a bad value without a terminal acting on it. */
export function escapeUnprintable(text: string): string {
  return text.replace(UNPRINTABLE_ALL, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
