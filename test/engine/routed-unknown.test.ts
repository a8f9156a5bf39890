import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Mediagate } from "../../src/index.js";
import { createAllEmulators } from "../../src/sandbox/all.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { cliPostgresStore } from "../helpers/pg-cli-store.js";
import { startWorld, type World } from "../helpers/world.js";

/**
 * Issue 36, finding 3: a routed job whose submit may have been accepted (and
 * paid) must never move to the next target. Adding a fall-over on
 * unknown_submission passed every test before these.
 */
interface StoreKind {
  name: string;
  open(world: World): Promise<{ address: string; store: Store; cleanup(): Promise<void> }>;
}

const databaseUrl = process.env.DATABASE_URL;
const kinds: StoreKind[] = [
  {
    name: "sqlite",
    async open(world) {
      const store = await openSqliteStore(join(world.folder, "mediagate.db"));
      return { address: world.env.MEDIAGATE_STORE!, store, cleanup: () => store.close() };
    },
  },
  ...(databaseUrl
    ? [
        {
          name: "postgres",
          async open() {
            const pg = await cliPostgresStore(databaseUrl);
            return { address: pg.address, store: pg.store, cleanup: pg.cleanup };
          },
        },
      ]
    : []),
];

const ROUTED = { task: "image" as const, prompt: "a red fox in snow", size: "1024x768", route: ["d/gen-2-pro", "f/img-v2"] };
const fSubmits = (world: World) => world.sandbox.requests().filter((entry) => entry.provider === "f" && entry.method === "POST");

for (const kind of kinds) {
  describe(`a routed job whose submit may have been accepted stays with its target (${kind.name})`, { timeout: 60_000 }, () => {
    let world: World | undefined;
    let opened: Awaited<ReturnType<StoreKind["open"]>> | undefined;
    afterEach(async () => {
      await opened?.cleanup();
      await world?.close();
      world = undefined;
      opened = undefined;
    });

    it("finding 3: D accepts the submit and the answer is lost (connection cut after handling): the job ends unknown_submission at D; F is never sent anything", async () => {
      const emulators = createAllEmulators();
      world = await startWorld(emulators.list);
      opened = await kind.open(world);
      world.sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "drop_after_handling" }, times: 1 });
      const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_STORE: opened.address, MEDIAGATE_FALLBACK_AFTER_S: "1" } });
      try {
        const job = await gate.submit(ROUTED);
        const ended = await gate.wait(job.id);
        expect(ended.state).toBe("unknown_submission");
        expect(ended.provider).toBe("d");
        expect(ended.route).toMatchObject({ current: "d/gen-2-pro", tried: [] });
        expect(ended.route!.next.map((target) => target.name)).toEqual(["f/img-v2"]);
        // D did create it: the job it may charge for is the one the store keeps.
        expect(emulators.d.jobs).toHaveLength(1);
        expect(fSubmits(world)).toEqual([]);
      } finally {
        await gate.close();
      }
    });

    it("finding 3: a submit interrupted after it left (its engine died in `submitting`, the send noted) is recovered as unknown_submission at D, not handed to F", async () => {
      const emulators = createAllEmulators();
      world = await startWorld(emulators.list);
      opened = await kind.open(world);
      const queuing = await Mediagate.open({ env: { ...world.env, MEDIAGATE_STORE: opened.address }, runEngine: false });
      const job = await queuing.submit(ROUTED);
      await queuing.close();
      // What a killed engine leaves: the job claimed, its submit sent, its lease run out.
      const now = Date.now();
      const claimed = await opened.store.transition(job.id, { state: "queued", leaseOwner: null }, "submitting", { leaseOwner: "engine-killed", leaseExpiresAt: now - 1_000, attempts: 1 }, "claimed", now - 2_000);
      expect(claimed).not.toBeNull();
      expect(await opened.store.markSubmitSent(job.id, "engine-killed", now - 1_500)).toBe(true);

      const gate = await Mediagate.open({ env: { ...world.env, MEDIAGATE_STORE: opened.address, MEDIAGATE_FALLBACK_AFTER_S: "1" } });
      try {
        const ended = await gate.wait(job.id);
        expect(ended.state).toBe("unknown_submission");
        expect(ended.provider).toBe("d");
        expect(ended.route).toMatchObject({ current: "d/gen-2-pro", tried: [] });
        expect(fSubmits(world)).toEqual([]);
        expect(world.sandbox.requests().filter((entry) => entry.method === "POST")).toEqual([]);
      } finally {
        await gate.close();
      }
    });
  });
}
