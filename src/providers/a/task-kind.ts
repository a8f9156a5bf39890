import { InputError } from "../../core/errors.js";
import type { AContentItem, AMediaItem } from "./content.js";

/** spec A "Task kinds and the extra rules they impose". */
export const A_TASK_KINDS = ["text_to_video", "first_frame", "reference_to_video", "video_editing", "video_extension"] as const;
export type ATaskKind = (typeof A_TASK_KINDS)[number];

export function isATaskKind(value: unknown): value is ATaskKind {
  return typeof value === "string" && (A_TASK_KINDS as readonly string[]).includes(value);
}

/** The extra rule each kind imposes on the body fields. */
export interface ATaskKindRule {
  /** spec A: first frame, first-and-last frame, editing and extension need ratio adaptive. */
  ratioAdaptive: boolean;
  /** spec A: video editing needs duration -1 (and only editing takes it). */
  durationMinusOne: boolean;
}

export const A_TASK_KIND_RULES: Record<ATaskKind, ATaskKindRule> = {
  text_to_video: { ratioAdaptive: false, durationMinusOne: false },
  first_frame: { ratioAdaptive: true, durationMinusOne: false },
  reference_to_video: { ratioAdaptive: false, durationMinusOne: false },
  video_editing: { ratioAdaptive: true, durationMinusOne: true },
  video_extension: { ratioAdaptive: true, durationMinusOne: false },
};

/** A kind the user declared (by `operation` or `omni_reference_task_type`), and the field that declared it. */
export interface DeclaredKind {
  kind: ATaskKind;
  field: string;
}

const isFrame = (item: AMediaItem) => item.role === "first_frame" || item.role === "last_frame";
const isReference = (item: AMediaItem) => item.role.startsWith("reference_");

/**
 * Derives the task kind from the content items. Editing and extension look
 * like reference-to-video ("one reference_video plus … intent"), so only a
 * declaration can select them; a declaration the content contradicts is an
 * error now rather than after generation (spec A omni_reference_task_type).
 */
export function deriveTaskKind(items: readonly AContentItem[], declared: DeclaredKind | null): ATaskKind {
  const media = items.filter((item): item is AMediaItem => item.kind !== "text");
  const frames = media.filter(isFrame);
  const references = media.filter(isReference);

  if (declared?.kind === "video_editing" || declared?.kind === "video_extension") {
    // spec A: editing and extension take one reference_video plus the intent.
    const videos = media.filter((item) => item.role === "reference_video").length;
    if (videos !== 1) {
      throw new InputError("content", `a ${declared.kind} task needs exactly one reference_video item, found ${videos}`);
    }
    if (frames.length > 0) throw new InputError("content", `a ${declared.kind} task takes no first_frame or last_frame item`);
    return declared.kind;
  }

  let derived: ATaskKind;
  if (frames.length > 0) {
    if (references.length > 0) {
      throw new InputError("content", "first_frame/last_frame items cannot be mixed with reference items: the task kind would be ambiguous");
    }
    const firsts = frames.filter((item) => item.role === "first_frame").length;
    const lasts = frames.length - firsts;
    if (firsts !== 1 || lasts > 1) {
      throw new InputError("content", "a first-frame task takes one first_frame item and at most one last_frame item", "first frame, or first and last frame");
    }
    derived = "first_frame";
  } else if (references.length > 0) {
    derived = "reference_to_video";
  } else {
    if (!items.some((item) => item.kind === "text")) throw new InputError("content", "has no text item and no media item");
    derived = "text_to_video";
  }
  if (declared && declared.kind !== derived) {
    throw new InputError(declared.field, `declares ${declared.kind} but the content items make a ${derived} task`, A_TASK_KINDS.join(", "));
  }
  return derived;
}
