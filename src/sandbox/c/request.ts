import { isVideoRatio, type VideoRatio } from "../media/video.js";
import { C_ERR, CApiError } from "./envelope.js";
import type { CAcceptedValues } from "./options.js";

/** A submit body that passed validation, with defaults applied. */
export interface CSubmitRequest {
  prompt: string;
  model: string;
  aspectRatio: string;
  duration: number;
  quality: string;
  motionMode: string;
  seed: number;
}

/**
 * Which fields are required is not shown; the sandbox requires only
 * `prompt` (a text-to-video call without one means nothing) and defaults the
 * rest to the values the spec shows: v6, 16:9, 5, 720p, normal, 0.
 */
const DEFAULTS = { model: "v6", aspectRatio: "16:9", duration: 5, quality: "720p", motionMode: "normal", seed: 0 };
const MAX_SEED = 2_147_483_647;

function invalid(field: string, message: string): CApiError {
  return new CApiError(C_ERR.invalidParameter, `${field}: ${message}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function oneOf<T extends string | number>(body: Record<string, unknown>, field: string, allowed: readonly T[], fallback: T): T {
  const value = body[field];
  if (value === undefined) return fallback;
  if (!(allowed as readonly unknown[]).includes(value)) throw invalid(field, `must be one of ${allowed.join(", ")}`);
  return value as T;
}

export function parseSubmitRequest(body: unknown, accepted: CAcceptedValues): CSubmitRequest {
  if (!isRecord(body)) throw invalid("body", "must be a JSON object");
  const prompt = body.prompt;
  if (typeof prompt !== "string" || prompt.trim().length === 0) throw invalid("prompt", "is required");
  const seed = body.seed ?? DEFAULTS.seed;
  if (typeof seed !== "number" || !Number.isInteger(seed) || seed < 0 || seed > MAX_SEED) {
    throw invalid("seed", `must be an integer 0 to ${MAX_SEED}`);
  }
  return {
    prompt,
    model: oneOf(body, "model", accepted.models, DEFAULTS.model),
    aspectRatio: oneOf(body, "aspect_ratio", accepted.aspectRatios, DEFAULTS.aspectRatio),
    duration: oneOf(body, "duration", accepted.durations, DEFAULTS.duration),
    quality: oneOf(body, "quality", accepted.qualities, DEFAULTS.quality),
    motionMode: oneOf(body, "motion_mode", accepted.motionModes, DEFAULTS.motionMode),
    seed,
  };
}

/** The fixture ratio served for an aspect ratio (one the sandbox has no fixture for falls back to 16:9). */
export function servedRatio(aspectRatio: string): VideoRatio {
  return isVideoRatio(aspectRatio) ? aspectRatio : "16:9";
}
