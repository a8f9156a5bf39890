import { createHash, randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { OutputSaveError, type OutputWriter } from "./local-folder.js";
import { OutputReadError } from "./read-error.js";
import { type BucketAddress, bucketAddress } from "./s3-address.js";

/**
 * Outputs in an S3-compatible bucket (`MEDIAGATE_OUTPUT_DIR=s3://bucket/prefix`),
 * so that every process can reach them: an API on one machine serves what a
 * worker on another captured.
 *
 * Configuration is the usual AWS one, read from the environment when a bucket
 * is first used: credentials from the SDK's default chain (AWS_ACCESS_KEY_ID
 * and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, container or instance roles),
 * the region from AWS_REGION (or AWS_DEFAULT_REGION; us-east-1 when neither is
 * set, and a bucket elsewhere is followed by the SDK's region redirects), and
 * an S3-compatible server's address from AWS_ENDPOINT_URL_S3 or
 * AWS_ENDPOINT_URL. The SDK reads those two itself; they are read here too,
 * because a server of one's own is addressed by path (`endpoint/bucket/key`:
 * its buckets have no DNS names) and because an address carrying a user or
 * password is refused, like a provider's base URL.
 */

interface ClientSettings {
  region: string;
  endpoint: URL | null;
}

/** A setting that cannot work, reported when the bucket is first used (before anything is sent, by the folder check). */
class SettingProblem {
  constructor(
    readonly errno: string,
    readonly why: string,
  ) {}
}

function clientSettings(env: NodeJS.ProcessEnv): ClientSettings | SettingProblem {
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || "us-east-1";
  if (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() === "true") return { region, endpoint: null };
  const variable = env.AWS_ENDPOINT_URL_S3 ? "AWS_ENDPOINT_URL_S3" : env.AWS_ENDPOINT_URL ? "AWS_ENDPOINT_URL" : null;
  if (variable === null) return { region, endpoint: null };
  const value = env[variable]!;
  let endpoint: URL;
  try {
    endpoint = new URL(value);
  } catch {
    // Not echoed: an address that does not parse may still hold a credential.
    return new SettingProblem("InvalidEndpoint", `${variable} must be an http(s) URL such as http://127.0.0.1:9000; its value is not a URL`);
  }
  if (endpoint.username || endpoint.password) {
    // Not echoed: what sits there is likely a credential.
    return new SettingProblem("InvalidEndpoint", `${variable} must not carry a user or password (credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE)`);
  }
  if (endpoint.protocol !== "http:" && endpoint.protocol !== "https:") {
    return new SettingProblem("InvalidEndpoint", `${variable} must be an http(s) URL such as http://127.0.0.1:9000, got one starting ${endpoint.protocol}//`);
  }
  return { region, endpoint };
}

/**
 * One client per set of settings, for the life of the process (a client holds
 * its connections and its resolved credentials). The key has no secret in it:
 * the access key id and profile name are what tell two credential sets apart.
 */
const clients = new Map<string, S3Client>();

function clientFor(settings: ClientSettings, env: NodeJS.ProcessEnv): S3Client {
  const key = JSON.stringify([settings.region, settings.endpoint?.href ?? null, env.AWS_ACCESS_KEY_ID ?? null, env.AWS_PROFILE ?? null]);
  let client = clients.get(key);
  if (!client) {
    client = new S3Client({
      region: settings.region,
      ...(settings.endpoint ? { endpoint: settings.endpoint.href, forcePathStyle: true } : {}),
      followRegionRedirects: true,
      // A connection that cannot be made in 10 s is reported (the folder check names the endpoint); a transfer may take
      // long, but not stall for two minutes.
      requestHandler: { connectionTimeout: 10_000, socketTimeout: 120_000 },
    });
    clients.set(key, client);
  }
  return client;
}

/** The bucket, key and client for a location, or the OutputSaveError that says why it cannot be used. */
function target(location: string): { address: BucketAddress; client: S3Client; settings: ClientSettings } {
  const address = bucketAddress(location);
  const settings = clientSettings(process.env);
  if (settings instanceof SettingProblem) throw new OutputSaveError(location, settings.errno, `cannot use ${location}: ${settings.why}`);
  return { address, client: clientFor(settings, process.env), settings };
}

const CREDENTIAL_REFUSALS: Record<string, string> = {
  InvalidAccessKeyId: "the server does not know the access key (AWS_ACCESS_KEY_ID)",
  SignatureDoesNotMatch: "the secret key does not match the access key (AWS_SECRET_ACCESS_KEY)",
  ExpiredToken: "the session token has expired (AWS_SESSION_TOKEN)",
  InvalidToken: "the session token is not valid (AWS_SESSION_TOKEN)",
  TokenRefreshRequired: "the session token must be refreshed (AWS_SESSION_TOKEN)",
};

const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE"]);

/**
 * What went wrong, in words, with a code: the service's error code, or the
 * system's for a connection that failed. A server's own message is not
 * repeated (S3 quotes parts of the signed request in some), nor is anything
 * of the request; only an error raised on this side (a setting the SDK
 * refused) is given as it is.
 */
function problemOf(error: unknown, settings: ClientSettings, address: BucketAddress): { errno: string; why: string } {
  const endpoint = settings.endpoint ? settings.endpoint.origin : `AWS S3 (${settings.region})`;
  if (error instanceof S3ServiceException) {
    const status = error.$metadata.httpStatusCode;
    if (error.name === "NoSuchBucket") return { errno: error.name, why: `the bucket "${address.bucket}" does not exist at ${endpoint}` };
    const refusal = CREDENTIAL_REFUSALS[error.name];
    if (refusal) return { errno: error.name, why: `the credentials were refused: ${refusal}` };
    if (error.name === "AccessDenied" || status === 403) return { errno: error.name, why: `access denied: these credentials may not do this in bucket "${address.bucket}"` };
    if (error.name === "BadDigest" || error.name === "InvalidDigest" || error.name === "XAmzContentSHA256Mismatch") {
      return { errno: error.name, why: "the bytes that arrived did not match their sha256, so the bucket refused them" };
    }
    return { errno: error.name, why: `${endpoint} answered ${error.name}${status ? ` (HTTP ${status})` : ""}` };
  }
  const name = (error as Error | null)?.name ?? "";
  if (name === "CredentialsProviderError") {
    return { errno: "NoCredentials", why: "no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE" };
  }
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code === "string" && NETWORK_CODES.has(code)) return { errno: code, why: `cannot reach ${endpoint}` };
  if (name === "TimeoutError") return { errno: "ETIMEDOUT", why: `${endpoint} did not answer in time` };
  return { errno: typeof code === "string" ? code : name || "EIO", why: error instanceof Error ? error.message : String(error) };
}

