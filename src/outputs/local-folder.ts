import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { MediagateError } from "../core/errors.js";
import { outputFolderOf, resolveOutputLocation } from "./location.js";

/**
 * Saving failed for a reason on our side (a folder under a regular file, no
 * permission, a full disk, a bucket that refuses the credentials), not at the
 * provider. The result is still there: the job is kept and saving is tried
 * again, so a paid result is not lost to a local problem.
 */
export class OutputSaveError extends MediagateError {
  constructor(
    readonly folder: string,
    /** The system's error code (`ENOTDIR`, `EACCES`, `ENOSPC`, …), or a bucket's (`NoSuchBucket`, `AccessDenied`, …). */
    readonly errno: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("output_unwritable", message, options);
  }
}

/** Where result bytes go. The engine writes through this; tests wrap it to inject a full disk. */
export interface OutputWriter {
  /** Creates the folder when missing and proves a file can be written in it. Called before anything is downloaded. */
  prepare(folder: string): Promise<void>;
  /** Writes bytes to `path` atomically: nobody ever sees a half-written file under that name. */
  write(path: string, bytes: Buffer): Promise<void>;
  /** Removes the temporary files a process killed mid-write left for this file stem. */
  removeStale(folder: string, stem: string): Promise<void>;
}

function errnoOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" ? code : "EIO";
}

function saveError(folder: string, action: string, error: unknown, also: Record<string, string> = {}): OutputSaveError {
  const errno = errnoOf(error);
  const why: Record<string, string> = {
    ENOTDIR: "part of the path is a file, not a folder",
    EEXIST: "a file of that name is in the way",
    EACCES: "permission denied",
    EPERM: "permission denied",
    EROFS: "the file system is read-only",
    ENOSPC: "the disk is full",
    EDQUOT: "the disk quota is used up",
  };
  return new OutputSaveError(folder, errno, `cannot ${action} ${folder}: ${also[errno] ?? why[errno] ?? (error as Error).message} (${errno})`, { cause: error });
}

/**
 * Creates `folder` and its missing parents one level at a time, from the
 * nearest folder that exists. Node's `mkdir(…, { recursive: true })` never
 * returns on a file system that answers "no such file" to every creation
 * (under /proc it spins at full CPU); here each level is one call, so the
 * check ends with the first refusal whatever the file system.
 */
async function makeFolder(folder: string): Promise<void> {
  const missing: string[] = [];
  for (let path = resolve(folder); ; path = dirname(path)) {
    const found = await stat(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return null;
      throw error;
    });
    if (found?.isDirectory()) break;
    if (found) throw Object.assign(new Error(`${path} is a file`), { code: path === resolve(folder) ? "EEXIST" : "ENOTDIR" });
    missing.push(path);
    if (dirname(path) === path) break;
  }
  for (const path of missing.reverse()) {
    await mkdir(path).catch((error: NodeJS.ErrnoException) => {
      // Another process made it meanwhile.
      if (error.code !== "EEXIST") throw error;
    });
  }
}

/** The local folder writer: temporary file in the same folder, flushed, renamed over. */
export const localFolderOutputs: OutputWriter = {
  async prepare(folder) {
    try {
      await makeFolder(folder);
    } catch (error) {
      // Its parent exists (it was found above), so "no such file" means the file system does not make folders (/proc).
      throw saveError(folder, "create the output folder", error, { ENOENT: "the file system there does not allow creating folders" });
    }
    // Creating the folder is not enough (read-only mounts, permissions): write and remove a probe file.
    const probe = join(folder, `.mediagate-write-check-${randomBytes(4).toString("hex")}`);
    try {
      const handle = await open(probe, "w");
      await handle.close();
    } catch (error) {
      throw saveError(folder, "write in the output folder", error);
    } finally {
      await rm(probe, { force: true }).catch(() => undefined);
    }
    // A process killed during this check leaves its probe behind; the first check of a folder in this
    // process removes those (another process's probe removed mid-check is harmless: its removal is forced).
    const leftovers = await leftoversIn(folder);
    for (const name of [...leftovers]) {
      if (/^\.mediagate-write-check-[0-9a-f]{8}$/.test(name)) {
        leftovers.delete(name);
        await rm(join(folder, name), { force: true }).catch(() => undefined);
      }
    }
  },

  async write(path, bytes) {
    const temporary = `${path}.tmp-${randomBytes(4).toString("hex")}`;
    try {
      const handle = await open(temporary, "w");
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true }).catch(() => undefined);
      throw saveError(path, "write", error);
    }
  },

  async removeStale(folder, stem) {
    const escaped = stem.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const leftover = new RegExp(`^${escaped}(-\\d+)?(\\.[a-z0-9]+)+\\.tmp-[0-9a-f]{8}$`);
    // Best effort: a leftover temporary file is clutter, never a reason to leave a result unsaved.
    const leftovers = await leftoversIn(folder);
    for (const name of [...leftovers]) {
      if (!leftover.test(name)) continue;
      leftovers.delete(name);
      await rm(join(folder, name), { force: true }).catch(() => undefined);
    }
  },
};

