import { OutputSaveError } from "./local-folder.js";
import { isBucketLocation } from "./location.js";

/** A bucket and a key (or key prefix, "" for the whole bucket) in it. */
export interface BucketAddress {
  bucket: string;
  key: string;
}

// S3's rule for new buckets (3 to 63 lower-case letters, digits, dots and hyphens); S3-compatible servers accept the same.
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * The bucket and key of an `s3://bucket/key` address, or an OutputSaveError
 * (`InvalidLocation`) saying what is wrong with it. An address carrying a
 * user or password is refused without being echoed: what sits there is likely
 * a credential, and credentials come from the usual AWS variables.
 */
export function bucketAddress(location: string): BucketAddress {
  const invalid = (why: string, shown = location) => new OutputSaveError(shown, "InvalidLocation", `${shown} is not a bucket address like s3://bucket/prefix: ${why}`);
  if (/^s3:\/\/[^/]*@/i.test(location)) {
    throw invalid("it must not carry a user or password (credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the other usual AWS sources)", "s3://…");
  }
  if (!isBucketLocation(location)) throw invalid("it must start with s3://");
  const match = /^s3:\/\/([^/?#]*)([^?#]*)$/i.exec(location);
  if (!match) throw invalid("it must not have a query (?) or fragment (#)");
  const [, bucket = "", path = ""] = match;
  if (!BUCKET_NAME.test(bucket)) throw invalid(`"${bucket}" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)`);
  const segments = path.split("/").filter((segment) => segment !== "");
  if (segments.some((segment) => segment === "." || segment === "..")) throw invalid('"." and ".." are not allowed in the prefix');
  return { bucket, key: segments.join("/") };
}
