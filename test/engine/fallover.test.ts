import { afterEach, describe, expect, it } from "vitest";
import { Mediagate } from "../../src/index.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { openStore } from "../../src/store/open.js";
import { startWorld, type World } from "../helpers/world.js";

/**
 * What a fall-over writes (issue 36, finding 12: the mutation run found it
 * checked only by CLI runs in child processes): the next target's request,
 * the route moved on with the target left recorded and why, a fresh attempt,
 * and the hand-over in the job's event log.
 */
let world: World | undefined;
let gate: Mediagate | undefined;
afterEach(async () => {
  await gate?.close();
  gate = undefined;
  await world?.close();
  world = undefined;
});

const ROUTE = ["d/gen-2-pro", "f/img-v2"];

describe("a fall-over to the next target (in-process engine, real sandbox and store)", { timeout: 60_000 }, () => {
  it("D out of credits: the job that met the refusal and the ones queued behind it move to F, each with D recorded as tried and why, a fresh attempt, and the hand-over in its events; a job with no target left fails", async () => {
    const emulators = createAllEmulators({ d: { renderTimeMs: 200, balanceMicroUsd: 0 }, f: { renderMs: { min: 200, max: 300 } } });
    world = await startWorld(emulators.list);
    gate = await Mediagate.open({ env: world.env, runEngine: false });
    const routed = [];
    for (const prompt of ["a fox", "a heron", "a lynx"]) routed.push(await gate.submit({ task: "image", prompt, size: "1024x768", route: ROUTE }));
    const alone = await gate.submit({ task: "image", prompt: "a wren", size: "1024x768", route: ["d/gen-2-pro"] });
    await gate.close();
    gate = await Mediagate.open({ env: world.env });
    const ended = await Promise.all(routed.map((job) => gate!.wait(job.id)));
    for (const job of ended) {
      expect(job).toMatchObject({ state: "succeeded", provider: "f", model: "img-v2", attempts: 1 });
      expect(job.route!.current).toBe("f/img-v2");
      expect(job.route!.next).toEqual([]);
      expect(job.route!.failingSince).toBeNull();
      expect(job.route!.tried).toEqual([
        { name: "d/gen-2-pro", provider: "d", model: "gen-2-pro", providerJobId: null, reason: expect.stringMatching(/^D (refused it before accepting|is halted)/), at: expect.any(Number) },
      ]);
    }
    // The one with no target left is not moved: it ends (or waits) at D, never sent anywhere else.
    const left = await gate.wait(alone.id);
    expect(left.provider).toBe("d");
    expect(left.route!.tried).toEqual([]);
    expect(["failed", "queued"]).toContain(left.state);

    const store = await openStore(world.env.MEDIAGATE_STORE!);
    try {
      for (const job of ended) {
        const handed = (await store.events(job.id)).filter((event) => (event.detail as { fallover?: unknown } | null)?.fallover !== undefined);
        expect(handed).toHaveLength(1);
        expect(handed[0]!.toState).toBe("queued");
        expect(handed[0]!.reason).toMatch(/^handed from d\/gen-2-pro to f\/img-v2: D /);
        expect((handed[0]!.detail as { fallover: { from: string; to: string; why: string } }).fallover).toMatchObject({ from: "d/gen-2-pro", to: "f/img-v2", why: job.route!.tried[0]!.reason });
      }
    } finally {
      await store.close();
    }
    // D accepted none (the jobs claimed together each met its refusal); F was sent the three routed ones only.
    expect(emulators.d.jobs).toHaveLength(0);
    expect(world.sandbox.requests().filter((entry) => entry.provider === "f" && entry.method === "POST")).toHaveLength(3);
  });
});
