import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { prepareBatch } from "../../src/cli/batch.js";
import { enqueue } from "../../src/app/enqueue.js";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import { cliPostgresStore } from "../helpers/pg-cli-store.js";
import { tempDir } from "../helpers/stores.js";

const databaseUrl = process.env.DATABASE_URL;

/** D lines as a user writes them (nothing is sent: storing a batch needs D configured, not reachable). */
function batchFile(folder: string, name: string, count: number): string {
  const file = join(folder, name);
  const lines = Array.from({ length: count }, (_, index) => JSON.stringify({ ref: `page-${index}`, provider: "d", model: "gen-2-pro", input: { prompt: `picture ${index}`, width: 256, height: 256 } }));
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

const stores: Array<{ name: string; open(folder: string): Promise<{ address: string; cleanup(): Promise<void> }> }> = [
  { name: "sqlite", open: async (folder) => ({ address: `sqlite:${join(folder, "pages.db")}`, cleanup: async () => undefined }) },
  ...(databaseUrl
    ? [{ name: "postgres", open: async () => {
        const pg = await cliPostgresStore(databaseUrl);
        return { address: pg.address, cleanup: () => pg.cleanup() };
      } }]
    : []),
];

for (const kind of stores) {
  describe(`storing a batch page by page (${kind.name})`, () => {
    const opened: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const close of opened.splice(0)) await close();
    });

    async function runtimeOn(address: string, folder: string): Promise<Runtime> {
      const runtime = createRuntime({ overrides: { MEDIAGATE_STORE: address, MEDIAGATE_OUTPUT_DIR: join(folder, "out"), MEDIAGATE_D_API_KEY: "d-key", MEDIAGATE_D_BASE_URL: "http://127.0.0.1:8999/d" } });
      opened.push(async () => (await runtime.store()).close());
      return runtime;
    }

    it("a batch of 1,234 lines (3 pages, stored side by side on PostgreSQL) resumed after its first 600: every job once, in the file's order, the first 600 resumed and the rest created", async () => {
      const folder = tempDir();
      const store = await kind.open(folder.path);
      opened.push(async () => {
        await store.cleanup();
        folder.remove();
      });
      const options = { batchId: "batch_pages", outDir: join(folder.path, "out"), budgetId: "batch_pages" };
      const first = await runtimeOn(store.address, folder.path);
      const early = await enqueue(first, await prepareBatch(first, batchFile(folder.path, "early.jsonl", 600)), options);
      expect(early).toMatchObject({ created: 600, resumed: 0, finished: 0 });

      const second = await runtimeOn(store.address, folder.path);
      const all = await enqueue(second, await prepareBatch(second, batchFile(folder.path, "all.jsonl", 1_234)), options);
      expect(all).toMatchObject({ created: 634, resumed: 600, finished: 0 });
      expect(all.jobIds).toHaveLength(1_234);
      expect(all.jobIds.slice(0, 600)).toEqual(early.jobIds);
      expect(new Set(all.jobIds).size).toBe(1_234);
      const stored = await second.store();
      const jobs = await stored.listJobs({ ids: all.jobIds });
      const refOf = new Map(jobs.map((job) => [job.id, job.ref]));
      expect(all.jobIds.map((id) => refOf.get(id))).toEqual(Array.from({ length: 1_234 }, (_, index) => `page-${index}`));
      expect(jobs.every((job) => job.state === "queued" && job.batchId === "batch_pages")).toBe(true);
      // One "queued" event each, none for a resumed ref stored again.
      for (const id of [all.jobIds[0]!, all.jobIds[599]!, all.jobIds[600]!, all.jobIds[1_233]!]) expect(await stored.events(id)).toHaveLength(1);
    });
  });
}
