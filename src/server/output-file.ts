import type { FastifyReply, FastifyRequest } from "fastify";
import type { JobOutput } from "../core/job.js";
import { findOutput } from "../outputs/by-location.js";
import { OutputReadError } from "../outputs/read-error.js";
import { ApiError } from "./api/errors.js";

/**
 * One single byte range of `bytes=a-b`, `bytes=a-` or `bytes=-n`; null for
 * none; "unsatisfiable" for a range past the end (several ranges are
 * answered whole: a client seeking video asks one at a time).
 */
export function byteRange(header: string | undefined, size: number): { start: number; end: number } | null | "unsatisfiable" {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === "" && match[2] === "")) return null;
  if (match[1] === "") {
    const suffix = Number(match[2]);
    if (suffix === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { start, end };
}

/**
 * Sends the saved bytes of a job's output with its content type, an ETag
 * (its sha256: `If-None-Match` is answered 304) and byte ranges (206), which
 * a `<video>` needs to seek. Shared by the API and the dashboard, so both
 * serve a file the same way; `name` says which output in errors.
 */
export async function sendOutputFile(request: FastifyRequest, reply: FastifyReply, output: JobOutput, name: string): Promise<FastifyReply> {
  // A local file, or an object in the bucket a worker on another machine saved it to.
  const saved = await findOutput(output.path).catch((error: unknown) => {
    throw unreadable(error, name);
  });
  if (saved === null) throw new ApiError("not_found", `${name} is not where it was saved (${output.path})`);
  const size = saved.size;
  const etag = `"${output.sha256}"`;
  reply.header("etag", etag).header("accept-ranges", "bytes").header("content-type", output.contentType).header("cache-control", "private, max-age=31536000, immutable");
  if (request.headers["if-none-match"] === etag) return reply.code(304).send();
  const range = byteRange(request.headers.range, size);
  if (range === "unsatisfiable") {
    reply.header("content-range", `bytes */${size}`);
    throw new ApiError("range_not_satisfiable", `the range ${request.headers.range} is outside the ${size} bytes of ${name}`);
  }
  const bytes = await saved.stream(range ?? undefined).catch((error: unknown) => {
    throw unreadable(error, name);
  });
  if (range === null) return reply.code(200).header("content-length", size).send(bytes);
  return reply
    .code(206)
    .header("content-range", `bytes ${range.start}-${range.end}/${size}`)
    .header("content-length", range.end - range.start + 1)
    .send(bytes);
}

/** A saved output that cannot be read as the API says it: replaced while read (409, ask again), or out of reach (503). */
function unreadable(error: unknown, name: string): unknown {
  if (!(error instanceof OutputReadError)) return error;
  if (error.code === "output_changed") return new ApiError("output_changed", `${name} was replaced in its bucket while it was being read; ask again`);
  return new ApiError("output_unreadable", `${name} cannot be read now (${error.errno}); ask again later`);
}
