import { describe, expect, it } from "vitest";
import { JobsReport, summaryText } from "../../src/cli/run-jobs.js";
import { newId } from "../../src/core/ids.js";
import { JOB_PAGE, outcomesInPages } from "../../src/engine/wait.js";
import type { Store } from "../../src/store/store.js";
import { freshStoreEachTest, sqliteFactory } from "../helpers/stores.js";

async function queue(store: Store, count: number, refPrefix: string): Promise<string[]> {
  const now = Date.now();
  const results = await store.insertJobs(
    Array.from({ length: count }, (_, index) => ({
      id: newId("job", now),
      ref: `${refPrefix}${index}`,
      batchId: "batch_summary",
      provider: "d" as const,
      model: "gen-2-pro",
      operation: null,
      body: { prompt: `summary ${index}`, width: 256, height: 256 },
      facts: {},
      warnings: [],
      estimateMicroUsd: 30_000,
      estimateSource: "formula",
      outDir: "out",
      budgetId: null,
    })),
    now,
  );
  return results.map((result) => result.job.id);
}

async function reportOf(store: Store, ids: readonly string[]): Promise<JobsReport> {
  const report = new JobsReport();
  for await (const page of outcomesInPages(store, ids)) for (const job of page) report.add(job);
  return report;
}

describe("the batch summary (real SQLite store)", () => {
  let store: Store;
  freshStoreEachTest(sqliteFactory, (opened) => (store = opened));

  it("reads the jobs a page at a time and counts every one: more than two pages come to exact totals", async () => {
    const ids = await queue(store, 2 * JOB_PAGE + 7, "paged-");
    for (const id of ids.slice(0, 3)) await store.transition(id, { state: "queued" }, "cancelled", {}, "cancelled by the user", Date.now());
    const report = await reportOf(store, ids);
    expect([report.total, report.cancelled, report.neverRan]).toEqual([2 * JOB_PAGE + 7, 3, 2 * JOB_PAGE + 4]);
    expect(report.unfinished()).toBe(2 * JOB_PAGE + 4);
    expect(report.neverRanRefs).toHaveLength(10);
  });

  it("many failures: the first 20 get a line each and the rest are counted, naming the command that lists them all", async () => {
    const ids = await queue(store, 45, "failing-");
    for (const id of ids.slice(0, 30)) {
      await store.transition(id, { state: "queued" }, "failed", { error: { code: "moderated", message: "refused by moderation" } }, "refused", Date.now());
    }
    const summary = summaryText(await reportOf(store, ids), [], "out", "mediagate jobs --batch batch_summary").split("\n");
    expect(summary[0]).toBe("0 succeeded, 30 failed, 15 never ran; charged $0.0000");
    expect(summary.filter((line) => line.startsWith("  failed: failing-"))).toHaveLength(20);
    expect(summary).toContain("  … and 10 more: mediagate jobs --batch batch_summary");
    // Ten of the 15 by name (in the store's order), then an ellipsis for the rest.
    expect(summary.at(-1)).toMatch(/^ {2}never ran \(not sent, not charged\): (failing-(3\d|4[0-4]), ){10}…$/);
  });
});
