import type { FastifyInstance } from "fastify";
import type { SandboxContext } from "../context.js";
import { renderPngAsync } from "../media/png.js";
import { EApiError } from "./errors.js";
import type { EJobRecord, EJobStore } from "./jobs.js";

/** Prefix of the result links: their own path, like an object store's, outside the API and its quota. */
export const E_FILES_PREFIX = "/e-files";

function imagePath(job: EJobRecord, index: number): string {
  return `${E_FILES_PREFIX}/${job.id}/${index}.png`;
}

/** spec E status responses: images are under `result.outputs[].image.url`; real PNGs behind signed, expiring links. */
export class EResults {
  constructor(
    private readonly context: SandboxContext,
    private readonly jobs: EJobStore,
    /** spec E Limits: "the validity of result URLs: not shown"; counted from completion. */
    private readonly ttlMs: number,
  ) {}

  urlsFor(job: EJobRecord): string[] {
    if (!job.imageUrls) {
      const ttlMs = job.finishAt + this.ttlMs - this.context.clock.now();
      job.imageUrls = job.request.seeds.map((_seed, index) =>
        this.context.signedUrls.sign(this.context.baseUrl(), imagePath(job, index), ttlMs),
      );
    }
    return job.imageUrls;
  }

  /** `GET /e-files/<job>/<index>.png?expires=…&sig=…`, registered under E_FILES_PREFIX. No API key: the link is the credential. */
  register(app: FastifyInstance): void {
    app.get<{ Params: { job: string; file: string }; Querystring: Record<string, string> }>(
      "/:job/:file",
      async (request, reply) => {
        const path = `${E_FILES_PREFIX}/${request.params.job}/${request.params.file}`;
        const check = this.context.signedUrls.check(path, request.query);
        if (check === "bad_signature") throw new EApiError(403, "link_signature_invalid", "the link's signature is not valid");
        if (check === "expired") throw new EApiError(403, "link_expired", "the link has expired");
        const job = this.jobs.find(request.params.job);
        const index = Number(request.params.file.replace(/\.png$/, ""));
        const seed = job?.request.seeds[index];
        if (!job || seed === undefined) throw new EApiError(404, "not_found", "no such image");
        job.downloads.push({ index, at: this.context.clock.now() });
        const bytes = await renderPngAsync(job.request.size.width, job.request.size.height, job.request.prompt ?? job.altText, seed);
        return reply.header("content-type", "image/png").send(bytes);
      },
    );
  }
}
