import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JobRequest } from "../../../src/providers/adapter.js";
import { createAAdapter } from "../../../src/providers/a/index.js";
import { anyValue, expectNamesAField, expectRefusedNaming, promptText, RUNS, verdictOf, withField } from "../../helpers/properties.js";

const adapter = createAAdapter({ baseUrl: "https://a.example", apiKey: "key", enterprise: false });

/** The newest generation (2.0 by default) and an older series, by model identifier. */
const NEWEST = "vidgen-2-0-250601";
const OLDER = "vidgen-1-5-250301";

/** spec A create-task request and Limits, written here from the spec as the oracle. */
const SPEC = {
  ratios: ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16", "adaptive"],
  resolutions: ["480p", "720p", "1080p"],
  roles: { image: ["first_frame", "last_frame", "reference_image"], video: ["reference_video"], audio: ["reference_audio"] } as Record<string, string[]>,
  /** Content items: the newest generation at most 50 (30 images, 10 videos, 10 audio); older series at most 15. */
  limits: (model: string) => (model === NEWEST ? { media: 50, image: 30, video: 10, audio: 10, audioOnly: true } : { media: 15, image: 15, video: 15, audio: 15, audioOnly: false }),
};

/** Item type names: image_url is the spec's; video and audio are mediagate's defaults (the spec does not show them). */
const TYPE_KIND: Record<string, string> = { image_url: "image", video_url: "video", audio_url: "audio" };

const text = (prompt: string) => ({ type: "text", text: prompt });
const media = (kind: "image" | "video" | "audio", role: string, url = `https://media.example/${kind}`) => ({ type: `${kind}_url`, [`${kind}_url`]: { url }, role });

interface Item {
  type: string;
  role?: string;
  text?: string;
}

const FLAG = /(?<=^|\s)--(rs|rt|dur|seed|cf|wm)(?=\s|=|$)(?:=|\s+)?(\S*)/g;

/** Every way an accepted body may break spec A; empty when it keeps every rule. */
function specViolations(model: string, body: Record<string, unknown>): string[] {
  const violations: string[] = [];
  if (typeof body.model !== "string" || body.model.trim() === "" || /\s/.test(body.model)) violations.push("model is not an identifier");
  const items = (Array.isArray(body.content) ? body.content : []) as Item[];
  if (items.length === 0) violations.push("content is empty");
  const texts = items.filter((item) => item.type === "text");
  if (texts.length > 1) violations.push("more than one text item");
  for (const item of texts) if (typeof item.text !== "string" || item.text.trim() === "") violations.push("an empty text item");
  const counts: Record<string, number> = { image: 0, video: 0, audio: 0 };
  for (const item of items.filter((each) => each.type !== "text")) {
    const kind = TYPE_KIND[item.type];
    // spec A content item: role is required on media items, from the listed roles.
    if (!kind || !item.role || !SPEC.roles[kind]!.includes(item.role)) violations.push(`item ${item.type} with role ${String(item.role)}`);
    else counts[kind]!++;
  }
  const limits = SPEC.limits(model);
  if (counts.image! + counts.video! + counts.audio! > limits.media) violations.push("too many media items");
  for (const kind of ["image", "video", "audio"] as const) if (counts[kind]! > limits[kind]) violations.push(`too many ${kind} items`);
  if (counts.audio! > 0 && counts.image! + counts.video! === 0 && !limits.audioOnly) violations.push("audio-only content on an older series");
  if ("ratio" in body && !SPEC.ratios.includes(body.ratio as string)) violations.push(`ratio ${String(body.ratio)}`);
  if ("resolution" in body && !SPEC.resolutions.includes(body.resolution as string)) violations.push(`resolution ${String(body.resolution)}`);
  const editing = body.omni_reference_task_type === "video_editing";
  const roles = items.map((item) => item.role);
  // spec A task kinds: frames, editing and extension need ratio adaptive; editing needs duration -1; elsewhere 4 to 30 s.
  if ((roles.includes("first_frame") || roles.includes("last_frame") || editing || body.omni_reference_task_type === "video_extension") && body.ratio !== "adaptive") {
    violations.push("a frame, editing or extension task without ratio adaptive");
  }
  if (editing && body.duration !== -1) violations.push("video editing without duration -1");
  if (!editing && "duration" in body && !(Number.isInteger(body.duration) && (body.duration as number) >= 4 && (body.duration as number) <= 30)) violations.push(`duration ${String(body.duration)}`);
  for (const key of ["seed"]) if (key in body && !Number.isInteger(body[key])) violations.push(`${key} is not an integer`);
  for (const key of ["generate_audio", "watermark", "camera_fixed"]) if (key in body && typeof body[key] !== "boolean") violations.push(`${key} is not a boolean`);
  if ("callback_url" in body) violations.push("callback_url taken from input");
  // spec A prompt-suffix flags are weakly validated by A: each must carry a valid value and agree with its body field.
  for (const item of texts) {
    for (const [, name, value] of String(item.text).matchAll(FLAG)) {
      const field = { rs: "resolution", rt: "ratio", dur: "duration", seed: "seed", cf: "camera_fixed", wm: "watermark" }[name!]!;
      const valid =
        field === "resolution" ? SPEC.resolutions.includes(value!) : field === "ratio" ? SPEC.ratios.includes(value!) : field === "duration" || field === "seed" ? /^-?\d+$/.test(value!) : ["true", "false"].includes(value!);
      if (!valid) violations.push(`prompt flag --${name} ${value}`);
      else if (field in body && String(body[field]) !== value) violations.push(`prompt flag --${name} ${value} contradicts ${field} ${String(body[field])}`);
    }
  }
  return violations;
}

