/**
 * Model identifiers of the emulated service A. The spec says only that the
 * identifier "encodes the model generation and a snapshot date"; the sandbox
 * uses `vidgen-<major>-<minor>-<yymmdd>` (generation major.minor, snapshot
 * date), e.g. `vidgen-2-0-250601`.
 */
export interface AModel {
  id: string;
  /** "2.0" for `vidgen-2-0-250601`. */
  generation: string;
  /** ISO date of the snapshot, "2025-06-01". */
  snapshotDate: string;
  /** spec A Limits: the newest generation has its own item limits, audio-only content and a download cap. */
  newestGeneration: boolean;
}

export const DEFAULT_A_MODELS: readonly string[] = ["vidgen-2-0-250601", "vidgen-1-5-250301", "vidgen-1-0-241115"];

const MODEL_ID = /^vidgen-(\d+)-(\d+)-(\d{2})(\d{2})(\d{2})$/;

interface ParsedId {
  major: number;
  minor: number;
  snapshotDate: string;
}

function parseModelId(id: string): ParsedId | null {
  const match = MODEL_ID.exec(id);
  if (!match) return null;
  const [, major, minor, year, month, day] = match;
  return { major: Number(major), minor: Number(minor), snapshotDate: `20${year}-${month}-${day}` };
}

/**
 * The configured model set. "Newest generation" is the highest major.minor
 * among the configured ids, so a test can make `vidgen-1-5-…` the newest by
 * configuring no 2.x model.
 */
export function modelCatalogue(ids: readonly string[]): Map<string, AModel> {
  const parsed = ids.map((id) => {
    const info = parseModelId(id);
    if (!info) throw new RangeError(`A model id "${id}" does not follow vidgen-<major>-<minor>-<yymmdd>`);
    return { id, ...info };
  });
  const newest = parsed.reduce((best, model) => Math.max(best, model.major * 1000 + model.minor), -1);
  return new Map(
    parsed.map((model) => [
      model.id,
      {
        id: model.id,
        generation: `${model.major}.${model.minor}`,
        snapshotDate: model.snapshotDate,
        newestGeneration: model.major * 1000 + model.minor === newest,
      },
    ]),
  );
}
