import { createHash, randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { createServer, request as forward, type IncomingHttpHeaders, type OutgoingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { checkOutputFolder } from "../../src/app/prepare.js";
import { createRuntime } from "../../src/app/runtime.js";
import { loadConfig } from "../../src/core/config.js";
import { ConfigError, InputError } from "../../src/core/errors.js";
import { createLogger } from "../../src/engine/logger.js";
import { Mediagate } from "../../src/index.js";
import { findOutput, outputsByLocation, readOutput } from "../../src/outputs/by-location.js";
import { OutputSaveError } from "../../src/outputs/local-folder.js";
import { OutputReadError } from "../../src/outputs/read-error.js";
import { outputPath } from "../../src/outputs/location.js";
import { s3Outputs } from "../../src/outputs/s3.js";
import { buildServer } from "../../src/server/app.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { tempDir } from "../helpers/stores.js";

// s3rver: a real S3-compatible server (its own HTTP, XML answers and file store) in this process, on loopback.
// Its built-in account is S3RVER / S3RVER. It refuses an unknown access key id but does not check SigV4 signatures
// (a wrong secret is accepted), and it neither verifies nor returns checksums: the writer's read-back check is what
// runs against it.
const BUCKET = "outputs";
const ACCESS_KEY_ID = "S3RVER";
const SECRET_ACCESS_KEY = "S3RVER";

let s3rver: S3rver;
let s3rverFolder: ReturnType<typeof tempDir>;
let endpoint: string;
let inspector: S3Client;

beforeAll(async () => {
  s3rverFolder = tempDir("mediagate-s3rver-");
  s3rver = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: s3rverFolder.path, configureBuckets: [{ name: BUCKET, configs: [] }] });
  const { port } = await s3rver.run();
  endpoint = `http://127.0.0.1:${port}`;
  // The test's own look into the bucket, apart from the code under test.
  inspector = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY } });
});

afterAll(async () => {
  inspector?.destroy();
  await s3rver?.close();
  s3rverFolder?.remove();
});

/** The usual AWS variables, pointing at s3rver; nothing else of the machine's AWS set-up is consulted. */
function pointAwsAt(url: string, accessKeyId = ACCESS_KEY_ID): void {
  vi.stubEnv("AWS_ACCESS_KEY_ID", accessKeyId);
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY);
  vi.stubEnv("AWS_REGION", "us-east-1");
  vi.stubEnv("AWS_ENDPOINT_URL_S3", url);
  // No instance-metadata lookups from a test, whatever happens to the variables above.
  vi.stubEnv("AWS_EC2_METADATA_DISABLED", "true");
  for (const name of ["AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_DEFAULT_REGION"]) vi.stubEnv(name, undefined);
}

beforeEach(() => pointAwsAt(endpoint));
afterEach(() => {
  vi.unstubAllEnvs();
});

async function objectBytes(key: string): Promise<Buffer> {
  const answer = await inspector.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await answer.Body!.transformToByteArray());
}

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await inspector.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (listed.Contents ?? []).map((object) => object.Key!).sort();
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Runs `action` and returns what it threw (fails the test when it threw nothing). */
async function thrownBy(action: () => Promise<unknown>): Promise<unknown> {
  return action().then(
    () => expect.fail("expected a refusal"),
    (error: unknown) => error,
  );
}

/**
 * An HTTP hop in front of s3rver that flips the first byte of every non-empty
 * PUT body: bytes changed on the way, which s3rver (checking no checksum)
 * stores as they arrive.
 */
