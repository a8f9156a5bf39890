/**
 * spec A: the model identifier "encodes the model generation and a snapshot
 * date", and limits differ per generation; the format is not shown. The rule
 * mediagate reads it by, chosen to be defensive:
 *
 * - the identifier is split on "-"; its last token is the snapshot date,
 *   `yymmdd` or `yyyymmdd` (a real calendar date);
 * - the generation is the one run of purely numeric tokens (1–2 digits each,
 *   the first optionally prefixed with "v") before the date: `2-0` is 2.0,
 *   `1-5` is 1.5, a lone `2` is 2.0 (so `vidgen-2-0-250601` and
 *   `maker-1-0-pro-250528` both read);
 * - no date, no run, several runs or a run of three numbers: unreadable.
 *
 * The newest generation is configuration (default 2.0), not a guess: a model
 * of exactly that generation gets the newest limits; an older one the older
 * series' limits; an unreadable identifier, or a generation newer than the
 * configured newest, the conservative older-series limits with a warning.
 */
export const DEFAULT_NEWEST_GENERATION = "2.0";

export interface AGeneration {
  major: number;
  minor: number;
}

export interface AModelIdentity {
  generation: AGeneration;
  /** ISO date, "2025-06-01". */
  snapshotDate: string;
}

/** Which limits apply: "conservative" is the older series' limits for an identifier mediagate cannot place. */
export type ALimitsClass = "newest" | "older" | "conservative";

export interface AModelInfo {
  id: string;
  identity: AModelIdentity | null;
  limitsClass: ALimitsClass;
  /** Why the conservative limits apply, when they do. */
  warning: string | null;
}

const NUMBER_TOKEN = /^\d{1,2}$/;
const FIRST_NUMBER_TOKEN = /^v?(\d{1,2})$/i;

function calendarDate(year: number, month: number, day: number): string | null {
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return date.toISOString().slice(0, 10);
}

function parseSnapshotDate(token: string): string | null {
  if (/^\d{6}$/.test(token)) return calendarDate(2000 + Number(token.slice(0, 2)), Number(token.slice(2, 4)), Number(token.slice(4, 6)));
  if (/^20\d{6}$/.test(token)) return calendarDate(Number(token.slice(0, 4)), Number(token.slice(4, 6)), Number(token.slice(6, 8)));
  return null;
}

/** Reads generation and snapshot date from a model identifier; null when it does not follow the rule above. */
export function parseModelIdentity(id: string): AModelIdentity | null {
  const tokens = id.split("-");
  if (tokens.length < 2) return null;
  const snapshotDate = parseSnapshotDate(tokens[tokens.length - 1]!);
  if (!snapshotDate) return null;
  const runs: string[][] = [];
  let run: string[] = [];
  for (const token of tokens.slice(0, -1)) {
    if (run.length > 0 && NUMBER_TOKEN.test(token)) {
      run.push(token);
      continue;
    }
    if (run.length > 0) runs.push(run);
    run = [];
    const start = FIRST_NUMBER_TOKEN.exec(token)?.[1];
    if (start !== undefined) run.push(start);
  }
  if (run.length > 0) runs.push(run);
  if (runs.length !== 1 || runs[0]!.length > 2) return null;
  const [major, minor = "0"] = runs[0]!;
  return { generation: { major: Number(major), minor: Number(minor) }, snapshotDate };
}

export function parseGeneration(text: string): AGeneration | null {
  const match = /^(\d{1,2})(?:\.(\d{1,2}))?$/.exec(text);
  return match ? { major: Number(match[1]), minor: Number(match[2] ?? "0") } : null;
}

export function formatGeneration(generation: AGeneration): string {
  return `${generation.major}.${generation.minor}`;
}

function compareGenerations(left: AGeneration, right: AGeneration): number {
  return left.major - right.major || left.minor - right.minor;
}

/** The limits class of a model, given the configured newest generation. */
export function describeModel(id: string, newestGeneration: AGeneration): AModelInfo {
  const identity = parseModelIdentity(id);
  const newest = formatGeneration(newestGeneration);
  if (!identity) {
    return {
      id,
      identity: null,
      limitsClass: "conservative",
      warning: `model "${id}": mediagate cannot read a generation and snapshot date from it, so the older series' limits apply (at most 15 items, no audio-only content)`,
    };
  }
  const order = compareGenerations(identity.generation, newestGeneration);
  if (order === 0) return { id, identity, limitsClass: "newest", warning: null };
  if (order < 0) return { id, identity, limitsClass: "older", warning: null };
  return {
    id,
    identity,
    limitsClass: "conservative",
    warning: `model "${id}" is generation ${formatGeneration(identity.generation)}, newer than the newest mediagate is configured for (${newest}); the older series' limits apply until newestGeneration is raised`,
  };
}
