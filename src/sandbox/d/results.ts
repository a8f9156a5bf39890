import type { FastifyInstance } from "fastify";
import type { SandboxContext } from "../context.js";
import { renderPngAsync } from "../media/png.js";
import { DApiError } from "./errors.js";
import { readyAtOrNull, type DJobRecord } from "./jobs.js";

/** Result images live under their own `/d-` prefix, so the request log still attributes them to D. */
export const D_RESULTS_PREFIX = "/d-results";

function samplePath(job: DJobRecord): string {
  return `${D_RESULTS_PREFIX}/${encodeURIComponent(job.id)}.png`;
}

/**
 * `result.sample`: a signed URL, valid ten minutes (spec D). From when is
 * not shown; the sandbox counts from the moment the job became Ready and
 * hands out the same URL on every poll, so a client that polls late gets a
 * link with less life left, and one that polls after ten minutes gets a dead
 * link (the strictest reading).
 */
export class DResults {
  constructor(
    private readonly context: SandboxContext,
    private readonly jobs: ReadonlyMap<string, DJobRecord>,
    private readonly ttlMs: number,
  ) {}

  sampleUrl(job: DJobRecord): string {
    if (job.sampleUrl === undefined) {
      const expiresAt = job.finishesAt + this.ttlMs;
      job.sampleUrl = this.context.signedUrls.sign(this.context.baseUrl(), samplePath(job), expiresAt - this.context.clock.now());
    }
    return job.sampleUrl;
  }

  /**
   * `GET /d-results/{id}.png?expires=…&sig=…`: a file host, so no x-key (the
   * signature is the credential). Past its lifetime the link answers 403
   * `link_expired` (not 410: a signed-URL host refuses an expired signature
   * the way it refuses a wrong one).
   */
  register(app: FastifyInstance): void {
    app.get<{ Params: { file: string }; Querystring: Record<string, string> }>("/:file", async (request, reply) => {
      const check = this.context.signedUrls.check(`${D_RESULTS_PREFIX}/${encodeURIComponent(request.params.file)}`, request.query);
      if (check === "expired") throw new DApiError(403, "link_expired", "this result link has expired (valid ten minutes)");
      if (check !== "ok") throw new DApiError(403, "bad_signature", "this result link is not valid");
      const job = this.jobs.get(request.params.file.replace(/\.png$/, ""));
      if (!job || readyAtOrNull(job, this.context.clock.now()) === null) throw new DApiError(404, "not_found", "no such result");
      if (request.method === "GET") job.downloads += 1;
      const { width, height } = job.request.outputSize;
      return reply.header("content-type", "image/png").send(await renderPngAsync(width, height, job.request.prompt, job.seed));
    });
  }
}