/** Body fields every kind may carry (ratio and duration are chosen per kind). */
const commonFields = fc.record(
  { resolution: fc.constantFrom(...SPEC.resolutions), seed: fc.integer({ min: 0, max: 2 ** 31 }), watermark: fc.boolean(), generate_audio: fc.boolean() },
  { requiredKeys: [] },
);

/** A request built from the spec's task kinds and limits. */
const validRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    model: fc.constantFrom(NEWEST, OLDER),
    prompt: promptText,
    kind: fc.constantFrom("text_to_video", "first_frame", "first_and_last_frame", "reference_to_video", "video_editing", "video_extension"),
    references: fc.record({ image: fc.nat({ max: 12 }), video: fc.nat({ max: 3 }), audio: fc.nat({ max: 3 }) }),
    ratio: fc.constantFrom(...SPEC.ratios),
    duration: fc.integer({ min: 4, max: 30 }),
    common: commonFields,
    resolutionFlag: fc.boolean(),
  })
  .map(({ model, prompt, kind, references, ratio, duration, common, resolutionFlag }) => {
    const input: Record<string, unknown> = { ...common };
    // A flag that repeats its body field is allowed ("--rs 720p" with resolution 720p).
    const promptWithFlag = resolutionFlag && common.resolution ? `${prompt} --rs ${common.resolution}` : prompt;
    const content: unknown[] = [text(promptWithFlag)];
    let operation: string | undefined;
    if (kind === "text_to_video") Object.assign(input, { ratio, duration });
    if (kind === "first_frame" || kind === "first_and_last_frame") {
      content.push(media("image", "first_frame"));
      if (kind === "first_and_last_frame") content.push(media("image", "last_frame"));
      Object.assign(input, { ratio: "adaptive", duration });
    }
    if (kind === "reference_to_video") {
      const limits = SPEC.limits(model);
      const images = Math.min(references.image, limits.image);
      const videos = Math.min(references.video, limits.video, limits.media - images);
      const audio = Math.min(references.audio, limits.audio, limits.media - images - videos);
      for (let index = 0; index < images; index++) content.push(media("image", "reference_image"));
      for (let index = 0; index < videos; index++) content.push(media("video", "reference_video"));
      for (let index = 0; index < audio; index++) content.push(media("audio", "reference_audio"));
      // At least one reference, and an older series needs an image or a video beside audio.
      if (images + videos === 0) content.push(media("image", "reference_image"));
      Object.assign(input, { ratio, duration });
    }
    if (kind === "video_editing" || kind === "video_extension") {
      content.push(media("video", "reference_video"));
      operation = kind;
      input.ratio = "adaptive";
      if (kind === "video_editing") input.duration = -1;
      else input.duration = duration;
    }
    input.content = content;
    return { provider: "a" as const, model, input, ...(operation ? { operation } : {}) };
  });

