import type { Mediagate } from "../app/mediagate.js";

/** What a model of the provider needs from it. */
export interface ModelSettings {
  /** The instance calls go through (opened on the first call when the provider owns it). */
  gate(): Promise<Mediagate>;
  /** Where outputs are saved; undefined: the instance's MEDIAGATE_OUTPUT_DIR. */
  outDir: string | undefined;
}
