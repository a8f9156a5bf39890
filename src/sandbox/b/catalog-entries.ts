import { usdToMicroUsd } from "../../core/money.js";
import { operationId, type BField, type BFieldValue, type BFunction, type BOperation, type BPricing, type BRate } from "./operation.js";

/**
 * The sandbox's catalog: 22 operations of five vendors (the real service
 * lists 155). Operations of "vendorx" carry the spec's published rates; the
 * others are the sandbox's own, priced by the sandbox.
 *
 * Some entries exist to catch clients that infer from names (spec B rule 6:
 * "Do not infer paths, fields, enum values, prices or model support from a
 * model name"):
 * - lumora/text-to-video-turbo offers image-to-video only;
 * - kestrel/clip-1080p does not offer 1080p (480p and 720p only);
 * - sonance/music-1 is a sound-effects model (text-to-audio), not music;
 * - sonance, a vendor name that sounds like audio, also sells a video operation;
 * - kestrel/motion/v3 and sonance/chorus/v2 have model identifiers with a
 *   literal slash, so their paths have more than three slash-separated parts;
 * - lumora/ray-1.6 is listed but unavailable.
 */

function rate(usd: number, when?: Record<string, BFieldValue>): BRate {
  return when ? { when, usd, microUsd: usdToMicroUsd(usd) } : { usd, microUsd: usdToMicroUsd(usd) };
}

const field = {
  image: (description = "Source image, an http(s) URL."): BField => ({ name: "image", type: "string", required: true, format: "uri", maxLength: 2048, description }),
  video: (description = "Source video, an http(s) URL."): BField => ({ name: "video", type: "string", required: true, format: "uri", maxLength: 2048, description }),
  prompt: (required: boolean, maxLength = 2000): BField => ({ name: "prompt", type: "string", required, minLength: 1, maxLength, description: "What to generate." }),
  negativePrompt: (): BField => ({ name: "negative_prompt", type: "string", required: false, maxLength: 1000, description: "What to avoid." }),
  resolution: (values: readonly string[]): BField => ({ name: "resolution", type: "string", required: true, enum: values, description: "Output resolution." }),
  durations: (values: readonly number[]): BField => ({ name: "duration_s", type: "integer", required: true, enum: values, description: "Output length in seconds." }),
  durationRange: (minimum: number, maximum: number, description: string): BField => ({ name: "duration_s", type: "integer", required: true, minimum, maximum, description }),
  aspectRatio: (): BField => ({ name: "aspect_ratio", type: "string", required: false, enum: ["16:9", "9:16", "1:1"], default: "16:9", description: "Output aspect ratio." }),
  seed: (): BField => ({ name: "seed", type: "integer", required: false, minimum: 0, maximum: 4_294_967_295, description: "Seed for reproducible output." }),
};

interface EntryInput {
  vendor: string;
  model: string;
  function: BFunction;
  title: string;
  outputMediaType?: BOperation["outputMediaType"];
  availability?: BOperation["availability"];
  pricing: BPricing;
  fields: BField[];
}

function entry(input: EntryInput): BOperation {
  const outputMediaType = input.outputMediaType ?? (input.function.endsWith("-to-audio") ? "audio" : "video");
  return {
    apiId: operationId(input.vendor, input.model, input.function),
    vendor: input.vendor,
    model: input.model,
    function: input.function,
    title: input.title,
    outputMediaType,
    availability: input.availability ?? "available",
    pricing: input.pricing,
    fields: input.fields,
  };
}

/**
 * spec B Pricing constants, "Video model 2.5": 720p 0.04/s, 1080p 0.06/s,
 * "1080p with 5 s duration" 0.09/s. When the 0.09 rate applies is not shown:
 * the sandbox applies it to 1080p clips of exactly 5 s (0.45 per clip) and
 * 0.06/s to longer 1080p clips.
 */
const VIDEO_25_PRICING: BPricing = {
  unit: "per_second",
  billedQuantity: "duration_s",
  source: "published",
  rates: [rate(0.09, { resolution: "1080p", duration_s: 5 }), rate(0.06, { resolution: "1080p" }), rate(0.04, { resolution: "720p" })],
};

/** spec B: keyframe 720p 0.04/s, 1080p 0.06/s (no 5 s rate is published for it). */
const KEYFRAME_25_PRICING: BPricing = {
  unit: "per_second",
  billedQuantity: "duration_s",
  source: "published",
  rates: [rate(0.06, { resolution: "1080p" }), rate(0.04, { resolution: "720p" })],
};

function perRequest(usd: number, source: BPricing["source"]): BPricing {
  return { unit: "per_request", source, rates: [rate(usd)] };
}

function perSecond(rates: BRate[], source: BPricing["source"]): BPricing {
  return { unit: "per_second", billedQuantity: "duration_s", source, rates };
}

function perMinute(usd: number, billedQuantity: BPricing["billedQuantity"], source: BPricing["source"]): BPricing {
  return { unit: "per_minute", billedQuantity, source, rates: [rate(usd)] };
}