async function startCorruptingHop(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const upstream = new URL(target);
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const body = Buffer.concat(chunks);
      if (incoming.method === "PUT" && body.length > 0) body[0] = body[0]! ^ 0xff;
      const onward = forward({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
      onward.on("error", () => outgoing.destroy());
      onward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * An HTTP hop in front of s3rver that refuses every PUT of an output (not the
 * folder check's probe) while `refusing` is true, the way `how` says: an S3
 * error answer, or a connection cut before any answer.
 */
async function startRefusingHop(target: string, how: "503" | "reset"): Promise<{ url: string; refusing: boolean; refused: number; close(): Promise<void> }> {
  const upstream = new URL(target);
  const hop = {
    url: "",
    refusing: true,
    refused: 0,
    close: async () => undefined as void,
  };
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      if (hop.refusing && incoming.method === "PUT" && !incoming.url!.includes(".mediagate-write-check-")) {
        hop.refused++;
        if (how === "reset") {
          outgoing.socket?.destroy();
          return;
        }
        outgoing.writeHead(503, { "content-type": "application/xml" });
        outgoing.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>Please reduce your request rate.</Message></Error>');
        return;
      }
      const onward = forward({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
      onward.on("error", () => outgoing.destroy());
      onward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  hop.url = `http://127.0.0.1:${port}`;
  hop.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return hop;
}

/** What a hop in front of s3rver saw of a request. */
interface HopRequest {
  method: string;
  /** The path and query, `/bucket/key?…` (path-style). */
  url: string;
  headers: IncomingHttpHeaders;
}

/** What a hop does with a request: answers it with an S3 error of its own, cuts the connection, or passes it on. */
type HopAnswer = { status: number; code?: string; headers?: OutgoingHttpHeaders } | "reset" | "forward";

/**
 * An HTTP hop in front of s3rver that answers each request as `script` says,
 * keeping every request it saw. A request passed on may have its body changed
 * on the way up (`body`) and s3rver's answer headers on the way back
 * (`answerHeaders`): a server that stores other bytes, or that tells a checksum.
 */
async function startHop(
  target: string,
  script: (request: HopRequest) => HopAnswer,
  change: { body?: (request: HopRequest, body: Buffer) => Buffer; answerHeaders?: (request: HopRequest, body: Buffer, headers: OutgoingHttpHeaders) => OutgoingHttpHeaders } = {},
): Promise<{ url: string; requests: HopRequest[]; close(): Promise<void> }> {
  const upstream = new URL(target);
  const requests: HopRequest[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const request: HopRequest = { method: incoming.method!, url: incoming.url!, headers: incoming.headers };
      requests.push(request);
      const answer = script(request);
      if (answer === "reset") {
        outgoing.socket?.destroy();
        return;
      }
      if (answer !== "forward") {
        // A HEAD answer has no body (S3's refusals of HEAD carry only the status).
        outgoing.writeHead(answer.status, { "content-type": "application/xml", ...answer.headers });
        outgoing.end(request.method === "HEAD" ? undefined : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${answer.code}</Code><Message>said by the test's hop</Message></Error>`);
        return;
      }
      const body = change.body ? change.body(request, Buffer.concat(chunks)) : Buffer.concat(chunks);
      const headers = { ...incoming.headers, ...(incoming.headers["content-length"] !== undefined ? { "content-length": String(body.length) } : {}) };
      const onward = forward({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers }, (answered) => {
        outgoing.writeHead(answered.statusCode ?? 502, change.answerHeaders ? change.answerHeaders(request, body, answered.headers) : answered.headers);
        answered.pipe(outgoing);
      });
      onward.on("error", () => outgoing.destroy());
      onward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs `action` with AWS pointed at a hop in front of s3rver (closed afterwards). */
async function throughHop<T>(hop: Awaited<ReturnType<typeof startHop>>, action: () => Promise<T>): Promise<T> {
  pointAwsAt(hop.url);
  try {
    return await action();
  } finally {
    await hop.close();
  }
}

const isProbe = (request: HopRequest) => request.url.includes(".mediagate-write-check-");
/** The region a request was signed for (its SigV4 credential scope). */
const signedRegion = (request: HopRequest) => /Credential=[^/]+\/\d{8}\/([^/]+)\/s3\/aws4_request/.exec(String(request.headers.authorization))?.[1];
const sha256Base64 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("base64");

describe("outputs in an S3-compatible bucket (s3rver over loopback)", () => {
  it("S3: an output is written whole under prefix/name and reads back byte-identical (whole, and by byte range), its sha256 unchanged", async () => {
    const writer = s3Outputs();
    const path = outputPath(`s3://${BUCKET}/written/`, "fox.png");
    expect(path).toBe(`s3://${BUCKET}/written/fox.png`);
    const bytes = randomBytes(300_000);
    await writer.prepare(`s3://${BUCKET}/written`);
    await writer.write(path, bytes);

    expect(await keysUnder("written/")).toEqual(["written/fox.png"]);
    const stored = await objectBytes("written/fox.png");
    expect(sha256(stored)).toBe(sha256(bytes));
    expect((await readOutput(path)).equals(bytes)).toBe(true);
    const saved = await findOutput(path);
    expect(saved!.size).toBe(bytes.length);
    const chunks: Buffer[] = [];
    for await (const chunk of await saved!.stream({ start: 1_000, end: 1_999 })) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(bytes.subarray(1_000, 2_000))).toBe(true);
    expect(await findOutput(`s3://${BUCKET}/written/no-such.png`)).toBeNull();
  });

  it("S3: the folder check writes and removes a probe object, and clears the probes a process killed mid-check left (nothing else)", async () => {
    for (const key of ["probed/.mediagate-write-check-0123abcd", "probed/.mediagate-write-check-0123abc", "probed/fox.png"]) {
      await inspector.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: "x" }));
    }
    await s3Outputs().prepare(`s3://${BUCKET}/probed`);
    expect(await keysUnder("probed/")).toEqual(["probed/.mediagate-write-check-0123abc", "probed/fox.png"]);
  });

  it("S3: a missing bucket is refused before anything is sent, naming MEDIAGATE_OUTPUT_DIR (or the --out flag that gave it)", async () => {
    const fromVariable = await thrownBy(() => checkOutputFolder("s3://no-such-bucket/out", null));
    expect(fromVariable).toBeInstanceOf(ConfigError);
    expect((fromVariable as ConfigError).variable).toBe("MEDIAGATE_OUTPUT_DIR");
    expect((fromVariable as ConfigError).message).toBe(
      `MEDIAGATE_OUTPUT_DIR (or --output-dir): cannot write in the output bucket s3://no-such-bucket/out: the bucket "no-such-bucket" does not exist at ${endpoint} (NoSuchBucket); nothing was sent`,
    );
    const fromFlag = await thrownBy(() => checkOutputFolder("s3://no-such-bucket/out", "--out"));
    expect(fromFlag).toBeInstanceOf(InputError);
    expect((fromFlag as InputError).field).toBe("--out");
  });

  it("S3: an access key the server does not know is refused as such, and no secret appears in the message", async () => {
    pointAwsAt(endpoint, "NOT-A-KNOWN-KEY");
    const error = (await thrownBy(() => checkOutputFolder(`s3://${BUCKET}/refused`, null))) as ConfigError;
    expect(error.variable).toBe("MEDIAGATE_OUTPUT_DIR");
    expect(error.message).toMatch(/cannot write in the output bucket s3:\/\/outputs\/refused: the credentials were refused: the server does not know the access key \(AWS_ACCESS_KEY_ID\) \(InvalidAccessKeyId\)/);
    expect(error.message).not.toContain(SECRET_ACCESS_KEY);
    expect(await keysUnder("refused/")).toEqual([]);
  });

  it("S3: an endpoint nobody listens on is refused as unreachable, naming the endpoint", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    pointAwsAt(`http://127.0.0.1:${port}`);
    const error = (await thrownBy(() => checkOutputFolder(`s3://${BUCKET}/unreachable`, null))) as ConfigError;
    expect(error.variable).toBe("MEDIAGATE_OUTPUT_DIR");
    expect(error.message).toBe(
      `MEDIAGATE_OUTPUT_DIR (or --output-dir): cannot write in the output bucket s3://${BUCKET}/unreachable: cannot reach http://127.0.0.1:${port} (ECONNREFUSED); nothing was sent`,
    );
  });

  it("S3: an endpoint or a bucket address carrying a user or password is refused without echoing it", async () => {
    pointAwsAt(endpoint.replace("http://", "http://someone:hunter2@"));
    const endpointError = (await thrownBy(() => checkOutputFolder(`s3://${BUCKET}/userinfo`, null))) as ConfigError;
    expect(endpointError.message).toMatch(/AWS_ENDPOINT_URL_S3 must not carry a user or password/);
    expect(endpointError.message).not.toContain("hunter2");

    const configError = (await thrownBy(async () => loadConfig({ env: { MEDIAGATE_OUTPUT_DIR: `s3://someone:hunter2@${BUCKET}/x` }, cwd: s3rverFolder.path }))) as ConfigError;
    expect(configError).toBeInstanceOf(ConfigError);
    expect(configError.variable).toBe("MEDIAGATE_OUTPUT_DIR");
    expect(configError.message).not.toContain("hunter2");

    pointAwsAt(endpoint);
    const flagError = (await thrownBy(() => checkOutputFolder(`s3://someone:hunter2@${BUCKET}/x`, "--out"))) as InputError;
    expect(flagError.field).toBe("--out");
    expect(flagError.message).toMatch(/must not carry a user or password/);
    expect(flagError.message).not.toContain("hunter2");
  });

  it("S3: a bucket address that is not one is refused with what is wrong, before anything is sent", async () => {
    const error = (await thrownBy(() => checkOutputFolder("s3://Not_A_Bucket/out", null))) as ConfigError;
    expect(error.message).toBe(
      'MEDIAGATE_OUTPUT_DIR (or --output-dir): s3://Not_A_Bucket/out is not a bucket address like s3://bucket/prefix: "Not_A_Bucket" is not a bucket name (3 to 63 lower-case letters, digits, dots and hyphens); nothing was sent',
    );
  });

  it("S3: bytes changed on the way are caught by their sha256 and the object is removed: a key holds the whole output or nothing", async () => {
    const hop = await startCorruptingHop(endpoint);
    try {
      pointAwsAt(hop.url);
      const path = `s3://${BUCKET}/corrupted/fox.png`;
      const error = (await thrownBy(() => s3Outputs().write(path, randomBytes(10_000)))) as OutputSaveError;
      expect(error).toBeInstanceOf(OutputSaveError);
      expect(error.code).toBe("output_unwritable");
      expect(error.errno).toBe("ChecksumMismatch");
      expect(error.message).toBe(`cannot write ${path}: the bucket stored bytes whose sha256 differs from what was sent (the object was removed) (ChecksumMismatch)`);
      expect(await keysUnder("corrupted/")).toEqual([]);
    } finally {
      await hop.close();
    }
  });
});

describe("S3: which bucket and settings a location uses (s3rver over loopback)", () => {
  it("S3: AWS_ENDPOINT_URL is used when AWS_ENDPOINT_URL_S3 is not set, and AWS_ENDPOINT_URL_S3 wins when both are", async () => {
    vi.stubEnv("AWS_ENDPOINT_URL_S3", undefined);
    vi.stubEnv("AWS_ENDPOINT_URL", endpoint);
    await s3Outputs().write(`s3://${BUCKET}/general-endpoint/fox.png`, Buffer.from("fox"));
    expect(await keysUnder("general-endpoint/")).toEqual(["general-endpoint/fox.png"]);

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    vi.stubEnv("AWS_ENDPOINT_URL", `http://127.0.0.1:${port}`);
    vi.stubEnv("AWS_ENDPOINT_URL_S3", endpoint);
    await s3Outputs().write(`s3://${BUCKET}/s3-endpoint/fox.png`, Buffer.from("fox"));
    expect(await keysUnder("s3-endpoint/")).toEqual(["s3-endpoint/fox.png"]);
  });

  it.each([
    ["not a url", "AWS_ENDPOINT_URL_S3 must be an http(s) URL such as http://127.0.0.1:9000; its value is not a URL"],
    ["ftp://127.0.0.1:21", "AWS_ENDPOINT_URL_S3 must be an http(s) URL such as http://127.0.0.1:9000, got one starting ftp://"],
    ["http://someone@127.0.0.1:9000", "AWS_ENDPOINT_URL_S3 must not carry a user or password (credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE)"],
    ["http://:hunter2@127.0.0.1:9000", "AWS_ENDPOINT_URL_S3 must not carry a user or password (credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE)"],
  ])("S3: an endpoint of %s is refused as InvalidEndpoint before anything is sent, saying why", async (value, why) => {
    vi.stubEnv("AWS_ENDPOINT_URL_S3", value);
    const error = (await thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/x`))) as OutputSaveError;
    expect(error).toBeInstanceOf(OutputSaveError);
    expect(error.errno).toBe("InvalidEndpoint");
    expect(error.folder).toBe(`s3://${BUCKET}/x`);
    expect(error.message).toBe(`cannot use s3://${BUCKET}/x: ${why}`);
  });

  it("S3: AWS_ENDPOINT_URL is checked the same way, and named", async () => {
    vi.stubEnv("AWS_ENDPOINT_URL_S3", undefined);
    vi.stubEnv("AWS_ENDPOINT_URL", "ftp://127.0.0.1:21");
    const error = (await thrownBy(() => readOutput(`s3://${BUCKET}/x/fox.png`))) as OutputSaveError;
    expect(error.message).toBe(`cannot use s3://${BUCKET}/x/fox.png: AWS_ENDPOINT_URL must be an http(s) URL such as http://127.0.0.1:9000, got one starting ftp://`);
  });

  it("S3: requests are signed for AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1", async () => {
    const hop = await startHop(endpoint, () => "forward");
    await throughHop(hop, async () => {
      const regions: Array<[string | undefined, string | undefined]> = [
        ["eu-west-3", "ap-south-1"],
        [undefined, "ap-south-1"],
        ["", "ap-south-1"],
        [undefined, undefined],
      ];
      for (const [region, defaultRegion] of regions) {
        vi.stubEnv("AWS_REGION", region);
        vi.stubEnv("AWS_DEFAULT_REGION", defaultRegion);
        await s3Outputs().write(`s3://${BUCKET}/regions/fox.png`, Buffer.from("fox"));
      }
    });
    const scopes = hop.requests.filter((request) => request.method === "PUT").map(signedRegion);
    expect(scopes).toEqual(["eu-west-3", "ap-south-1", "ap-south-1", "us-east-1"]);
  });

  it("S3: an https endpoint is taken as given (here a server that speaks plain HTTP: the TLS handshake fails with the system's code)", async () => {
    vi.stubEnv("AWS_ENDPOINT_URL_S3", endpoint.replace("http://", "https://"));
    const error = (await thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/tls`))) as OutputSaveError;
    expect(error.errno).toBe("EPROTO");
    // Not a network code: the system's own words are given (OpenSSL's, ending in a line break), not "cannot reach".
    expect(error.message).toMatch(new RegExp(`^cannot write in the output bucket s3://${BUCKET}/tls: .*wrong version number.* \\(EPROTO\\)$`, "s"));
  });

  it("S3: without an endpoint variable, or with AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true (any case), the bucket is AWS's, whose endpoint needs a real region (refused here before anything is sent)", async () => {
    vi.stubEnv("AWS_REGION", "not a region");
    vi.stubEnv("AWS_ENDPOINT_URL_S3", undefined);
    const withoutEndpoint = (await thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/aws`))) as OutputSaveError;
    vi.stubEnv("AWS_ENDPOINT_URL_S3", "not a url");
    vi.stubEnv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "TRUE");
    const endpointIgnored = (await thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/aws`))) as OutputSaveError;
    for (const error of [withoutEndpoint, endpointIgnored]) {
      // An error raised on this side has no service code: its name stands for one, and its own words are given.
      expect(error.errno).toBe("Error");
      expect(error.message).toMatch(new RegExp(`^cannot write in the output bucket s3://${BUCKET}/aws: .*region="not a region".* \\(Error\\)$`));
    }
  });

  it("S3: a server of one's own is addressed by path (endpoint/bucket/key): its buckets have no DNS names", async () => {
    const hop = await startHop(endpoint, () => "forward");
    await throughHop(hop, async () => {
      vi.stubEnv("AWS_ENDPOINT_URL_S3", hop.url.replace("127.0.0.1", "localhost"));
      await s3Outputs().write(`s3://${BUCKET}/by-path/fox.png`, Buffer.from("fox"));
    });
    expect(hop.requests[0]!.url).toMatch(new RegExp(`^/${BUCKET}/by-path/fox\\.png(\\?|$)`));
    expect(hop.requests[0]!.headers.host).toMatch(/^localhost:\d+$/);
  });

  it("S3: a bucket in another region is followed (S3's 301 PermanentRedirect naming the bucket's region): the request is signed again for it", async () => {
    const hop = await startHop(endpoint, (request) =>
      request.method === "PUT" && signedRegion(request) !== "eu-west-3" ? { status: 301, code: "PermanentRedirect", headers: { "x-amz-bucket-region": "eu-west-3" } } : "forward",
    );
    await throughHop(hop, () => s3Outputs().write(`s3://${BUCKET}/elsewhere/fox.png`, Buffer.from("fox")));
    expect(hop.requests.filter((request) => request.method === "PUT").map(signedRegion)).toEqual(["us-east-1", "eu-west-3"]);
    expect((await objectBytes("elsewhere/fox.png")).toString()).toBe("fox");
  });

  it("S3: each AWS profile has its own client, so its own credentials", async () => {
    const credentials = join(s3rverFolder.path, "aws-credentials");
    writeFileSync(credentials, `[known]\naws_access_key_id = ${ACCESS_KEY_ID}\naws_secret_access_key = ${SECRET_ACCESS_KEY}\n[unknown]\naws_access_key_id = NOT-A-KNOWN-KEY\naws_secret_access_key = x\n`);
    vi.stubEnv("AWS_ACCESS_KEY_ID", undefined);
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", undefined);
    vi.stubEnv("AWS_SHARED_CREDENTIALS_FILE", credentials);
    vi.stubEnv("AWS_CONFIG_FILE", join(s3rverFolder.path, "no-such-aws-config"));
    vi.stubEnv("AWS_PROFILE", "known");
    await s3Outputs().prepare(`s3://${BUCKET}/profiles`);
    vi.stubEnv("AWS_PROFILE", "unknown");
    const error = (await thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/profiles`))) as OutputSaveError;
    expect(error.errno).toBe("InvalidAccessKeyId");
  });

  it("S3: with no credentials anywhere, the bucket is refused as NoCredentials, naming the variables to set", async () => {
    const nowhere = join(s3rverFolder.path, "no-such-aws-file");
    for (const name of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"]) vi.stubEnv(name, undefined);
    vi.stubEnv("AWS_SHARED_CREDENTIALS_FILE", nowhere);
    vi.stubEnv("AWS_CONFIG_FILE", nowhere);
    const error = (await thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/anonymous`))) as OutputSaveError;
    expect(error.errno).toBe("NoCredentials");
    expect(error.message).toBe(
      `cannot write in the output bucket s3://${BUCKET}/anonymous: no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (NoCredentials)`,
    );
  });

  it("S3: the default writer sends a bucket location to the bucket, with one bucket writer per process (a location's leftover probes are looked for once)", async () => {
    const writer = outputsByLocation();
    await writer.prepare(`s3://${BUCKET}/by-location`);
    await writer.write(`s3://${BUCKET}/by-location/fox.png`, Buffer.from("fox"));
    await writer.removeStale(`s3://${BUCKET}/by-location`, "fox");
    await inspector.send(new PutObjectCommand({ Bucket: BUCKET, Key: "by-location/.mediagate-write-check-0123abcd", Body: "x" }));
    await writer.prepare(`s3://${BUCKET}/by-location`);
    expect(await keysUnder("by-location/")).toEqual(["by-location/.mediagate-write-check-0123abcd", "by-location/fox.png"]);
    // Another process (a writer of its own) clears it at its first check.
    await outputsByLocation().prepare(`s3://${BUCKET}/by-location`);
    expect(await keysUnder("by-location/")).toEqual(["by-location/fox.png"]);
  });

  it("S3: a whole bucket (no prefix) takes its probe and outputs at the top, and its leftover probes there are cleared (not a longer name)", async () => {
    await inspector.send(new PutObjectCommand({ Bucket: BUCKET, Key: ".mediagate-write-check-89abcdef", Body: "x" }));
    await inspector.send(new PutObjectCommand({ Bucket: BUCKET, Key: ".mediagate-write-check-89abcdef.bak", Body: "x" }));
    const hop = await startHop(endpoint, () => "forward");
    await throughHop(hop, () => s3Outputs().prepare(`s3://${BUCKET}`));
    const probe = hop.requests.find((request) => request.method === "PUT")!;
    expect(probe.url).toMatch(new RegExp(`^/${BUCKET}/\\.mediagate-write-check-[0-9a-f]{8}(\\?|$)`));
    expect(await keysUnder(".mediagate-write-check-")).toEqual([".mediagate-write-check-89abcdef.bak"]);
    await inspector.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: ".mediagate-write-check-89abcdef.bak" }));
  });

  it("S3: the folder check is proved by the probe's write alone: a refused removal or listing of probes does not fail it", async () => {
    const hop = await startHop(endpoint, (request) => (request.method === "DELETE" || request.method === "GET" ? { status: 403, code: "AccessDenied" } : "forward"));
    await throughHop(hop, () => s3Outputs().prepare(`s3://${BUCKET}/write-only`));
    expect(hop.requests.map((request) => request.method)).toEqual(["PUT", "DELETE", "GET"]);
  });
});

