import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { runCli } from "../helpers/cli.js";
import { newDJob, tempDir } from "../helpers/stores.js";

// `mediagate show` prints a job's events as the API does: a notify URL's token (in its path or query) never shows,
// in events written before the engine redacted it too (they cut only the query).

let folder: ReturnType<typeof tempDir> | undefined;
afterEach(() => {
  folder?.remove();
  folder = undefined;
});

describe("mediagate show and a notify URL's token", () => {
  it("an event recorded with the URL's path (the older form) shows it as scheme and host only, in text and --json", async () => {
    folder = tempDir();
    const path = join(folder.path, "mediagate.db");
    const url = "https://hooks.example/T0123/s3cr3t-path-token?key=s3cr3t-query-token";
    const store = await openSqliteStore(path);
    try {
      store.setNotificationPolicy({ defaultUrl: null, events: "terminal" });
      await store.insertJobs([newDJob("told", { notifyUrl: url })], 1_000);
      await store.transition("job_told", { state: "queued" }, "cancelled", { reason: "cancelled by the user" }, "cancelled by the user", 2_000);
      const [owed] = await store.claimDueNotifications(3_000, 1, 60_000);
      // As the engine wrote it before: the query cut, the path kept.
      const older = "notification job.cancelled delivered to https://hooks.example/T0123/s3cr3t-path-token?… (attempt 1: HTTP 200 in 12 ms)";
      await store.recordNotificationAttempt({ id: owed!.id, attempt: 1, at: 3_100, status: 200, error: null, outcome: { kind: "delivered" }, event: { reason: older, detail: { url: url } } });
    } finally {
      await store.close();
    }
    const env = { MEDIAGATE_STORE: `sqlite:${path}` };
    for (const args of [["show", "told"], ["--json", "show", "told"]]) {
      const shown = await runCli(args, { env });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toContain("delivered to https://hooks.example/[redacted] (attempt 1");
      expect(shown.stdout).not.toMatch(/s3cr3t|T0123/);
    }
  });
});