function saveError(location: string, action: string, error: unknown, settings: ClientSettings, address: BucketAddress): OutputSaveError {
  const { errno, why } = problemOf(error, settings, address);
  return new OutputSaveError(location, errno, `cannot ${action} ${location}: ${why} (${errno})`, { cause: error });
}

function readError(path: string, error: unknown, settings: ClientSettings, address: BucketAddress): OutputReadError {
  const { errno, why } = problemOf(error, settings, address);
  return new OutputReadError(path, errno, `cannot read ${path}: ${why} (${errno})`, { cause: error });
}

const isMissing = (error: unknown) => error instanceof S3ServiceException && (error.name === "NoSuchKey" || error.name === "NotFound" || error.$metadata.httpStatusCode === 404);

const keyIn = (prefix: string, name: string) => (prefix ? `${prefix}/${name}` : name);

const sha256Base64 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("base64");

/**
 * The bucket writer. An object is sent whole in one PutObject: S3 makes an
 * object visible only once all of it arrived (an upload cut short leaves
 * nothing under the key), and outputs are held in memory, far below the 5 GB
 * a single PutObject takes, so there is no multipart upload that could be
 * left half done. Each object is sent with its sha256 (ChecksumSHA256): S3 and
 * the S3-compatible servers that implement checksums verify it and refuse a
 * mismatch (BadDigest) before storing anything. A server that does not answer
 * with the checksum it stored (one that ignores checksums, such as s3rver) has
 * the object read back and hashed here; an object whose bytes differ is
 * removed, so a key holds the complete output or nothing.
 */
