import { dirname, join, resolve } from "node:path";

/**
 * Where an output lives: a local path, or an `s3://bucket/key` address in an
 * S3-compatible bucket. Both are plain strings (a job's `outDir`, an output's
 * `path`), so the store and the API keep one column for either; these
 * functions are the only place that tells them apart.
 */
export function isBucketLocation(location: string): boolean {
  return /^s3:\/\//i.test(location);
}

/** The canonical form of a location: a bucket address without trailing slashes, or an absolute local path. */
export function resolveOutputLocation(location: string): string {
  if (!isBucketLocation(location)) return resolve(location);
  // Malformed addresses are kept as written: preparing the location reports what is wrong, naming the setting.
  return location.replace(/^s3:\/\//i, "s3://").replace(/\/+$/, "");
}

/** The location of file `name` in `folder`: a key under a bucket prefix, or a path in a local folder. */
export function outputPath(folder: string, name: string): string {
  if (!isBucketLocation(folder)) return join(folder, name);
  return `${folder.replace(/\/+$/, "")}/${name}`;
}

/** The folder (or bucket prefix) that `path` is in. */
export function outputFolderOf(path: string): string {
  if (!isBucketLocation(path)) return dirname(path);
  return path.replace(/\/[^/]*$/, "");
}
