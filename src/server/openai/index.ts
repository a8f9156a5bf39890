import { createHash } from "node:crypto";
import multipart from "@fastify/multipart";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ImageInput } from "../../core/common-request.js";
import type { Job, JobOutput } from "../../core/job.js";
import { InputError } from "../../core/errors.js";
import { sharesDoneOf } from "../../app/eta.js";
import { outputHref, remoteJob } from "../../app/job-view.js";
import { jobOutputs } from "../../app/queries.js";
import {
  deleteVideo,
  imageRequestOf,
  listVideos,
  makeImages,
  makeVideo,
  MAX_IMAGES,
  openAiModels,
  videoAskedOf,
  videoProgress,
  videoStatusOf,
  visibleVideo,
} from "../../app/openai.js";
import type { ApiDeps } from "../api/index.js";
import type { DescribedRoute } from "../api/openapi.js";
import { failureOf } from "../api/errors.js";
import { idempotencyOf } from "../api/requests.js";
import { sendOutputFile } from "../output-file.js";
import { callerOfRequest } from "../request-caller.js";
import { OpenAiError, openAiErrorOf } from "./errors.js";
import { imageOfFile, imageOfUrl, openAiBody, refuseUnknown, textField, wholeField, type FormFile } from "./requests.js";

/** One route answering OpenAI's shapes: registered from this, and described by it in `/openapi.json` (its refusals in OpenAI's error shape). */
export interface OpenAiRoute extends DescribedRoute {
  handler(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
}

/** Uploads the SDKs send: images for edits and a video's first frame (OpenAI takes up to 50 MB an image). */
const FORM_LIMITS = { fieldSize: 1024 * 1024, fileSize: 50 * 1024 * 1024, fields: 32, files: 16, parts: 48 };

/**
 * Image calls one tenant may hold open at once (each holds its connection
 * until its images are made, minutes): more is answered 429 with
 * `retry-after`, which the SDKs wait for and send again; nothing of a
 * refused call is queued.
 */
export const IMAGE_CALLS_HELD_PER_TENANT = 32;
const IMAGE_CALLS_RETRY_AFTER_S = 5;

/** The fields of `POST /v1/images/generations` that are honoured; the values of others that ask nothing of a target. */
const IMAGE_FIELDS = ["model", "prompt", "n", "size", "response_format", "output_format", "user"];
/** A value OpenAI documents as "the model chooses" (or, for `stream`, the default): asking it is asking nothing. */
const NEUTRAL_VALUES: Record<string, unknown> = { quality: "auto", background: "auto", moderation: "auto", size: "auto", stream: false };
const EDIT_FIELDS = [...IMAGE_FIELDS, "image", "image[]"];
const VIDEO_FIELDS = ["model", "prompt", "seconds", "size", "input_reference", "input_reference[image_url]"];
const OUTPUT_FORMATS = ["png", "jpeg", "webp"];

/** Fields without their neutral values ("auto", stream false). */
function withoutNeutral(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([name, value]) => NEUTRAL_VALUES[name] === undefined || (value !== NEUTRAL_VALUES[name] && String(value) !== String(NEUTRAL_VALUES[name]))));
}

/** The origin an answer's links are made absolute with: MEDIAGATE_PUBLIC_URL, else the address the request was sent to. */
function originOf(request: FastifyRequest, publicUrl: string | null): string {
  if (publicUrl !== null) return publicUrl.replace(/\/+$/, "");
  return `${request.protocol}://${request.headers.host ?? request.hostname}`;
}

/** What an image given in a call is, for the sha256 of the call an Idempotency-Key is kept with: its address, or its bytes' digest. */
function imageDigest(image: ImageInput): string {
  return typeof image === "string" ? image : createHash("sha256").update(image.bytes).digest("hex");
}

const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1_000));