export function s3Outputs(): OutputWriter {
  const probesCleared = new Set<string>();
  return {
    async prepare(folder) {
      const { address, client, settings } = target(folder);
      // A key in the bucket is not writable until proved: the probe object goes where outputs will go.
      const probe = keyIn(address.key, `.mediagate-write-check-${randomBytes(4).toString("hex")}`);
      try {
        await client.send(new PutObjectCommand({ Bucket: address.bucket, Key: probe, Body: Buffer.alloc(0) }));
      } catch (error) {
        throw saveError(folder, "write in the output bucket", error, settings, address);
      }
      await client.send(new DeleteObjectCommand({ Bucket: address.bucket, Key: probe })).catch(() => undefined);
      // A process killed during this check leaves its probe behind: the first check of a location in this process
      // removes those (best effort: listing needs a permission that writing does not).
      if (probesCleared.has(folder)) return;
      probesCleared.add(folder);
      const listed = await client.send(new ListObjectsV2Command({ Bucket: address.bucket, Prefix: keyIn(address.key, ".mediagate-write-check-") })).catch(() => null);
      for (const object of listed?.Contents ?? []) {
        if (!object.Key || !/(^|\/)\.mediagate-write-check-[0-9a-f]{8}$/.test(object.Key)) continue;
        await client.send(new DeleteObjectCommand({ Bucket: address.bucket, Key: object.Key })).catch(() => undefined);
      }
    },

    async write(path, bytes) {
      const { address, client, settings } = target(path);
      const sha256 = sha256Base64(bytes);
      let answer;
      try {
        answer = await client.send(new PutObjectCommand({ Bucket: address.bucket, Key: address.key, Body: bytes, ContentLength: bytes.length, ChecksumSHA256: sha256 }));
      } catch (error) {
        throw saveError(path, "write", error, settings, address);
      }
      if (answer.ChecksumSHA256 === sha256) return;
      let stored = answer.ChecksumSHA256;
      if (stored === undefined) {
        try {
          const read = await client.send(new GetObjectCommand({ Bucket: address.bucket, Key: address.key }));
          stored = sha256Base64(await read.Body!.transformToByteArray());
        } catch (error) {
          throw saveError(path, "check what was written to", error, settings, address);
        }
      }
      if (stored === sha256) return;
      const removed = await client.send(new DeleteObjectCommand({ Bucket: address.bucket, Key: address.key })).then(
        () => true,
        () => false,
      );
      throw new OutputSaveError(
        path,
        "ChecksumMismatch",
        `cannot write ${path}: the bucket stored bytes whose sha256 differs from what was sent (${removed ? "the object was removed" : "removing the object failed too"}) (ChecksumMismatch)`,
      );
    },

    // Nothing to remove: an object appears whole or not at all, so a killed process leaves no temporary object.
    async removeStale() {},
  };
}

/** The object read is not the one whose size was told (its ETag changed in between). */
class PreconditionFailed extends Error {}

/** A saved output in a bucket: its size, and its bytes as a stream (all of them or one range). */
export interface BucketOutput {
  size: number;
  stream(range?: { start: number; end: number }): Promise<Readable>;
}

/** The object at `path`, or null when the bucket has no such object. */
export async function findBucketOutput(path: string): Promise<BucketOutput | null> {
  const { address, client, settings } = target(path);
  let head;
  try {
    head = await client.send(new HeadObjectCommand({ Bucket: address.bucket, Key: address.key }));
  } catch (error) {
    if (isMissing(error)) return null;
    throw readError(path, error, settings, address);
  }
  const etag = head.ETag;
  return {
    size: head.ContentLength ?? 0,
    async stream(range) {
      try {
        const answer = await client.send(
          new GetObjectCommand({
            Bucket: address.bucket,
            Key: address.key,
            // The size told above is the size of this object: one replaced since is not streamed under it.
            ...(etag ? { IfMatch: etag } : {}),
            // RFC 9110 §14.1.2: an inclusive byte range, passed through as the client asked for it (already resolved).
            ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
          }),
        );
        // A server that ignores If-Match (s3rver does) streams whatever is there now: its ETag tells.
        if (etag && answer.ETag && answer.ETag !== etag) {
          (answer.Body as Readable).destroy();
          throw new PreconditionFailed();
        }
        return answer.Body as Readable;
      } catch (error) {
        if (error instanceof PreconditionFailed || (error instanceof S3ServiceException && (error.name === "PreconditionFailed" || error.$metadata.httpStatusCode === 412))) {
          throw new OutputReadError(path, "ObjectChanged", `cannot read ${path}: the object was replaced while it was being read (ObjectChanged)`, { code: "output_changed" });
        }
        throw readError(path, error, settings, address);
      }
    },
  };
}

/** All the bytes of the object at `path`. */
export async function readBucketOutput(path: string): Promise<Buffer> {
  const { address, client, settings } = target(path);
  try {
    const answer = await client.send(new GetObjectCommand({ Bucket: address.bucket, Key: address.key }));
    return Buffer.from(await answer.Body!.transformToByteArray());
  } catch (error) {
    throw readError(path, error, settings, address);
  }
}
