import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isTerminal } from "../../src/core/job.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { collect, runCli, startCli } from "../helpers/cli.js";
import { waitForOutput } from "../helpers/cli-output.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { engineFor } from "../helpers/engine.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe("finding 11: provider addresses that can never be reached, and retries that are visible", () => {
  it("MEDIAGATE_D_BASE_URL on a port fetch never connects to (port 1) exits 3 naming the variable, before anything is stored or sent", async () => {
    world = await startDWorld();
    const result = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "x", "--width", "256", "--height", "256"], {
      env: { ...world.env, MEDIAGATE_D_BASE_URL: "http://127.0.0.1:1/d" },
    });
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      "mediagate: MEDIAGATE_D_BASE_URL uses port 1, which fetch never connects to (one of the Fetch standard's blocked ports): choose another port\n",
    );
    expect(existsSync(world.env.MEDIAGATE_STORE!.slice("sqlite:".length))).toBe(false);
  });

  it("a base URL carrying a user and password exits 3 without repeating it", async () => {
    const result = await runCli(["jobs"], { env: { MEDIAGATE_STORE: "sqlite::memory:", MEDIAGATE_F_BASE_URL: "https://me:pw-in-base-url-77@api.example/f" } });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^mediagate: MEDIAGATE_F_BASE_URL must not carry a user or password/);
    expect(result.stderr).not.toContain("pw-in-base-url-77");
  });

  it("worker shows each try while D refuses connections (D unreachable, next try in N s), then sends the job once D is back", async () => {
    world = await startDWorld({ renderTimeMs: 300 });
    const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
    try {
      const job = await engineFor(world, store).enqueue({ model: "gen-2-pro", input: { prompt: "refused at first", width: 256, height: 256 } });
      await world.sandbox.startOutage();
      const worker = startCli(["worker"], { env: world.env });
      const finished = collect(worker, 60_000);
      const [line] = await waitForOutput(worker, /^.* queued \(D unreachable .*\)$/m);
      await world.sandbox.endOutage();
      for (let tries = 0; tries < 600 && !isTerminal((await store.getJob(job.id))!.state); tries++) await new Promise((resolve) => setTimeout(resolve, 50));
      worker.kill("SIGTERM");
      const result = await finished;

      expect(line).toMatch(new RegExp(`^\\S+ ${job.id} ${job.ref} queued \\(D unreachable \\(request to \\S+ not sent: connection refused \\(ECONNREFUSED\\)\\); try 1 of 8 failed, next try in \\d+ s, at \\d\\d:\\d\\d:\\d\\d UTC\\)$`));
      expect(result.code, result.stderr).toBe(0);
      expect((await store.getJob(job.id))!.state).toBe("succeeded");
      expect(world.submits()).toBe(1);
    } finally {
      await store.close();
    }
  }, 90_000);
});
