import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { localFolderOutputs, type OutputWriter } from "./local-folder.js";
import { isBucketLocation } from "./location.js";

// The AWS SDK is loaded when a bucket is first used: a process that only writes to local folders never pays for it.
const bucketModule = () => import("./s3.js");

/**
 * The default writer: a bucket address (`s3://bucket/prefix`) goes to the
 * bucket, anything else to the local folder. Each job carries its own
 * location, so jobs queued with different `--out` values are saved where they
 * were told to be.
 */
export function outputsByLocation(): OutputWriter {
  let bucket: Promise<OutputWriter> | null = null;
  const writerFor = async (location: string): Promise<OutputWriter> => {
    if (!isBucketLocation(location)) return localFolderOutputs;
    bucket ??= bucketModule().then((module) => module.s3Outputs());
    return bucket;
  };
  return {
    prepare: async (folder) => (await writerFor(folder)).prepare(folder),
    write: async (path, bytes) => (await writerFor(path)).write(path, bytes),
    removeStale: async (folder, stem) => (await writerFor(folder)).removeStale(folder, stem),
  };
}

/** The default writer of a process: one, so a bucket's leftover probes are looked for once per location. */
export const defaultOutputs: OutputWriter = outputsByLocation();

/** A saved output wherever it is: its size, and its bytes as a stream (all of them or one inclusive range). */
export interface SavedOutput {
  size: number;
  stream(range?: { start: number; end: number }): Promise<Readable>;
}

/** The saved output at `path` (a local file or a bucket object), or null when nothing is there. */
export async function findOutput(path: string): Promise<SavedOutput | null> {
  if (isBucketLocation(path)) return (await bucketModule()).findBucketOutput(path);
  const size = await stat(path).then(
    (info) => (info.isFile() ? info.size : null),
    () => null,
  );
  if (size === null) return null;
  return { size, stream: async (range) => createReadStream(path, range ?? {}) };
}

/** All the bytes of the saved output at `path`. */
export async function readOutput(path: string): Promise<Buffer> {
  if (isBucketLocation(path)) return (await bucketModule()).readBucketOutput(path);
  return readFile(path);
}
