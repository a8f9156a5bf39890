import { afterEach, describe, expect, it } from "vitest";
import { timingWords } from "../../src/app/eta.js";
import { batchLine, jobLine } from "../../src/cli/run-jobs.js";
import { newDJob, sqliteFactory } from "../helpers/stores.js";

/**
 * The CLI's progress line (issue 37, part 1): a queued job's line says its
 * queue position and when it is expected to start and be done; a batch's
 * line when its last job is expected to be done.
 */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const AT = Date.parse("2026-11-29T14:00:00.000Z");

describe("the progress line's queue position and expected times", () => {
  it("a queued job's line: position, start and finish (UTC, to the second); with no pace learned, the finish is said to be unknown", async () => {
    const opened = await sqliteFactory.open();
    cleanups.push(opened.cleanup);
    await opened.store.insertJobs([newDJob("one")], AT);
    const job = (await opened.store.getJob("job_one"))!;
    const timing = { queuePosition: 12, expectedStartAt: AT + 70_000, expectedFinishAt: AT + 91_000 };
    expect(jobLine(job, AT, null, timing)).toBe(" ░░░░░░░░░░░░░░░░░░░░ queued #12 · starts ~14:01:10Z · done ~14:01:31Z");
    // Cut to the terminal's 80 columns (a pipe's, here), the times kept before the reason.
    expect(jobLine({ ...job, reason: "waiting for a slot at D (24 of 24 in use)" }, AT, null, timing)).toBe(" ░░░░░░░░░░░░░░░░░░░░ queued #12 · starts ~14:01:10Z · done ~14:01:31Z · waiti…");
    expect(timingWords(timing, AT)).toBe("queue position 12 · starts ~14:01:10Z · done ~14:01:31Z");
    // Starting now: the start is not said.
    expect(timingWords({ ...timing, expectedStartAt: AT }, AT)).toBe("queue position 12 · done ~14:01:31Z");
    expect(timingWords({ queuePosition: 3, expectedStartAt: null, expectedFinishAt: null }, AT)).toBe("queue position 3 · finish not known yet (no job of its model has finished)");
    // A running job: its finish only; an ended one: nothing.
    expect(timingWords({ queuePosition: null, expectedStartAt: AT - 5_000, expectedFinishAt: AT + 4_000 }, AT)).toBe("done ~14:00:04Z");
    expect(timingWords({ queuePosition: null, expectedStartAt: null, expectedFinishAt: null }, AT)).toBeNull();
  });

  it("a batch's line ends with when all of it is expected to be done, until it is", () => {
    const counts = { total: 100, done: 40, running: 24, queued: 36, failed: 0 };
    expect(batchLine(counts, 65_000, AT + 3_600_000)).toBe(" ████████░░░░░░░░░░░░ 40/100 done (all ~15:00:00Z) · 24 running · 36 queued · …");
    expect(batchLine(counts, 65_000, null)).toBe(" ████████░░░░░░░░░░░░ 40/100 done · 24 running · 36 queued · 0 failed · 1:05");
    expect(batchLine({ ...counts, done: 100, running: 0, queued: 0 }, 65_000, AT)).toBe(" ████████████████████ 100/100 done · 0 running · 0 queued · 0 failed · 1:05");
  });
});