const EFFECTS = ["inflate", "melt", "explode", "squish", "crush", "cake-ify"] as const;
const VOICES = ["ember", "slate", "willow", "juniper"] as const;

export const B_CATALOG: readonly BOperation[] = [
  entry({
    vendor: "vendorx",
    model: "video-2.5",
    function: "image-to-video",
    title: "Video 2.5, image to video",
    pricing: VIDEO_25_PRICING,
    fields: [field.image(), field.prompt(false), field.negativePrompt(), field.resolution(["720p", "1080p"]), field.durations([5, 10]), field.seed()],
  }),
  entry({
    vendor: "vendorx",
    model: "video-2.5",
    function: "text-to-video",
    title: "Video 2.5, text to video",
    pricing: VIDEO_25_PRICING,
    fields: [field.prompt(true), field.negativePrompt(), field.resolution(["720p", "1080p"]), field.durations([5, 10]), field.aspectRatio(), field.seed()],
  }),
  entry({
    vendor: "vendorx",
    model: "video-2.5",
    function: "keyframes-to-video",
    title: "Video 2.5, keyframes to video",
    pricing: KEYFRAME_25_PRICING,
    fields: [
      { name: "first_frame", type: "string", required: true, format: "uri", maxLength: 2048, description: "Image the clip starts on, an http(s) URL." },
      { name: "last_frame", type: "string", required: true, format: "uri", maxLength: 2048, description: "Image the clip ends on, an http(s) URL." },
      field.prompt(false),
      field.resolution(["720p", "1080p"]),
      field.durations([5, 10]),
      field.seed(),
    ],
  }),
  entry({
    vendor: "vendorx",
    model: "video-2.2",
    function: "image-to-video",
    title: "Video 2.2, image to video (720p only)",
    pricing: perSecond([rate(0.03, { resolution: "720p" })], "sandbox"),
    fields: [field.image(), field.prompt(false), field.resolution(["720p"]), field.durations([5]), field.seed()],
  }),
  entry({
    vendor: "vendorx",
    model: "effects",
    function: "image-to-video",
    title: "Effects, image to video",
    pricing: perRequest(0.05, "published"),
    fields: [
      field.image(),
      { name: "effect", type: "string", required: true, enum: EFFECTS, description: "The effect applied to the image." },
      field.prompt(false, 500),
      field.seed(),
    ],
  }),
  entry({
    vendor: "vendorx",
    model: "additions",
    function: "video-to-video",
    title: "Additions, video to video",
    pricing: perRequest(0.03, "published"),
    fields: [field.video(), field.image("Image of what is added to the video, an http(s) URL."), field.prompt(false, 500), field.seed()],
  }),
  entry({
    vendor: "vendorx",
    model: "swaps",
    function: "video-to-video",
    title: "Swaps, video to video",
    pricing: perRequest(0.03, "published"),
    fields: [
      field.video(),
      field.image("Image of the replacement, an http(s) URL."),
      { name: "modify_region", type: "string", required: true, minLength: 1, maxLength: 500, description: "Which part of the video is replaced, in words." },
      field.prompt(false, 500),
      field.seed(),
    ],
  }),
  entry({
    vendor: "vendorx",
    model: "soundtrack",
    function: "video-to-video",
    title: "Soundtrack, video to video",
    pricing: perSecond([rate(0.005)], "published"),
    fields: [
      field.video("Video to score, an http(s) URL."),
      field.durationRange(1, 60, "Length of the source video in seconds; billed per second."),
      field.prompt(false, 500),
    ],
  }),
  entry({
    vendor: "vendorx",
    model: "music",
    function: "reference-to-audio",
    title: "Music, reference to audio",
    pricing: perMinute(0.015, "duration_s", "published"),
    fields: [
      { name: "reference_audio", type: "string", required: true, format: "uri", maxLength: 2048, description: "Reference track, an http(s) URL." },
      field.prompt(false, 500),
      field.durationRange(10, 240, "Output length in seconds; billed per minute, prorated by the second."),
    ],
  }),
  entry({
    vendor: "vendorx",
    model: "sfx",
    function: "text-to-audio",
    title: "Sound effects, text to audio",
    pricing: perSecond([rate(0.0002)], "published"),
    fields: [field.prompt(true, 500), field.durationRange(1, 30, "Output length in seconds.")],
  }),
  entry({
    vendor: "vendorx",
    model: "speech",
    function: "text-to-audio",
    title: "Speech, text to audio",
    pricing: perMinute(0.01, "speech_seconds", "published"),
    fields: [
      { name: "text", type: "string", required: true, minLength: 1, maxLength: 5000, description: "Text to speak; billed per minute of speech (15 characters a second), prorated by the second." },
      { name: "voice", type: "string", required: true, enum: VOICES, description: "Voice." },
      { name: "speed", type: "number", required: false, minimum: 0.5, maximum: 2, default: 1, description: "Speaking rate." },
    ],
  }),
  entry({
    vendor: "lumora",
    model: "ray-2",
    function: "text-to-video",
    title: "Ray 2, text to video",
    pricing: perSecond([rate(0.03, { resolution: "540p" }), rate(0.05, { resolution: "720p" })], "sandbox"),
    fields: [field.prompt(true), field.resolution(["540p", "720p"]), field.durations([5, 9]), field.aspectRatio(), field.seed()],
  }),
  entry({
    vendor: "lumora",
    model: "ray-2",
    function: "image-to-video",
    title: "Ray 2, image to video",
    pricing: perSecond([rate(0.03, { resolution: "540p" }), rate(0.05, { resolution: "720p" })], "sandbox"),
    fields: [field.image(), field.prompt(false), field.resolution(["540p", "720p"]), field.durations([5, 9]), field.seed()],
  }),
  entry({
    vendor: "lumora",
    model: "text-to-video-turbo",
    function: "image-to-video",
    title: "Turbo, image to video (despite its name, no text-to-video)",
    pricing: perSecond([rate(0.02, { resolution: "720p" })], "sandbox"),
    fields: [field.image(), field.prompt(false, 500), field.resolution(["720p"]), field.durations([4, 6, 8])],
  }),
  entry({
    vendor: "lumora",
    model: "ray-1.6",
    function: "text-to-video",
    title: "Ray 1.6, text to video (retired)",
    availability: "unavailable",
    pricing: perSecond([rate(0.03, { resolution: "720p" })], "sandbox"),
    fields: [field.prompt(true), field.resolution(["720p"]), field.durations([5])],
  }),
  entry({
    vendor: "kestrel",
    model: "clip-1080p",
    function: "text-to-video",
    title: "Clip, text to video (480p and 720p only)",
    pricing: perSecond([rate(0.02, { resolution: "480p" }), rate(0.035, { resolution: "720p" })], "sandbox"),
    fields: [field.prompt(true), field.resolution(["480p", "720p"]), field.durations([5, 10]), field.aspectRatio()],
  }),
  entry({
    vendor: "kestrel",
    model: "clip-1080p",
    function: "keyframes-to-video",
    title: "Clip, keyframes to video (480p and 720p only)",
    pricing: perSecond([rate(0.02, { resolution: "480p" }), rate(0.035, { resolution: "720p" })], "sandbox"),
    fields: [
      { name: "first_frame", type: "string", required: true, format: "uri", maxLength: 2048, description: "Image the clip starts on, an http(s) URL." },
      { name: "last_frame", type: "string", required: false, format: "uri", maxLength: 2048, description: "Image the clip ends on, an http(s) URL." },
      field.prompt(true),
      field.resolution(["480p", "720p"]),
      field.durations([5, 10]),
    ],
  }),
  entry({
    vendor: "kestrel",
    model: "motion/v3",
    function: "video-to-video",
    title: "Motion v3, restyle a video",
    pricing: perRequest(0.08, "sandbox"),
    fields: [
      field.video(),
      field.prompt(true, 1000),
      { name: "strength", type: "number", required: false, minimum: 0, maximum: 1, default: 0.6, description: "How far the result departs from the source." },
    ],
  }),
  entry({
    vendor: "sonance",
    model: "music-1",
    function: "text-to-audio",
    title: "Music-1, sound effects from text (despite its name, no music)",
    pricing: perSecond([rate(0.0003)], "sandbox"),
    fields: [field.prompt(true, 500), field.durationRange(1, 20, "Output length in seconds.")],
  }),
  entry({
    vendor: "sonance",
    model: "tempo",
    function: "reference-to-audio",
    title: "Tempo, music from a reference track",
    pricing: perMinute(0.02, "duration_s", "sandbox"),
    fields: [
      { name: "reference_audio", type: "string", required: true, format: "uri", maxLength: 2048, description: "Reference track, an http(s) URL." },
      { name: "genre", type: "string", required: false, enum: ["ambient", "cinematic", "electronic", "folk", "jazz"], description: "Genre of the result." },
      field.durationRange(15, 180, "Output length in seconds; billed per minute, prorated by the second."),
    ],
  }),
  entry({
    vendor: "sonance",
    model: "chorus/v2",
    function: "text-to-audio",
    title: "Chorus v2, speech",
    pricing: perMinute(0.012, "speech_seconds", "sandbox"),
    fields: [
      { name: "text", type: "string", required: true, minLength: 1, maxLength: 3000, description: "Text to speak; billed per minute of speech (15 characters a second), prorated by the second." },
      { name: "voice", type: "string", required: true, enum: ["alto", "baritone", "soprano"], description: "Voice." },
    ],
  }),
  entry({
    vendor: "sonance",
    model: "stage",
    function: "image-to-video",
    title: "Stage, animate a portrait",
    pricing: perRequest(0.06, "sandbox"),
    fields: [field.image("Portrait to animate, an http(s) URL."), field.prompt(false, 500), field.durations([4])],
  }),
];

const BY_ID = new Map(B_CATALOG.map((operation) => [operation.apiId, operation]));

export function findOperation(apiId: string): BOperation | undefined {
  return BY_ID.get(apiId);
}
