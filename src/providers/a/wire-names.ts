import type { ATaskKind } from "./task-kind.js";

/**
 * The wire names spec A leaves "not shown", in one place. Each default is
 * overridable through `createAAdapter({ wireNames })` so that a provider
 * whose real names differ needs a configuration change, not a code change.
 */
export interface AWireNames {
  /**
   * Content item type of a video and of an audio item ("The type names for
   * video items and audio items: not shown"). The defaults follow the shape
   * the spec shows for images: `{ "type": "video_url", "video_url": { "url" }, "role" }`.
   */
  videoItemType: string;
  audioItemType: string;
  /** The field that selects the container, mp4 or mov ("not shown"); the task object reports it as `output_format`. */
  containerField: string;
  /**
   * The value of `omni_reference_task_type` for each task kind (its allowed
   * values are "not shown"). Sent only when the user declares a kind, and
   * always for editing and extension, whose intent only a declaration can carry.
   */
  taskKindValues: Record<ATaskKind, string>;
}

export const DEFAULT_A_WIRE_NAMES: AWireNames = {
  videoItemType: "video_url",
  audioItemType: "audio_url",
  containerField: "output_format",
  taskKindValues: {
    text_to_video: "text_to_video",
    first_frame: "first_frame",
    reference_to_video: "reference_to_video",
    video_editing: "video_editing",
    video_extension: "video_extension",
  },
};

export function resolveWireNames(overrides: Partial<AWireNames> = {}): AWireNames {
  return {
    ...DEFAULT_A_WIRE_NAMES,
    ...overrides,
    taskKindValues: { ...DEFAULT_A_WIRE_NAMES.taskKindValues, ...overrides.taskKindValues },
  };
}
