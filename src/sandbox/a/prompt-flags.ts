import { isVideoRatio } from "../media/video.js";

/**
 * spec A prompt-suffix flags: parameters may be appended to the prompt
 * (`… --rs 720p --rt 16:9 --dur 5 --seed 7 --cf true --wm false`) with "weak
 * validation". What the sandbox does:
 * - a flag is `--name value` (or `--name=value`) anywhere in the text item;
 * - a well-formed value fills the field when the body did not set it, and is
 *   then checked like the body field (so `--rt 16:9` on a first-frame task is
 *   rejected on ratio, as the body field would be);
 * - a malformed value (`--rs 4k`, `--dur soon`, `--cf maybe`) or a flag
 *   repeating a field the body already set is ignored, never an error, and
 *   is recorded on the task (`ignoredFlags`) for tests to see;
 * - the flags stay in the prompt text; unknown `--words` are plain text.
 */
export interface APromptFlagValues {
  resolution?: string;
  ratio?: string;
  duration?: number;
  seed?: number;
  cameraFixed?: boolean;
  watermark?: boolean;
}

export interface APromptFlags {
  values: APromptFlagValues;
  /** Each ignored flag as written, with the reason: "--rs 4k (not a resolution)". */
  ignored: string[];
}

const FLAG = /(?:^|\s)--(rs|rt|dur|seed|cf|wm)(?:=|\s+)(\S+)/g;
const RESOLUTIONS = new Set(["480p", "720p", "1080p"]);

function parseBoolean(text: string): boolean | undefined {
  if (text === "true") return true;
  if (text === "false") return false;
  return undefined;
}

function parseInteger(text: string): number | undefined {
  return /^-?\d+$/.test(text) ? Number(text) : undefined;
}

export function parsePromptFlags(prompt: string): APromptFlags {
  const values: APromptFlagValues = {};
  const ignored: string[] = [];
  for (const match of prompt.matchAll(FLAG)) {
    const [, name, raw] = match as unknown as [string, string, string];
    const written = `--${name} ${raw}`;
    switch (name) {
      case "rs":
        if (RESOLUTIONS.has(raw)) values.resolution = raw;
        else ignored.push(`${written} (not a resolution)`);
        break;
      case "rt":
        if (isVideoRatio(raw) || raw === "adaptive") values.ratio = raw;
        else ignored.push(`${written} (not a ratio)`);
        break;
      case "dur": {
        const duration = parseInteger(raw);
        if (duration !== undefined) values.duration = duration;
        else ignored.push(`${written} (not an integer)`);
        break;
      }
      case "seed": {
        const seed = parseInteger(raw);
        if (seed !== undefined) values.seed = seed;
        else ignored.push(`${written} (not an integer)`);
        break;
      }
      case "cf": {
        const cameraFixed = parseBoolean(raw);
        if (cameraFixed !== undefined) values.cameraFixed = cameraFixed;
        else ignored.push(`${written} (not true or false)`);
        break;
      }
      case "wm": {
        const watermark = parseBoolean(raw);
        if (watermark !== undefined) values.watermark = watermark;
        else ignored.push(`${written} (not true or false)`);
        break;
      }
    }
  }
  return { values, ignored };
}
