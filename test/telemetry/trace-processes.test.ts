import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { Mediagate } from "../../src/index.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { type OtlpReceiver, startOtlpReceiver } from "../helpers/otlp-receiver.js";
import { type StoreLocation, storeLocations } from "../helpers/store-locations.js";

// Issue 37, part 3, across processes: the built CLI, the sandbox's D and an OTLP/HTTP receiver, all over loopback.

const pro = (prompt: string) => ({ provider: "d" as const, model: "gen-2-pro", input: { prompt, width: 256, height: 256 } });

describe("traces' configuration in a command", () => {
  let world: DWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  it("a bad OTEL_ value refuses the command in one sentence naming the variable (exit 3) before anything is sent", async () => {
    world = await startDWorld();
    const generate = ["generate", "--provider", "d", "--model", "gen-2-pro", "--input", JSON.stringify(pro("refused").input)];
    const grpc = await runCli(generate, { env: { ...world.env, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" } });
    expect(grpc.code).toBe(3);
    expect(grpc.stderr.trim().split("\n")).toHaveLength(1);
    expect(grpc.stderr).toContain("OTEL_EXPORTER_OTLP_PROTOCOL");
    const headers = await runCli(generate, { env: { ...world.env, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_HEADERS: "api-key" } });
    expect(headers.code).toBe(3);
    expect(headers.stderr).toContain("OTEL_EXPORTER_OTLP_HEADERS");
    expect(world.submits()).toBe(0);
  });
});

for (const makeLocation of storeLocations()) {
  describe(`a job resumed by another process continues its trace (${makeLocation().name})`, () => {
    let world: DWorld | undefined;
    let receiver: OtlpReceiver | undefined;
    let location: StoreLocation | undefined;
    const gates: Mediagate[] = [];
    afterEach(async () => {
      for (const gate of gates.splice(0)) await gate.close();
      await location?.cleanup();
      await receiver?.close();
      await world?.close();
      world = receiver = location = undefined;
    });

    it("admitted here, submitted by a worker killed while it runs, finished by another engine: one trace, one job span under the stored ids, every request span its child", async () => {
      // Ten minutes of render on the sandbox's clock: the job is still running when the first worker is killed.
      world = await startDWorld({ renderTimeMs: 600_000 });
      receiver = await startOtlpReceiver();
      location = makeLocation();
      const env = { ...world.env, MEDIAGATE_STORE: await location.address(world.folder), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };

      const admitting = await Mediagate.open({ env, runEngine: false });
      gates.push(admitting);
      const job = await admitting.submit(pro("resumed fox"), { ref: "resumed-fox" });
      expect(job.trace).not.toBeNull();
      const stored = job.trace!;

      // The first worker exports each span soon after it ends (OTEL_BSP_SCHEDULE_DELAY, the SDK's own variable).
      const worker = startCli(["worker", "--json"], { env: { ...env, OTEL_BSP_SCHEDULE_DELAY: "20" } });
      const workerDone = collect(worker);
      // Killed once it has recorded the provider's acceptance (its --json line) and exported the submit's span.
      await new Promise<void>((resolve, reject) => {
        worker.once("exit", () => reject(new Error("the worker exited before the job was running")));
        let stdout = "";
        worker.stdout!.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes('"state":"running"')) resolve();
        });
      });
      const submitted = await receiver.until((spans) => spans.some((span) => span.name === "mediagate.provider.submit"));
      worker.kill("SIGKILL");
      await once(worker, "exit").catch(() => undefined);
      await workerDone;
      const submit = submitted.find((span) => span.name === "mediagate.provider.submit")!;
      expect(submit.traceId).toBe(stored.traceId);
      expect(submit.parentSpanId).toBe(stored.spanId);
      // Nothing ended in the killed worker: no job span from it.
      expect(submitted.some((span) => span.name === "mediagate.job")).toBe(false);

      world.sandbox.clock.advance(601_000);
      const resuming = await Mediagate.open({ env });
      gates.push(resuming);
      const done = await resuming.wait(job.id);
      expect(done.state).toBe("succeeded");
      await resuming.close();
      gates.pop();
      const spans = await receiver.until((received) => received.some((span) => span.name === "mediagate.job"));

      const jobSpans = spans.filter((span) => span.name === "mediagate.job");
      expect(jobSpans).toHaveLength(1);
      const jobSpan = jobSpans[0]!;
      expect(jobSpan).toMatchObject({ traceId: stored.traceId, spanId: stored.spanId, parentSpanId: "", startMs: job.createdAt, endMs: done.finishedAt });
      const states = jobSpan.events.map((event) => event.attributes["mediagate.job.state"]);
      expect(states).toEqual(["queued", "submitting", "running", "capturing", "succeeded"]);
      const requests = spans.filter((span) => span.name.startsWith("mediagate.provider."));
      expect(new Set(requests.map((span) => span.name))).toEqual(new Set(["mediagate.provider.submit", "mediagate.provider.poll", "mediagate.provider.download"]));
      for (const request of requests) expect([request.traceId, request.parentSpanId]).toEqual([stored.traceId, stored.spanId]);
    });
  });
}
