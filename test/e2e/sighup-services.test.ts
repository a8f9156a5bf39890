import { afterEach, describe, expect, it } from "vitest";
import { Mediagate } from "../../src/index.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { collect, startCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe("worker and serve on SIGHUP (a closed terminal)", { timeout: 90_000 }, () => {
  for (const command of [["worker"], ["serve", "--port", "0"]]) {
    it(`${command[0]}: SIGHUP stops it like SIGTERM: submits in flight record their answer, leases are released, no job becomes unknown_submission`, async () => {
      world = await startDWorld({ renderTimeMs: 2_000 });
      // Slow submits, so the hang-up lands while some are in flight.
      world.sandbox.injectFault({ provider: "d", method: "POST", path: /^\/d\/v1\//, fault: { kind: "delay", ms: 400 } });
      const library = await Mediagate.open({ env: world.env, runEngine: false });
      for (let index = 0; index < 8; index++) {
        await library.submit({ provider: "d", model: "gen-2-pro", input: { prompt: `hung up ${index}`, width: 256, height: 256 } }, { ref: `hup-${index}` });
      }
      await library.close();
      const child = startCli(command, { env: world.env });
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const done = collect(child, 60_000);
      const deadline = Date.now() + 30_000;
      while (world.submits() < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      child.kill("SIGHUP");
      const result = await done;
      expect(result.signal).toBeNull();
      expect(result.code, stderr).toBe(0);
      expect(stderr).toMatch(/stopped; leases released/);
      const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
      const jobs = await store.listJobs();
      await store.close();
      expect(jobs.filter((job) => job.state === "unknown_submission" || job.state === "submitting")).toEqual([]);
      expect(jobs.filter((job) => job.leaseOwner !== null)).toEqual([]);
      expect(world.submits()).toBe(jobs.filter((job) => job.attempts > 0).length);
    });
  }
});
