import { InputError } from "../../core/errors.js";

/**
 * spec A prompt-suffix flags: parameters may be appended to the prompt as
 * flags ("weak validation"); top-level body fields are the regular way. The
 * flag syntax beyond the names is not shown; mediagate reads `--rs 720p` and
 * `--rs=720p` where the flag starts the prompt or follows whitespace.
 */
export const A_RESOLUTIONS = ["480p", "720p", "1080p"] as const;
export const A_RATIOS = ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16", "adaptive"] as const;

export type AFlagField = "resolution" | "ratio" | "duration" | "seed" | "camera_fixed" | "watermark";
export type AFlagValue = string | number | boolean;

export interface APromptFlag {
  /** "--rs" */
  flag: string;
  field: AFlagField;
  value: AFlagValue;
}

const FLAG_FIELDS: Record<string, AFlagField> = {
  rs: "resolution",
  rt: "ratio",
  dur: "duration",
  seed: "seed",
  cf: "camera_fixed",
  wm: "watermark",
};

const FLAG = /(?<=^|\s)--(rs|rt|dur|seed|cf|wm)(?=\s|=|$)(?:=|\s+)?(\S*)/g;

function readValue(field: AFlagField, raw: string): AFlagValue | undefined {
  switch (field) {
    case "resolution":
      return (A_RESOLUTIONS as readonly string[]).includes(raw) ? raw : undefined;
    case "ratio":
      return (A_RATIOS as readonly string[]).includes(raw) ? raw : undefined;
    case "duration":
    case "seed":
      return /^-?\d+$/.test(raw) ? Number(raw) : undefined;
    case "camera_fixed":
    case "watermark":
      return raw === "true" ? true : raw === "false" ? false : undefined;
  }
}

const ALLOWED: Record<AFlagField, string> = {
  resolution: A_RESOLUTIONS.join(", "),
  ratio: A_RATIOS.join(", "),
  duration: "an integer number of seconds",
  seed: "an integer",
  camera_fixed: "true, false",
  watermark: "true, false",
};

/**
 * The flags in a prompt, each with a well-formed value. A malformed value or
 * a flag given twice with different values is an error: the provider's weak
 * validation would silently produce something else than asked.
 */
export function parsePromptFlags(prompt: string): APromptFlag[] {
  const found = new Map<string, APromptFlag>();
  for (const match of prompt.matchAll(FLAG)) {
    const name = match[1]!;
    const raw = match[2] ?? "";
    const flag = `--${name}`;
    const field = FLAG_FIELDS[name]!;
    const value = readValue(field, raw);
    if (value === undefined) {
      throw new InputError(`prompt flag ${flag}`, raw === "" || raw.startsWith("--") ? "has no value" : `${JSON.stringify(raw)} is not a valid ${field}`, ALLOWED[field]);
    }
    const earlier = found.get(flag);
    if (earlier && earlier.value !== value) {
      throw new InputError(`prompt flag ${flag}`, `is given twice with different values (${String(earlier.value)}, ${String(value)})`);
    }
    found.set(flag, { flag, field, value });
  }
  return [...found.values()];
}
