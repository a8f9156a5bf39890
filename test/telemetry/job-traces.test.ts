import { afterEach, describe, expect, it } from "vitest";
import { Mediagate } from "../../src/index.js";
import { openStore } from "../../src/store/open.js";
import { D_KEY, type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../helpers/otlp-receiver.js";
import { type StoreLocation, storeLocations } from "../helpers/store-locations.js";

// Issue 37, part 3: a job's trace, exported over OTLP/HTTP to a receiver this test starts on loopback, which decodes
// what arrives (JSON as it is, protobuf with OpenTelemetry's own .proto files), against the sandbox's D, on each store.

const locations = storeLocations();

const jobSpanOf = (spans: ReceivedSpan[], jobId: string) => spans.find((span) => span.name === "mediagate.job" && span.attributes["mediagate.job.id"] === jobId);

for (const makeLocation of locations) {
  for (const protocol of ["http/protobuf", "http/json"] as const) {
    describe(`a job's trace (${makeLocation().name}, OTLP ${protocol}, D sandbox over loopback)`, () => {
      let world: DWorld | undefined;
      let receiver: OtlpReceiver | undefined;
      let location: StoreLocation | undefined;
      let gate: Mediagate | undefined;
      afterEach(async () => {
        await gate?.close();
        await location?.cleanup();
        await receiver?.close();
        await world?.close();
        gate = world = receiver = location = undefined;
      });

      it("one mediagate.job span from admission to the end, with its attributes, state events and a child span per provider request", async () => {
        world = await startDWorld({ renderTimeMs: 50 });
        receiver = await startOtlpReceiver();
        location = makeLocation();
        const storeAddress = await location.address(world.folder);
        gate = await Mediagate.open({
          env: {
            ...world.env,
            MEDIAGATE_STORE: storeAddress,
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
            OTEL_EXPORTER_OTLP_HEADERS: "x-backend-key=backend%20secret,x-team=media",
          },
        });
        const job = await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: "a traced fox", width: 256, height: 256 } }, { ref: "traced-fox" });
        const done = await gate.wait(job.id);
        expect(done.state).toBe("succeeded");
        // Closing exports what is left: the receiver then holds every span of the job.
        await gate.close();
        gate = undefined;
        const spans = await receiver.until((received) => jobSpanOf(received, job.id) !== undefined);

        const jobSpan = jobSpanOf(spans, job.id)!;
        expect(jobSpan.parentSpanId).toBe("");
        expect(jobSpan.traceId).toMatch(/^[0-9a-f]{32}$/);
        expect(jobSpan.startMs).toBe(done.createdAt);
        expect(jobSpan.endMs).toBe(done.finishedAt);
        expect(jobSpan.statusCode).not.toBe(2);
        expect(jobSpan.resource["service.name"]).toBe("mediagate");
        expect(jobSpan.attributes).toMatchObject({
          "mediagate.job.id": job.id,
          "mediagate.job.ref": "traced-fox",
          "mediagate.job.state": "succeeded",
          "gen_ai.provider.name": "d",
          "gen_ai.request.model": "gen-2-pro",
          "gen_ai.operation.name": "image_generation",
          "gen_ai.output.type": "image",
          "mediagate.cost.micro_usd": done.chargeMicroUsd ?? done.estimateMicroUsd,
        });
        expect(jobSpan.attributes["mediagate.batch.id"]).toBeUndefined();
        expect(jobSpan.attributes["mediagate.queue.wait_ms"]).toBeGreaterThanOrEqual(0);
        // One event per change of state, in order, at the times the event log holds.
        const states = jobSpan.events.filter((event) => event.name === "mediagate.job.state").map((event) => event.attributes["mediagate.job.state"]);
        expect(states).toEqual(["queued", "submitting", "running", "capturing", "succeeded"]);
        const reader = await openStore(storeAddress);
        const events = await reader.events(job.id);
        await reader.close();
        expect(jobSpan.events.map((event) => event.atMs)).toEqual(events.filter((event) => event.fromState !== event.toState).map((event) => event.at));

        // Every provider request is a client span under the job's span, in the same trace.
        const children = spans.filter((span) => span.parentSpanId === jobSpan.spanId);
        expect(children.every((span) => span.traceId === jobSpan.traceId && span.kind === 3)).toBe(true);
        const names = new Set(children.map((span) => span.name));
        expect(names).toEqual(new Set(["mediagate.provider.submit", "mediagate.provider.poll", "mediagate.provider.download"]));
        const submit = children.find((span) => span.name === "mediagate.provider.submit")!;
        const sandboxHost = new URL(world.env.MEDIAGATE_D_BASE_URL!);
        expect(submit.attributes).toMatchObject({ "http.request.method": "POST", "http.response.status_code": 200, "server.address": sandboxHost.hostname, "server.port": Number(sandboxHost.port), "mediagate.job.id": job.id });
        const download = children.find((span) => span.name === "mediagate.provider.download")!;
        expect(download.attributes).toMatchObject({ "http.request.method": "GET", "http.response.status_code": 200 });

        // What went out: the configured encoding, to /v1/traces under the endpoint, with the configured headers.
        const exported = receiver.exports[0]!;
        expect(exported.path).toBe("/v1/traces");
        expect(exported.contentType).toContain(protocol === "http/json" ? "application/json" : "application/x-protobuf");
        expect(exported.headers["x-backend-key"]).toBe("backend secret");
        expect(exported.headers["x-team"]).toBe("media");

        // Secrets never in attributes: no key, no header value, no query string (D's result link is signed in it).
        const everything = JSON.stringify(spans);
        expect(everything).not.toContain(D_KEY);
        expect(everything).not.toContain("backend secret");
        // The sandbox's result links are signed in their query string (`?expires=…&sig=…`).
        expect(world.sandbox.requests({ provider: "d" }).some((request) => request.url.includes("sig="))).toBe(true);
        expect(everything).not.toContain("sig=");
        for (const span of spans) {
          const url = span.attributes["url.full"];
          if (typeof url === "string") expect(url).not.toContain("?");
        }
      });
    });
  }
}
