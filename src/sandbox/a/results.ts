import type { FastifyInstance } from "fastify";
import { taggedVideo, videoContentType } from "../media/video.js";
import type { SandboxContext } from "../context.js";
import { AApiError } from "./errors.js";
import type { ATaskRecord, ATaskStore } from "./tasks.js";

/** spec A Limits: the result URL is valid 24 hours. */
export const RESULT_URL_TTL_MS = 24 * 3_600_000;

function resultPath(task: ATaskRecord): string {
  return `/a/results/${task.id}.${task.request.outputFormat}`;
}

/** Signed result links and their downloads. */
export class AResults {
  constructor(
    private readonly context: SandboxContext,
    private readonly tasks: ATaskStore,
    /** spec A Limits: at most 100 downloads per result on the newest generation; older generations have no stated cap. */
    private readonly newestGenerationDownloadLimit: number,
  ) {}

  /** The link is made once, valid 24 h from the moment the task succeeded (not from the first read). */
  urlFor(task: ATaskRecord): string {
    if (task.resultUrl === undefined) {
      const ttlMs = task.finishedAt + RESULT_URL_TTL_MS - this.context.clock.now();
      task.resultUrl = this.context.signedUrls.sign(this.context.baseUrl(), resultPath(task), ttlMs);
    }
    return task.resultUrl;
  }

  /** `GET /a/results/<id>.<mp4|mov>?expires=…&sig=…`, inside the `/a` plugin. Refusals are 403, as object stores answer. */
  register(app: FastifyInstance): void {
    app.get<{ Params: { file: string }; Querystring: Record<string, string> }>("/results/:file", async (request, reply) => {
      const path = `/a/results/${request.params.file}`;
      const check = this.context.signedUrls.check(path, request.query);
      if (check === "bad_signature") throw new AApiError(403, "SignatureDoesNotMatch", "the link's signature is not valid");
      if (check === "expired") throw new AApiError(403, "RequestExpired", "the link has expired (valid 24 hours)");
      const id = request.params.file.replace(/\.(mp4|mov)$/, "");
      const task = this.tasks.find(id);
      if (!task) throw new AApiError(404, "NotFound", "no such result");
      const counted = request.method === "GET";
      if (counted && task.request.model.newestGeneration && task.downloads >= this.newestGenerationDownloadLimit) {
        const message = `this link allows at most ${this.newestGenerationDownloadLimit} downloads`;
        throw new AApiError(403, "DownloadLimitExceeded", message);
      }
      if (counted) task.downloads += 1;
      const bytes = taggedVideo(task.request.videoRatio, task.request.outputFormat, `A task ${task.id}`);
      return reply.header("content-type", videoContentType(task.request.outputFormat)).send(bytes);
    });
  }
}
