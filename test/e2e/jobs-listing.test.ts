import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { runCli } from "../helpers/cli.js";
import { newDJob, tempDir } from "../helpers/stores.js";

let folder: ReturnType<typeof tempDir> | undefined;
afterEach(() => {
  folder?.remove();
  folder = undefined;
});

describe("mediagate jobs --ref-prefix", () => {
  it("lists the jobs whose ref starts with the text (as the API's ref_prefix), newest first, in the table and as JSON lines; an empty prefix is refused naming the flag", async () => {
    folder = tempDir();
    const path = join(folder.path, "mediagate.db");
    const store = await openSqliteStore(path);
    try {
      let at = 1_000;
      for (const ref of ["batch-7-001", "batch-70", "batch-7-002", "other-batch-7-003", "batch-6"]) await store.insertJobs([newDJob(ref)], (at += 1_000));
    } finally {
      await store.close();
    }
    const env = { MEDIAGATE_STORE: `sqlite:${path}` };
    const table = await runCli(["jobs", "--ref-prefix", "batch-7-"], { env });
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.trim().split("\n").slice(1).map((line) => line.split(/\s+/)[1])).toEqual(["batch-7-002", "batch-7-001"]);
    const lines = await runCli(["--json", "jobs", "--ref-prefix", "batch-7"], { env });
    expect(lines.code, lines.stderr).toBe(0);
    expect(lines.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { ref: string }).ref)).toEqual(["batch-7-002", "batch-70", "batch-7-001"]);
    const empty = await runCli(["jobs", "--ref-prefix", ""], { env });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/--ref-prefix: must not be empty/);
  });
});
