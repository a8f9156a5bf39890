import type { ChildProcess } from "node:child_process";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { type CliResult, collect, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { type OtlpReceiver, startOtlpReceiver } from "../helpers/otlp-receiver.js";
import { type StoreLocation, storeLocations } from "../helpers/store-locations.js";
import { tempDir } from "../helpers/stores.js";

// Issue 37, part 3, through `mediagate serve` as built: an API request's traceparent parents the job's span, B's
// signed webhooks about the job are spans under it, and the notification of its end carries its traceparent.

const NOTIFY_SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** `serve` on a port picked here (its public URL, where B's webhooks go, names it), tried again if the port was taken meanwhile. */
async function startServe(env: Record<string, string>): Promise<{ serve: ChildProcess; finished: Promise<CliResult>; url: string }> {
  for (let attempt = 1; ; attempt++) {
    const url = `http://127.0.0.1:${await freePort()}`;
    const serve = startCli(["serve", "--port", new URL(url).port], { env: { ...env, MEDIAGATE_PUBLIC_URL: url } });
    const finished = collect(serve, 120_000);
    try {
      await waitForOutput(serve, /mediagate serve on /);
      return { serve, finished, url };
    } catch (error) {
      const { stderr } = await finished;
      if (attempt < 5 && /EADDRINUSE/.test(stderr)) continue;
      throw error;
    }
  }
}

/** A notification receiver: answers 204 and keeps each request's headers; `next` resolves at the first request of a type. */
async function startNotificationReceiver() {
  const received: Array<{ headers: IncomingHttpHeaders; type: string }> = [];
  const waiters = new Set<() => void>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ headers: request.headers, type: (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { type: string }).type });
      response.writeHead(204).end();
      for (const waiter of waiters) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    next(type: string) {
      return new Promise<{ headers: IncomingHttpHeaders }>((resolve) => {
        const check = () => {
          const found = received.find((entry) => entry.type === type);
          if (!found) return;
          waiters.delete(check);
          resolve(found);
        };
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

for (const makeLocation of storeLocations()) {
  describe(`traces through mediagate serve (${makeLocation().name}, B sandbox, real HTTP)`, () => {
    let sandbox: Sandbox | undefined;
    let receiver: OtlpReceiver | undefined;
    let notifications: Awaited<ReturnType<typeof startNotificationReceiver>> | undefined;
    let serve: ChildProcess | undefined;
    let location: StoreLocation | undefined;
    let folder: ReturnType<typeof tempDir> | undefined;
    afterEach(async () => {
      serve?.kill("SIGKILL");
      await sandbox?.stop();
      await notifications?.close();
      await receiver?.close();
      await location?.cleanup();
      folder?.remove();
      sandbox = receiver = notifications = serve = location = folder = undefined;
    });

    it("the API's traceparent parents the job span; B's webhooks are spans under it; its notification carries its traceparent", async () => {
      sandbox = await startSandbox({ providers: ["b"], emulators: { b: { allowLocalWebhookUrls: true, queueTimeMs: 100, renderTimeMs: 500 } } });
      receiver = await startOtlpReceiver();
      notifications = await startNotificationReceiver();
      location = makeLocation();
      folder = tempDir();
      const started = await startServe({
        ...sandbox.environment,
        MEDIAGATE_STORE: await location.address(folder.path),
        MEDIAGATE_OUTPUT_DIR: `${folder.path}/out`,
        MEDIAGATE_NOTIFY_SECRET: NOTIFY_SECRET,
        MEDIAGATE_ALLOW_PRIVATE_URLS: "1",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: "render-gateway",
        // The SDK's own variable: spans are exported 20 ms after they end rather than 5 s.
        OTEL_BSP_SCHEDULE_DELAY: "20",
      });
      serve = started.serve;

      const answer = await fetch(`${started.url}/v1/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
        body: JSON.stringify({
          ref: "traced-clip",
          provider: "b",
          model: "vendorx/video-2.5",
          operation: "image-to-video",
          input: { image: "https://images.example/k.png", resolution: "720p", duration_s: 5 },
          notify_url: notifications.url,
        }),
      });
      expect(answer.status).toBe(201);
      const job = (await answer.json()) as { id: string };

      const notified = await notifications.next("job.succeeded");
      const spans = await receiver.until((received) => received.some((span) => span.name === "mediagate.job") && received.some((span) => span.name === "mediagate.webhook"));
      const jobSpan = spans.find((span) => span.name === "mediagate.job")!;
      expect(jobSpan).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN });
      expect(jobSpan.resource["service.name"]).toBe("render-gateway");
      expect(jobSpan.attributes).toMatchObject({
        "mediagate.job.id": job.id,
        "mediagate.job.ref": "traced-clip",
        "gen_ai.provider.name": "b",
        "gen_ai.operation.name": "video_generation",
        "gen_ai.output.type": "video",
      });
      // The receiver's spans join the job's trace as children of the job's span.
      expect(notified.headers.traceparent).toBe(`00-${CALLER_TRACE}-${jobSpan.spanId}-01`);

      const webhook = spans.find((span) => span.name === "mediagate.webhook")!;
      expect(webhook).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: jobSpan.spanId, kind: 2 });
      expect(webhook.attributes).toMatchObject({ "http.request.method": "POST", "http.response.status_code": 200, "server.address": "127.0.0.1", "url.path": `/webhooks/b/${job.id}`, "mediagate.job.id": job.id });
      const submit = spans.find((span) => span.name === "mediagate.provider.submit")!;
      expect(submit).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: jobSpan.spanId });

      // Secrets never in attributes: B's key and webhook secret, the notification secret, the notify URL, the store.
      const everything = JSON.stringify(spans);
      for (const secret of [sandbox.environment.MEDIAGATE_B_API_KEY, sandbox.environment.MEDIAGATE_B_WEBHOOK_SECRET, NOTIFY_SECRET, notifications.url, await location.address(folder.path)]) {
        if (secret) expect(everything).not.toContain(secret);
      }

      serve.kill("SIGTERM");
      expect((await started.finished).code).toBe(0);
    });
  });
}