/** Content items, good and bad: unknown types, missing or wrong roles, URLs of other schemes, empty text. */
const anyItem = fc.oneof(
  promptText.map(text),
  fc.constantFrom(
    media("image", "first_frame"),
    media("image", "last_frame"),
    media("image", "reference_image"),
    media("video", "reference_video"),
    media("audio", "reference_audio"),
    media("image", "reference_video"),
    media("video", "first_frame"),
    { type: "image_url", image_url: { url: "https://media.example/a" } },
    media("image", "reference_image", "ftp://media.example/a"),
    media("image", "reference_image", "not a url"),
    { type: "video", video: { url: "https://media.example/v" }, role: "reference_video" },
    text(""),
    { type: "text", text: "x", role: "first_frame" },
  ),
);

/** A prompt with flags whose values may be valid or not. */
const flaggedPrompt = fc
  .tuple(promptText, fc.array(fc.tuple(fc.constantFrom("rs", "rt", "dur", "seed", "cf", "wm"), fc.constantFrom("720p", "999p", "16:9", "adaptive", "5", "40", "-1", "x", "true", "maybe", "")), { maxLength: 3 }))
  .map(([prompt, flags]) => [prompt, ...flags.map(([name, value]) => `--${name} ${value}`)].join(" ").trim());

const anyRequest: fc.Arbitrary<JobRequest> = fc
  .record({
    model: fc.oneof(fc.constantFrom(NEWEST, OLDER, "vidgen-3-0-250601", "no date"), fc.constant("")),
    prompt: fc.option(fc.oneof(flaggedPrompt, anyValue), { nil: undefined }),
    content: fc.option(fc.oneof(fc.array(anyItem, { maxLength: 6 }), anyValue), { nil: undefined }),
    manyImages: fc.option(fc.integer({ min: 14, max: 32 }), { nil: undefined, freq: 4 }),
    fields: fc.array(
      fc.tuple(
        fc.constantFrom("ratio", "resolution", "duration", "seed", "watermark", "generate_audio", "camera_fixed", "omni_reference_task_type", "callback_url", "width", "output_format"),
        fc.oneof(anyValue, fc.constantFrom("adaptive", "16:9", "720p", "4k", 5, 31, -1, 3, true, "video_editing", "video_extension", "first_frame", "mp4", "avi")),
      ),
      { maxLength: 5 },
    ),
    operation: fc.option(fc.constantFrom("video_editing", "video_extension", "first_frame", "reference_to_video", "upscale"), { nil: undefined, freq: 4 }),
    images: fc.option(fc.constantFrom<NonNullable<JobRequest["images"]>>(["https://media.example/i.png"], [{ fileName: "a.png", bytes: Buffer.from("png") }]), { nil: undefined, freq: 5 }),
  })
  .map(({ model, prompt, content, manyImages, fields, operation, images }) => {
    let input: Record<string, unknown> = {};
    input = withField(input, "prompt", prompt);
    let items = content;
    if (manyImages !== undefined) items = [...(Array.isArray(items) ? items : []), ...Array.from({ length: manyImages }, () => media("image", "reference_image"))];
    input = withField(input, "content", items);
    for (const [key, value] of fields) input = withField(input, key, value);
    return { provider: "a" as const, model, input, ...(operation ? { operation } : {}), ...(images ? { images } : {}) };
  });

/** Names a refusal may give beyond the input's keys: the prompt's flags (`prompt flag --rs`) and the content the prompt joins. */
function otherNames(request: JobRequest): string[] {
  const prompts = [request.input.prompt, ...(Array.isArray(request.input.content) ? request.input.content.map((item: { text?: unknown }) => item?.text) : [])];
  const flags = prompts.flatMap((prompt) => (typeof prompt === "string" ? [...prompt.matchAll(FLAG)].map((match) => `prompt flag:--${match[1]}`) : []));
  return ["content", "prompt", ...flags];
}