describe("S3: what each refusal is called (a hop in front of s3rver answering as a bucket would)", () => {
  it.each([
    [403, "SignatureDoesNotMatch", "the credentials were refused: the secret key does not match the access key (AWS_SECRET_ACCESS_KEY)"],
    [400, "ExpiredToken", "the credentials were refused: the session token has expired (AWS_SESSION_TOKEN)"],
    [400, "InvalidToken", "the credentials were refused: the session token is not valid (AWS_SESSION_TOKEN)"],
    [400, "TokenRefreshRequired", "the credentials were refused: the session token must be refreshed (AWS_SESSION_TOKEN)"],
    [403, "AccessDenied", `access denied: these credentials may not do this in bucket "${BUCKET}"`],
    [403, "AllAccessDisabled", `access denied: these credentials may not do this in bucket "${BUCKET}"`],
    [400, "AccessDenied", `access denied: these credentials may not do this in bucket "${BUCKET}"`],
  ])("S3: the folder check's probe answered %i %s is refused as: %s", async (status, code, why) => {
    const hop = await startHop(endpoint, (request) => (request.method === "PUT" ? { status, code } : "forward"));
    const error = (await throughHop(hop, () => thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/refusals`)))) as OutputSaveError;
    expect(error).toBeInstanceOf(OutputSaveError);
    expect(error.errno).toBe(code);
    expect(error.message).toBe(`cannot write in the output bucket s3://${BUCKET}/refusals: ${why} (${code})`);
  });

  it("S3: any other answer names the endpoint, the service's code and the HTTP status, never the service's own message", async () => {
    const hop = await startHop(endpoint, (request) => (request.method === "PUT" ? { status: 409, code: "OperationAborted" } : "forward"));
    const error = (await throughHop(hop, () => thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/refusals`)))) as OutputSaveError;
    expect(error.errno).toBe("OperationAborted");
    expect(error.message).toBe(`cannot write in the output bucket s3://${BUCKET}/refusals: ${hop.url} answered OperationAborted (HTTP 409) (OperationAborted)`);
    expect(error.message).not.toContain("said by the test's hop");
    expect((error.cause as Error).name).toBe("OperationAborted");
  });

  it("S3: a connection cut at every try is refused as unreachable (ECONNRESET), naming the endpoint", async () => {
    const hop = await startHop(endpoint, (request) => (request.method === "PUT" ? "reset" : "forward"));
    const error = (await throughHop(hop, () => thrownBy(() => s3Outputs().prepare(`s3://${BUCKET}/cut`)))) as OutputSaveError;
    expect(error.errno).toBe("ECONNRESET");
    expect(error.message).toBe(`cannot write in the output bucket s3://${BUCKET}/cut: cannot reach ${hop.url} (ECONNRESET)`);
  });

  it.each(["BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch"])("S3: an output refused as %s is refused for bytes that did not match their sha256", async (code) => {
    const hop = await startHop(endpoint, (request) => (request.method === "PUT" ? { status: 400, code } : "forward"));
    const path = `s3://${BUCKET}/digest/fox.png`;
    const error = (await throughHop(hop, () => thrownBy(() => s3Outputs().write(path, Buffer.from("fox"))))) as OutputSaveError;
    expect(error.errno).toBe(code);
    expect(error.message).toBe(`cannot write ${path}: the bytes that arrived did not match their sha256, so the bucket refused them (${code})`);
  });

  it("S3: the output's sha256 is sent with it (ChecksumSHA256), and a server that answers with the checksum it stored is believed: nothing is read back", async () => {
    const bytes = randomBytes(5_000);
    const hop = await startHop(endpoint, () => "forward", {
      answerHeaders: (request, body, headers) => (request.method === "PUT" ? { ...headers, "x-amz-checksum-sha256": sha256Base64(body) } : headers),
    });
    await throughHop(hop, () => s3Outputs().write(`s3://${BUCKET}/told/fox.png`, bytes));
    expect(hop.requests.map((request) => request.method)).toEqual(["PUT"]);
    expect(hop.requests[0]!.headers["x-amz-checksum-sha256"]).toBe(sha256Base64(bytes));
    expect((await objectBytes("told/fox.png")).equals(bytes)).toBe(true);
  });

  it("S3: a server whose stored checksum differs from the one sent has the object removed, without reading it back", async () => {
    const hop = await startHop(endpoint, () => "forward", {
      body: (request, body) => (request.method === "PUT" && body.length > 0 ? Buffer.concat([body, Buffer.from("!")]) : body),
      answerHeaders: (request, body, headers) => (request.method === "PUT" ? { ...headers, "x-amz-checksum-sha256": sha256Base64(body) } : headers),
    });
    const path = `s3://${BUCKET}/told-other/fox.png`;
    const error = (await throughHop(hop, () => thrownBy(() => s3Outputs().write(path, randomBytes(5_000))))) as OutputSaveError;
    expect(error.errno).toBe("ChecksumMismatch");
    expect(hop.requests.map((request) => request.method)).toEqual(["PUT", "DELETE"]);
    expect(await keysUnder("told-other/")).toEqual([]);
  });

  it("S3: bytes changed on the way whose removal is refused too are reported as such", async () => {
    const hop = await startHop(endpoint, (request) => (request.method === "DELETE" ? { status: 403, code: "AccessDenied" } : "forward"), {
      body: (request, body) => (request.method === "PUT" && body.length > 0 ? Buffer.concat([body, Buffer.from("!")]) : body),
    });
    const path = `s3://${BUCKET}/kept-corrupt/fox.png`;
    const error = (await throughHop(hop, () => thrownBy(() => s3Outputs().write(path, randomBytes(5_000))))) as OutputSaveError;
    expect(error.message).toBe(`cannot write ${path}: the bucket stored bytes whose sha256 differs from what was sent (removing the object failed too) (ChecksumMismatch)`);
    await inspector.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "kept-corrupt/fox.png" }));
  });

  it("S3: an output that cannot be read back for its check is refused as unchecked, saying why", async () => {
    const hop = await startHop(endpoint, (request) => (request.method === "GET" ? { status: 403, code: "AccessDenied" } : "forward"));
    const path = `s3://${BUCKET}/unchecked/fox.png`;
    const error = (await throughHop(hop, () => thrownBy(() => s3Outputs().write(path, Buffer.from("fox"))))) as OutputSaveError;
    expect(error.errno).toBe("AccessDenied");
    expect(error.message).toBe(`cannot check what was written to ${path}: access denied: these credentials may not do this in bucket "${BUCKET}" (AccessDenied)`);
  });

  it("S3: reading an object that is not there is an OutputReadError naming the service's code; finding it is null", async () => {
    const path = `s3://${BUCKET}/never-written/fox.png`;
    const error = (await thrownBy(() => readOutput(path))) as OutputReadError;
    expect(error).toBeInstanceOf(OutputReadError);
    expect(error.code).toBe("output_unreadable");
    expect(error.errno).toBe("NoSuchKey");
    expect(error.path).toBe(path);
    expect(error.message).toBe(`cannot read ${path}: ${endpoint} answered NoSuchKey (HTTP 404) (NoSuchKey)`);
    expect((error.cause as Error).name).toBe("NoSuchKey");
    expect(await findOutput(path)).toBeNull();
  });

  it("S3: an object whose HEAD is refused is an OutputReadError, not 'not there'", async () => {
    const path = `s3://${BUCKET}/head-refused/fox.png`;
    const hop = await startHop(endpoint, (request) => (request.method === "HEAD" ? { status: 403 } : "forward"));
    const error = (await throughHop(hop, () => thrownBy(() => findOutput(path)))) as OutputReadError;
    expect(error).toBeInstanceOf(OutputReadError);
    expect(error.message).toMatch(new RegExp(`^cannot read ${path}: access denied: these credentials may not do this in bucket "${BUCKET}" \\(\\w+\\)$`));
  });

  it("S3: a stream refused by the bucket is an OutputReadError; one answered 412 (a server that honours If-Match: the object was replaced) is output_changed", async () => {
    const path = `s3://${BUCKET}/stream-refused/fox.png`;
    await s3Outputs().write(path, Buffer.from("fox"));
    let refusal: HopAnswer = { status: 403, code: "AccessDenied" };
    const hop = await startHop(endpoint, (request) => (request.method === "GET" ? refusal : "forward"));
    await throughHop(hop, async () => {
      const saved = await findOutput(path);
      expect(saved!.size).toBe(3);
      const refused = (await thrownBy(() => saved!.stream())) as OutputReadError;
      expect(refused.code).toBe("output_unreadable");
      expect(refused.message).toBe(`cannot read ${path}: access denied: these credentials may not do this in bucket "${BUCKET}" (AccessDenied)`);
      refusal = { status: 412, code: "PreconditionFailed" };
      const changed = (await thrownBy(() => saved!.stream({ start: 0, end: 1 }))) as OutputReadError;
      expect(changed.code).toBe("output_changed");
      expect(changed.errno).toBe("ObjectChanged");
    });
    // The stream asked for the object as it was sized (its ETag), and for the range given.
    const gets = hop.requests.filter((request) => request.method === "GET");
    expect(gets[0]!.headers["if-match"]).toMatch(/^"[0-9a-f]{32}"$/);
    expect(gets[0]!.headers.range).toBeUndefined();
    expect(gets[1]!.headers.range).toBe("bytes=0-1");
  });
});

describe("S3: reading from a server that tells no ETag", () => {
  it("S3: an object whose HEAD tells no ETag is streamed as it is, without If-Match (nothing to compare it with)", async () => {
    const path = `s3://${BUCKET}/no-etag/fox.png`;
    await s3Outputs().write(path, Buffer.from("a fox"));
    const hop = await startHop(endpoint, () => "forward", {
      answerHeaders: (request, _body, headers) => (request.method === "HEAD" ? Object.fromEntries(Object.entries(headers).filter(([name]) => name !== "etag")) : headers),
    });
    const streamed = await throughHop(hop, async () => {
      const saved = await findOutput(path);
      const chunks: Buffer[] = [];
      for await (const chunk of await saved!.stream()) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString();
    });
    expect(streamed).toBe("a fox");
    expect(hop.requests.find((request) => request.method === "GET")!.headers["if-match"]).toBeUndefined();
  });
});

describe("S3 outputs end to end (D sandbox, s3rver, both over loopback)", () => {
  let world: DWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  it("S3: a D job run by the library is saved in the bucket (output and its .json), its path s3://bucket/prefix/REF.png, its sha256 that of the stored object", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_OUTPUT_DIR: `s3://${BUCKET}/library/` } });
    try {
      const job = await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 256, height: 256 } }, { ref: "lighthouse" });
      expect(job.outDir).toBe(`s3://${BUCKET}/library`);
      expect((await gate.wait(job.id)).state).toBe("succeeded");
      const [output] = await gate.outputs(job.id);
      expect(output!.path).toBe(`s3://${BUCKET}/library/lighthouse.png`);
      expect(await keysUnder("library/")).toEqual(["library/lighthouse.png", "library/lighthouse.png.json"]);
      const stored = await objectBytes("library/lighthouse.png");
      expect(sha256(stored)).toBe(output!.sha256);
      expect(stored.length).toBe(output!.bytes);
      expect(JSON.parse((await objectBytes("library/lighthouse.png.json")).toString("utf8"))).toEqual(output!.metadata);
      // Nothing went to a local folder.
      expect(existsSync(world.env.MEDIAGATE_OUTPUT_DIR!)).toBe(false);
    } finally {
      await gate.close();
    }
  });

  for (const how of ["503", "reset"] as const) {
    it(`S3, issue 36 finding 1: a bucket refusing the output's write for a while (${how === "503" ? "503 ServiceUnavailable" : "connection cut"}) leaves the paid job capturing, blocked output_unwritable; once it accepts writes again the bytes arrive, downloaded once, submitted once`, async () => {
      world = await startDWorld({ renderTimeMs: 200 });
      const hop = await startRefusingHop(endpoint, how);
      pointAwsAt(hop.url);
      const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_OUTPUT_DIR: `s3://${BUCKET}/refused-${how}/` } });
      try {
        const job = await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 256, height: 256 } }, { ref: "lighthouse" });
        const blocked: Array<{ state: string; reason: string | null }> = [];
        // The library's wait returns at the block (the job waits for something outside it), reporting it on the way.
        let ended = await gate.wait(job.id, {
          onProgress: (update) => {
            if (update.blockedCode === "output_unwritable") blocked.push({ state: update.state, reason: update.reason });
          },
        });
        expect(ended.state).toBe("capturing");
        expect(ended.blockedCode).toBe("output_unwritable");
        // The bucket works again; the next try (a second later) saves what was downloaded.
        hop.refusing = false;
        for (let tries = 0; tries < 600 && ended.state === "capturing"; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          ended = (await gate.get(job.id))!;
        }
        expect(ended.state).toBe("succeeded");
        expect(hop.refused).toBeGreaterThanOrEqual(1);
        expect(blocked[0]!.state).toBe("capturing");
        expect(blocked[0]!.reason).toMatch(new RegExp(`^rendered, but cannot (write|save to) s3://${BUCKET}/refused-${how}/lighthouse.png: .*; saving again in 1 s`));
        const [output] = await gate.outputs(job.id);
        expect(sha256(await objectBytes(`refused-${how}/lighthouse.png`))).toBe(output!.sha256);
        expect(world.submits()).toBe(1);
        expect(world.sandbox.requests().filter((request) => request.url.startsWith("/d-results/"))).toHaveLength(1);
      } finally {
        await gate.close();
        await hop.close();
      }
    });
  }

  it("S3, issue 36 finding 1: an object replaced between the HEAD that sized it and the GET that streams it is not streamed under the saved output's size and ETag: reading it is refused as output_changed (which the API answers 409)", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_OUTPUT_DIR: `s3://${BUCKET}/replaced/` } });
    let job;
    try {
      job = await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: "a pier", width: 256, height: 256 } }, { ref: "pier" });
      expect((await gate.wait(job.id)).state).toBe("succeeded");
    } finally {
      await gate.close();
    }
    const [output] = await (async () => {
      const again = await Mediagate.open({ env: { ...world!.env, MEDIAGATE_OUTPUT_DIR: `s3://${BUCKET}/replaced/` }, runEngine: false });
      try {
        return await again.outputs(job.id);
      } finally {
        await again.close();
      }
    })();
    const saved = await findOutput(output!.path);
    expect(saved!.size).toBe(output!.bytes);
    // Another writer replaces the object after its size was read and before its bytes are.
    await inspector.send(new PutObjectCommand({ Bucket: BUCKET, Key: "replaced/pier.png", Body: Buffer.from("not the saved image") }));
    const error = (await thrownBy(() => saved!.stream())) as OutputReadError;
    expect(error).toBeInstanceOf(OutputReadError);
    expect(error.code).toBe("output_changed");
    expect(error.message).toBe(`cannot read ${output!.path}: the object was replaced while it was being read (ObjectChanged)`);
  });

  it("S3: the API serves an output from the bucket with its sha256 as ETag and byte ranges passed through", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const runtime = createRuntime({ overrides: { ...world.env, MEDIAGATE_OUTPUT_DIR: `s3://${BUCKET}/api` } });
    const store = await runtime.store();
    const engine = await runtime.engine();
    const log = createLogger({ level: "silent", secrets: runtime.secrets });
    const app = await buildServer({ store, engine, providers: runtime.providers, log, now: () => Date.now() }, { runtime, log });
    try {
      const url = await app.listen({ port: 0, host: "127.0.0.1" });
      engine.start();
      const created = await fetch(`${url}/v1/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ref: "harbour", provider: "d", model: "gen-2-pro", input: { prompt: "a harbour", width: 256, height: 256 } }),
      });
      expect(created.status).toBe(201);
      const { id } = (await created.json()) as { id: string };
      let job: { state: string; outputs: Array<{ href: string; sha256: string }> } | undefined;
      for (let tries = 0; tries < 200 && job?.state !== "succeeded"; tries++) {
        if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 50));
        job = (await (await fetch(`${url}/v1/jobs/${id}`)).json()) as typeof job;
      }
      expect(job!.state).toBe("succeeded");
      const [output] = job!.outputs;
      // The API names it by its href; where it lies (the bucket and key) is the server's.
      expect(output).not.toHaveProperty("path");
      expect((await store.outputs(id))[0]!.path).toBe(`s3://${BUCKET}/api/harbour.png`);
      const stored = await objectBytes("api/harbour.png");

      const whole = await fetch(`${url}${output!.href}`);
      expect(whole.status).toBe(200);
      expect(whole.headers.get("etag")).toBe(`"${sha256(stored)}"`);
      expect(Buffer.from(await whole.arrayBuffer()).equals(stored)).toBe(true);
      const part = await fetch(`${url}${output!.href}`, { headers: { range: "bytes=8-23" } });
      expect(part.status).toBe(206);
      expect(part.headers.get("content-range")).toBe(`bytes 8-23/${stored.length}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(stored.subarray(8, 24))).toBe(true);
      const tail = await fetch(`${url}${output!.href}`, { headers: { range: "bytes=-5" } });
      expect(Buffer.from(await tail.arrayBuffer()).equals(stored.subarray(stored.length - 5))).toBe(true);
      expect((await fetch(`${url}${output!.href}`, { headers: { "if-none-match": `"${sha256(stored)}"` } })).status).toBe(304);
      expect(existsSync(join(world.folder, "out"))).toBe(false);
    } finally {
      await app.close();
      await runtime.close();
    }
  });
});
