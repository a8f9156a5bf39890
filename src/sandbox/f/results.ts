import type { FastifyInstance } from "fastify";
import type { SandboxContext } from "../context.js";
import { renderPngAsync } from "../media/png.js";
import { FApiError } from "./errors.js";
import type { FGenerationPayload, FGenerationRecord, FGenerationStore } from "./generations.js";

function imagePath(generation: FGenerationRecord, index: number): string {
  return `/f/images/${generation.id}/${index}.png`;
}

/** Payloads with signed, expiring image links, and the real PNGs behind them. */
export class FResults {
  constructor(
    private readonly context: SandboxContext,
    private readonly generations: FGenerationStore,
    /** spec F: "Image links expire"; lifetime not shown, counted from readiness. */
    private readonly ttlMs: number,
  ) {}

  /** The payload bytes of a ready generation, made once so the read and every delivery attempt carry the same bytes. */
  payloadBytes(generation: FGenerationRecord): Buffer {
    if (!generation.payloadBytes) {
      const ttlMs = generation.readyAt + this.ttlMs - this.context.clock.now();
      const { request } = generation;
      const payload: FGenerationPayload = {
        created: new Date(generation.readyAt).toISOString(),
        data: request.seeds.map((seed, index) => ({
          url: this.context.signedUrls.sign(this.context.baseUrl(), imagePath(generation, index), ttlMs),
          prompt: request.prompt,
          resolution: request.resolution.text,
          seed,
          is_image_safe: generation.imageSafe,
        })),
        generation_id: generation.id,
      };
      generation.payloadBytes = Buffer.from(JSON.stringify(payload), "utf8");
    }
    return generation.payloadBytes;
  }

  /** `GET /f/images/<generation>/<index>.png?expires=…&sig=…`, inside the `/f` plugin. No Api-Key: the link is the credential. */
  register(app: FastifyInstance): void {
    app.get<{ Params: { generation: string; file: string }; Querystring: Record<string, string> }>(
      "/images/:generation/:file",
      async (request, reply) => {
        const path = `/f/images/${request.params.generation}/${request.params.file}`;
        const check = this.context.signedUrls.check(path, request.query);
        if (check === "bad_signature") throw new FApiError(403, "link_signature_invalid", "the link's signature is not valid");
        if (check === "expired") throw new FApiError(403, "link_expired", "the link has expired");
        const generation = this.generations.find(request.params.generation);
        const index = Number(request.params.file.replace(/\.png$/, ""));
        const seed = generation?.request.seeds[index];
        if (!generation || seed === undefined) throw new FApiError(404, "not_found", "no such image");
        generation.downloads.push({ index, at: this.context.clock.now() });
        const { width, height } = generation.request.resolution;
        const bytes = await renderPngAsync(width, height, generation.request.prompt, seed);
        return reply.header("content-type", "image/png").send(bytes);
      },
    );
  }
}
