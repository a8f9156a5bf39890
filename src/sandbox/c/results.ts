import type { FastifyInstance } from "fastify";
import type { SandboxContext } from "../context.js";
import { taggedVideo } from "../media/video.js";
import { servedRatio } from "./request.js";
import { statusAt, type CTaskRecord } from "./tasks.js";

function resultPath(task: CTaskRecord): string {
  return `/c/results/${task.videoId}.mp4`;
}

/**
 * Signed links to finished videos (always MP4: C's spec names no container).
 * A link's lifetime is not shown; it is `resultUrlTtlMs` from the moment the
 * task finished.
 */
export class CResults {
  constructor(
    private readonly context: SandboxContext,
    private readonly tasks: ReadonlyMap<string, CTaskRecord>,
    private readonly ttlMs: number,
  ) {}

  urlFor(task: CTaskRecord): string {
    if (task.resultUrl === undefined) {
      const ttlMs = task.finishedAt + this.ttlMs - this.context.clock.now();
      task.resultUrl = this.context.signedUrls.sign(this.context.baseUrl(), resultPath(task), ttlMs);
    }
    return task.resultUrl;
  }

  /** `GET /c/results/<video_id>.mp4?expires=…&sig=…`, inside the `/c` plugin; plain HTTP errors, like a file host. */
  register(app: FastifyInstance): void {
    app.get<{ Params: { file: string }; Querystring: Record<string, string> }>("/results/:file", async (request, reply) => {
      const check = this.context.signedUrls.check(`/c/results/${request.params.file}`, request.query);
      if (check !== "ok") return reply.code(403).send({ error: check === "expired" ? "link expired" : "bad signature" });
      const task = this.tasks.get(request.params.file.replace(/\.mp4$/, ""));
      // A deleted video (status 6) is gone from the file host too.
      if (!task || statusAt(task, this.context.clock.now()) !== 1) return reply.code(404).send({ error: "no such video" });
      if (request.method === "GET") task.downloads += 1;
      return reply.header("content-type", "video/mp4").send(taggedVideo(servedRatio(task.request.aspectRatio), "mp4", `C video ${task.videoId}`));
    });
  }
}