/**
 * Leftovers of killed processes (temporary files, folder probes) in each
 * output folder, listed once per folder by this process and forgotten as
 * they are removed: listing the folder at every capture read every saved
 * file again for each new one (20,000 results, 20,000 listings).
 */
const leftoversByFolder = new Map<string, Promise<Set<string>>>();

function leftoversIn(folder: string): Promise<Set<string>> {
  let leftovers = leftoversByFolder.get(folder);
  if (!leftovers) {
    leftovers = readdir(folder)
      .catch(() => [] as string[])
      .then((names) => new Set(names.filter((name) => /\.tmp-[0-9a-f]{8}$|^\.mediagate-write-check-[0-9a-f]{8}$/.test(name))));
    leftoversByFolder.set(folder, leftovers);
  }
  return leftovers;
}

/** Checks a command's output folder (or bucket location) before anything is queued or sent; null when usable, else the error. */
export async function outputFolderProblem(folder: string, writer: OutputWriter = localFolderOutputs, deadlineMs = FOLDER_CHECK_DEADLINE_MS): Promise<OutputSaveError | null> {
  let timer: NodeJS.Timeout | undefined;
  // A folder on a file system that never answers (a hung network mount) is reported, not waited for.
  const tooLong = new Promise<OutputSaveError>((resolve) => {
    timer = setTimeout(
      () => resolve(new OutputSaveError(folder, "ETIMEDOUT", `cannot use ${folder}: checking that it can be written took more than ${deadlineMs / 1_000} s`)),
      deadlineMs,
    );
    timer.unref();
  });
  try {
    return await Promise.race([writer.prepare(folder).then(() => null), tooLong]);
  } catch (error) {
    if (error instanceof OutputSaveError) return error;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** How long checking an output folder (or bucket) before anything is sent may take. */
const FOLDER_CHECK_DEADLINE_MS = 5_000;

/** A folder proved writable is not proved again for this long, unless a write in it fails. */
const FOLDER_CHECK_VALID_MS = 1_000;

/**
 * `writer` with its folder checks remembered: the engine checks the folder
 * before every capture (a result downloaded into a folder that cannot take it
 * must be downloaded again), and a probe file created and removed for each of
 * thousands of results cost more than the download. A folder is checked again
 * a second later, or at once after a write in it failed.
 */
export function rememberingFolderChecks(writer: OutputWriter, now: () => number): OutputWriter {
  const checkedAt = new Map<string, number>();
  return {
    async prepare(folder) {
      const key = resolveOutputLocation(folder);
      const at = checkedAt.get(key);
      if (at !== undefined && now() - at < FOLDER_CHECK_VALID_MS) return;
      await writer.prepare(folder);
      checkedAt.set(key, now());
    },
    async write(path, bytes) {
      try {
        await writer.write(path, bytes);
      } catch (error) {
        checkedAt.delete(resolveOutputLocation(outputFolderOf(path)));
        throw error;
      }
    },
    removeStale: (folder, stem) => writer.removeStale(folder, stem),
  };
}