describe("A validator, property-based", () => {
  it("A property: a request built from the spec's task kinds and limits is accepted, its content sent as given", () => {
    fc.assert(
      fc.property(validRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "refused") throw new Error(`refused a valid request: ${verdict.error.message}`);
        expect(verdict.validated.body.content).toEqual(request.input.content);
        expect(specViolations(request.model, verdict.validated.body)).toEqual([]);
      }),
      RUNS,
    );
  });

  it("A property: no request that breaks a spec rule is accepted; every refusal is an InputError naming a field of the request", () => {
    fc.assert(
      fc.property(anyRequest, (request) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "accepted") expect(specViolations(request.model, verdict.validated.body)).toEqual([]);
        else expectNamesAField(verdict.error, request, otherNames(request));
      }),
      RUNS,
    );
  });

  it("A property: breaking one rule of a valid request is refused naming that field", () => {
    const breaking = fc.oneof(
      fc.record({ field: fc.constant("ratio"), value: fc.constantFrom("2:1", "", 16) }),
      fc.record({ field: fc.constant("resolution"), value: fc.constantFrom("4k", "720", 720) }),
      fc.record({ field: fc.constantFrom("watermark", "generate_audio"), value: fc.constantFrom("true", 1, null) }),
      fc.record({ field: fc.constantFrom("callback_url", "width", "height"), value: fc.constantFrom("https://hooks.example/a", 512) }),
    );
    fc.assert(
      fc.property(validRequest, breaking, (request, { field, value }) => {
        expectRefusedNaming(() => adapter.validate({ ...request, input: { ...request.input, [field]: value } }), field);
      }),
      RUNS,
    );
  });

  it("A property: more media items than the model's generation takes, or audio-only content on an older series, is refused naming content", () => {
    fc.assert(
      fc.property(promptText, fc.constantFrom(NEWEST, OLDER), fc.constantFrom("image", "video", "audio"), fc.integer({ min: 1, max: 5 }), (prompt, model, kind, over) => {
        const limits = SPEC.limits(model);
        const count = Math.min(limits[kind], limits.media) + over;
        const role = { image: "reference_image", video: "reference_video", audio: "reference_audio" }[kind];
        const items = Array.from({ length: count }, () => media(kind, role));
        // An image keeps audio from being audio-only, so only the count is wrong.
        const content = [text(prompt), ...items, ...(kind === "audio" ? [media("image", "reference_image")] : [])];
        expectRefusedNaming(() => adapter.validate({ provider: "a", model, input: { content } }), "content");
        expectRefusedNaming(() => adapter.validate({ provider: "a", model: OLDER, input: { content: [text(prompt), media("audio", "reference_audio")] } }), "content");
      }),
      RUNS,
    );
  });

  it("A property: a duration outside 4 to 30 s, or a ratio other than adaptive on a frame task, is refused naming the field", () => {
    fc.assert(
      fc.property(promptText, fc.oneof(fc.integer({ min: -50, max: 3 }).filter((value) => value !== -1), fc.integer({ min: 31, max: 500 })), fc.constantFrom(...SPEC.ratios.filter((ratio) => ratio !== "adaptive")), (prompt, duration, ratio) => {
        expectRefusedNaming(() => adapter.validate({ provider: "a", model: NEWEST, input: { prompt, duration } }), "duration");
        expectRefusedNaming(() => adapter.validate({ provider: "a", model: NEWEST, input: { content: [text(prompt), media("image", "first_frame")], ratio } }), "ratio");
        expectRefusedNaming(() => adapter.validate({ provider: "a", model: NEWEST, input: { prompt: `${prompt} --rt ${ratio}`, content: [media("image", "first_frame")] } }), "prompt flag --rt");
      }),
      RUNS,
    );
  });

  it("A property: a prompt flag contradicting its body field is refused naming the flag (A validates flags only weakly)", () => {
    const pairs = fc.oneof(
      fc.tuple(fc.constant("rs"), fc.constant("resolution"), fc.constantFrom(...SPEC.resolutions), fc.constantFrom(...SPEC.resolutions)),
      fc.tuple(fc.constant("dur"), fc.constant("duration"), fc.integer({ min: 4, max: 30 }), fc.integer({ min: 4, max: 30 })),
      fc.tuple(fc.constant("seed"), fc.constant("seed"), fc.nat(), fc.nat()),
      fc.tuple(fc.constant("wm"), fc.constant("watermark"), fc.boolean(), fc.boolean()),
    );
    fc.assert(
      fc.property(promptText, pairs, (prompt, [flag, field, flagValue, bodyValue]) => {
        fc.pre(flagValue !== bodyValue);
        const input = { prompt: `${prompt} --${flag} ${String(flagValue)}`, [field]: bodyValue };
        expectRefusedNaming(() => adapter.validate({ provider: "a", model: NEWEST, input }), `prompt flag --${flag}`);
      }),
      RUNS,
    );
  });
});