/** OpenAI's video object of a job. */
function videoView(stored: Job, outputs: readonly JobOutput[], share: number | undefined) {
  // As a remote caller sees it: no path of the server's output folder in its error.
  const job = remoteJob(stored);
  const asked = videoAskedOf(job);
  const media = outputs[0]?.media;
  const status = videoStatusOf(job);
  return {
    id: job.id,
    object: "video" as const,
    status,
    progress: videoProgress(job, share ?? null),
    created_at: seconds(job.createdAt)!,
    completed_at: status === "completed" ? seconds(job.finishedAt) : null,
    // mediagate keeps a saved output until its operator removes it: it has no expiry to tell.
    expires_at: null,
    model: job.route?.current ?? `${job.provider}/${job.model}`,
    prompt: null,
    remixed_from_video_id: null,
    seconds: media?.duration_s !== undefined ? String(Math.round(media.duration_s)) : asked.seconds,
    size: media?.width !== undefined && media.height !== undefined ? `${media.width}x${media.height}` : asked.size,
    error: status === "failed" ? { code: job.error?.code ?? job.state, message: job.error?.message ?? job.reason ?? job.state } : null,
  };
}

function routes(deps: ApiDeps): OpenAiRoute[] {
  const { runtime } = deps;
  const publicUrl = runtime.config.publicUrl;

  // Image calls each tenant holds open now: past IMAGE_CALLS_HELD_PER_TENANT, a call is answered 429 before anything is queued.
  const held = new Map<string, number>();
  /** `n` images of one request, held until made; the client gone, the jobs stay. */
  const answerImages = async (request: FastifyRequest, route: string, fields: Record<string, unknown>, images: ImageInput[] | undefined) => {
    const tenant = request.caller!.tenant;
    const holding = held.get(tenant) ?? 0;
    if (holding >= IMAGE_CALLS_HELD_PER_TENANT) {
      throw new OpenAiError(
        429,
        "requests",
        "rate_limit_exceeded",
        `this token holds ${IMAGE_CALLS_HELD_PER_TENANT} image calls open already, the most it may; send this one again once one is answered (nothing was queued)`,
        null,
        true,
        { "retry-after": String(IMAGE_CALLS_RETRY_AFTER_S) },
      );
    }
    held.set(tenant, holding + 1);
    try {
      return await imagesHeld(request, route, fields, images);
    } finally {
      const left = (held.get(tenant) ?? 1) - 1;
      if (left > 0) held.set(tenant, left);
      else held.delete(tenant);
    }
  };
  const imagesHeld = async (request: FastifyRequest, route: string, fields: Record<string, unknown>, images: ImageInput[] | undefined) => {
    const n = wholeField(fields, "n", 1, MAX_IMAGES) ?? 1;
    const responseFormat = textField(fields, "response_format") ?? "b64_json";
    if (responseFormat !== "b64_json" && responseFormat !== "url") throw new InputError("response_format", `"${responseFormat.slice(0, 20)}" is not a format`, "b64_json, url");
    const outputFormat = textField(fields, "output_format");
    if (outputFormat !== undefined && !OUTPUT_FORMATS.includes(outputFormat)) throw new InputError("output_format", `"${outputFormat.slice(0, 20)}" is not a format`, OUTPUT_FORMATS.join(", "));
    textField(fields, "user");
    const size = textField(fields, "size");
    const common = imageRequestOf(runtime, {
      model: fields.model,
      prompt: fields.prompt,
      ...(size !== undefined && size !== "auto" ? { size } : {}),
      ...(images !== undefined ? { images } : {}),
      // Judged by each target's own validation, as provider_options are: refused there, the target is not eligible;
      // a field its spec does not show (D) is sent unchecked, with a warning on the job.
      ...(outputFormat !== undefined ? { native: { output_format: outputFormat } } : {}),
    });
    // The connection closing before the answer is the client gone: the wait ends, the jobs go on.
    const gone = new AbortController();
    const onClose = () => gone.abort();
    request.raw.socket?.once("close", onClose);
    try {
      const idempotency = idempotencyOf(request.headers["idempotency-key"], route, { fields, files: (images ?? []).map(imageDigest) });
      const made = await makeImages(runtime, request.caller!, common, n, { withBytes: responseFormat === "b64_json", signal: gone.signal, idempotency });
      const origin = originOf(request, publicUrl);
      return {
        created: seconds(made.createdAt),
        data: made.images.map((image) =>
          responseFormat === "b64_json" ? { b64_json: image.bytes!.toString("base64") } : { url: outputHref(image.job, image.output, origin) },
        ),
      };
    } finally {
      request.raw.socket?.off("close", onClose);
    }
  };

  return [
    {
      method: "GET",
      path: "/v1/models",
      summary: "OpenAI's model list: each target of a configured provider that publishes its models (d/gen-2-pro, c/v6, e/v3, …) and the route models route:price and route:time (every listed target of the task, cheapest or earliest first); targets of providers without a published list (f/img-v2, a/…, b/<vendor>/<model>/<function>) are taken by name",
      responses: { 200: '{object: "list", data: [{id, object: "model", created, owned_by}]}' },
      handler: async () => ({
        object: "list",
        data: openAiModels(runtime).map((model) => ({ id: model.id, object: "model", created: 0, owned_by: model.ownedBy, task: model.task })),
      }),
    },
    {
      method: "POST",
      path: "/v1/images/generations",
      summary:
        "OpenAI's image generation: model (a target or route:price / route:time), prompt, n (n jobs admitted together, all or none, under the token's budget), size, response_format (b64_json, the default, or url: the output's address on this API), output_format (a native field of the target's provider), user; held until the jobs end (at most 9.5 minutes, under the SDKs' 10-minute timeout)",
      writes: true,
      body: "json",
      responses: {
        200: "{created, data: [{b64_json} | {url}]}",
        400: "invalid_request_error: a field refused by name (param), or no target can take the request",
        402: "insufficient_quota: the n estimates are more than the token's budget has left; nothing was queued",
        404: "model_not_found",
        429: "rate_limit_exceeded: the token holds 32 image calls open already; retry-after says when to send it again; nothing was queued",
        500: "generation_failed: a job did not succeed (its id is named); not to be retried",
        503: "blocked: a job cannot go on now (a halted provider); the jobs stay queued",
        504: "timeout: not made within 9.5 minutes; the jobs go on",
      },
      handler: async (request) => {
        const { fields } = await openAiBody(request);
        refuseUnknown(withoutNeutral(fields), IMAGE_FIELDS, IMAGE_FIELDS.join(", "));
        return answerImages(request, "POST /v1/images/generations", fields, undefined);
      },
    },
    {
      method: "POST",
      path: "/v1/images/edits",
      summary:
        "OpenAI's image edit (a multipart form): image or image[] (the images the target edits from, as its reference images), prompt, and the fields of images/generations; mask is refused (no target honours one)",
      writes: true,
      body: "form",
      responses: {
        200: "{created, data: [{b64_json} | {url}]}",
        400: "invalid_request_error: a field refused by name (param), or no target can take the request",
        402: "insufficient_quota",
        404: "model_not_found",
        429: "rate_limit_exceeded: the token holds 32 image calls open already (generations and edits together); nothing was queued",
        500: "generation_failed",
        503: "blocked",
        504: "timeout: not made within 9.5 minutes; the jobs go on",
      },
      handler: async (request) => {
        const { fields, files } = await openAiBody(request);
        for (const name of files.keys()) if (!EDIT_FIELDS.includes(name)) throw new InputError(name, "is not honoured by mediagate on this route", "image, image[]");
        refuseUnknown(withoutNeutral(fields), IMAGE_FIELDS, EDIT_FIELDS.join(", "));
        const uploads: Array<[string, FormFile]> = [...(files.get("image") ?? []).map((file) => ["image", file] as [string, FormFile]), ...(files.get("image[]") ?? []).map((file, index) => [`image[${index}]`, file] as [string, FormFile])];
        if (uploads.length === 0) throw new InputError("image", "is required: the image to edit, as a file of the form");
        return answerImages(request, "POST /v1/images/edits", fields, uploads.map(([field, file]) => imageOfFile(file, field)));
      },
    },
    {
      method: "POST",
      path: "/v1/videos",
      summary: "OpenAI's video creation (a multipart form or JSON): model (a target or route:price / route:time), prompt, seconds (its duration_s), size, input_reference (its first frame: a file, or image_url); one job under the token's budget; answered at once, queued",
      writes: true,
      body: "json or form",
      responses: { 200: "the video object", 400: "invalid_request_error", 402: "insufficient_quota", 404: "model_not_found" },
      handler: async (request) => {
        const { fields, files } = await openAiBody(request);
        for (const name of files.keys()) if (name !== "input_reference") throw new InputError(name, "is not honoured by mediagate on this route", "input_reference");
        refuseUnknown(fields, VIDEO_FIELDS, VIDEO_FIELDS.join(", "));
        const uploaded = files.get("input_reference") ?? [];
        if (uploaded.length > 1) throw new InputError("input_reference", "is given more than once");
        const reference = fields.input_reference;
        const byUrl = typeof reference === "object" && reference !== null ? (reference as { image_url?: unknown }).image_url : fields["input_reference[image_url]"];
        if (typeof reference === "string") throw new InputError("input_reference", "must be a file of the form, or {image_url}");
        const firstFrame = uploaded[0] ? imageOfFile(uploaded[0], "input_reference") : byUrl !== undefined ? imageOfUrl(byUrl, "input_reference.image_url") : undefined;
        const secondsAsked = fields.seconds === undefined || fields.seconds === null ? undefined : String(fields.seconds);
        const size = textField(fields, "size");
        const asked = {
          model: fields.model,
          prompt: fields.prompt,
          ...(secondsAsked !== undefined ? { seconds: secondsAsked } : {}),
          ...(size !== undefined ? { size } : {}),
          ...(firstFrame !== undefined ? { firstFrame } : {}),
        };
        const idempotency = idempotencyOf(request.headers["idempotency-key"], "POST /v1/videos", { fields, files: firstFrame === undefined ? [] : [imageDigest(firstFrame)] });
        const job = await makeVideo(runtime, request.caller!, asked, idempotency);
        return videoView(job, [], undefined);
      },
    },
    {
      method: "GET",
      path: "/v1/videos",
      summary: "The caller's videos newest first (limit, after: the last id of the previous page), as OpenAI's cursor list",
      query: { limit: "videos per page, 1 to 100 (default 20)", after: "the id of the last video of the previous page", order: "desc only (newest first)" },
      responses: { 200: '{object: "list", data, first_id, last_id, has_more}' },
      handler: async (request) => {
        const params = (request.query ?? {}) as Record<string, unknown>;
        const limit = wholeField(params, "limit", 1, 100) ?? 20;
        const order = textField(params, "order");
        if (order !== undefined && order !== "desc") throw new InputError("order", "only desc (newest first) is served", "desc");
        const after = textField(params, "after");
        const page = await listVideos(runtime, request.caller!, after, limit);
        const store = await runtime.store();
        const [outputs, shares] = await Promise.all([store.outputsOfJobs(page.jobs.map((job) => job.id)), sharesDoneOf(runtime, page.jobs)]);
        const data = page.jobs.map((job) => videoView(job, outputs.get(job.id) ?? [], shares.get(job.id)));
        return { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore };
      },
    },
    {
      method: "GET",
      path: "/v1/videos/{id}",
      summary: "A video: status (queued, in_progress, completed, failed) and progress (0 to 100, from its model's learned times, of which its expected finish is made)",
      responses: { 200: "the video object", 404: "not_found" },
      handler: async (request) => {
        const job = await visibleVideo(runtime, request.caller!, (request.params as { id: string }).id);
        const [outputs, shares] = await Promise.all([jobOutputs(runtime, job), sharesDoneOf(runtime, [job])]);
        return videoView(job, outputs, shares.get(job.id));
      },
    },
    {
      method: "DELETE",
      path: "/v1/videos/{id}",
      summary: "Cancels an unfinished video as POST /v1/jobs/{id}/cancel does (deleted: true); an ended one is kept, its spend and outputs being records (deleted: false)",
      writes: true,
      responses: { 200: '{id, object: "video.deleted", deleted}', 404: "not_found", 409: "not_cancellable: running at a provider with no cancel operation" },
      handler: async (request) => {
        const { job, outcome } = await deleteVideo(runtime, request.caller!, (request.params as { id: string }).id);
        if (outcome.kind === "refused" && outcome.code !== "ended") throw new OpenAiError(409, "invalid_request_error", "not_cancellable", outcome.message, null, false);
        return { id: job.id, object: "video.deleted", deleted: outcome.kind === "cancelled" };
      },
    },
    {
      method: "GET",
      path: "/v1/videos/{id}/content",
      summary: "The saved MP4 of a completed video, with its content type, ETag (its sha256) and byte ranges; variant video only",
      query: { variant: "video (the default); thumbnail and spritesheet are not made" },
      responses: { 200: "the video", 206: "a byte range of it", 400: "variant not served", 404: "not_found, or not completed yet", 416: "range_not_satisfiable" },
      handler: async (request, reply) => {
        const variant = textField((request.query ?? {}) as Record<string, unknown>, "variant");
        if (variant !== undefined && variant !== "video") throw new InputError("variant", `"${variant.slice(0, 20)}" is not made by mediagate`, "video");
        const job = await visibleVideo(runtime, request.caller!, (request.params as { id: string }).id);
        const output = (await jobOutputs(runtime, job))[0];
        if (job.state !== "succeeded" || !output) throw new OpenAiError(404, "invalid_request_error", "video_not_ready", `video ${job.id} is ${videoStatusOf(job)}: its content exists once it is completed`, "id");
        return sendOutputFile(request, reply, output, `the content of video ${job.id}`);
      },
    },
  ];
}

/** Fastify's path form of an OpenAPI path: `/v1/videos/{id}` → `/v1/videos/:id`. */
function fastifyPath(path: string): string {
  return path.replace(/\{([a-z_]+)\}/g, ":$1");
}

/**
 * Registers the routes that answer OpenAI's images, videos and models
 * shapes (issue 38) beside mediagate's own `/v1` routes: the same callers
 * (a bearer token, a tenant), the same application; errors in OpenAI's
 * shape. Returns the table, for the OpenAPI document.
 */
export function registerOpenAi(app: FastifyInstance, deps: ApiDeps): OpenAiRoute[] {
  const table = routes(deps).map((route) => ({ ...route, errors: "OpenAiError" as const }));
  app.register(async (scope) => {
    await scope.register(multipart, { limits: FORM_LIMITS, throwFileSizeLimit: true });
    scope.addHook("onRequest", async (request) => {
      request.caller = await callerOfRequest(deps.runtime, request);
    });
    for (const route of table) {
      scope.route({
        method: route.method,
        url: fastifyPath(route.path),
        handler: async (request: FastifyRequest, reply: FastifyReply) => {
          if (route.writes && request.caller!.readOnly) throw new OpenAiError(403, "permission_error", "read_only_token", `token ${request.caller!.name} is read-only: it cannot ${route.method} ${route.path}`);
          return route.handler(request, reply);
        },
      });
    }
    scope.setErrorHandler((error, request, reply) => {
      const known = openAiErrorOf(error);
      const status = (error as { statusCode?: number }).statusCode;
      const answer =
        known ??
        (status !== undefined && status >= 400 && status < 500
          ? // Fastify or the form parser refused the request before the handler ran (a limit, an unreadable body).
            new OpenAiError(status === 413 ? 413 : 400, "invalid_request_error", status === 413 ? "payload_too_large" : "bad_request", `the request could not be read: ${(error as Error).message}`)
          : null);
      if (answer) {
        if (answer.retry !== null) reply.header("x-should-retry", String(answer.retry));
        for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
        return reply.code(answer.status).send(answer.body());
      }
      deps.log.error({ method: request.method, path: request.url.split("?")[0], caller: request.caller?.name ?? null, ...failureOf(error) }, "OpenAI-shaped request failed");
      // A POST that failed here may have admitted jobs: the SDKs, which retry a 500, would make and pay for them again.
      if (request.method === "POST") reply.header("x-should-retry", "false");
      return reply.code(500).send(new OpenAiError(500, "server_error", "internal_error", "the request could not be handled; it was logged").body());
    });
  });
  return table;
}
