import { afterEach, describe, expect, it } from "vitest";
import { readEvents, serveSandbox, servedStores, type Served } from "../helpers/dashboard.js";
import { finishedDJob, newDJob } from "../helpers/stores.js";

/**
 * The dashboard's job page says when a job will start and finish (issue 37,
 * part 1): its queue position and expected times, drawn again on its live
 * stream as the jobs ahead of it move, not only when it changes itself.
 * Over real HTTP, no engine (nothing moves but what the test moves).
 */

const opened: Served[] = [];
afterEach(async () => {
  for (const served of opened.splice(0)) await served.close();
});

for (const kind of servedStores) {
  describe(`the dashboard's job page: queue position and expected times (${kind.name})`, () => {
    it("a queued job's page shows its position and expected start and finish; its live stream draws them again as the job ahead leaves the queue", async () => {
      const served = await serveSandbox({ engine: false, store: kind });
      opened.push(served);
      const store = await served.runtime.store();
      const at = Date.now() - 600_000;
      for (const ref of ["paced-1", "paced-2"]) await finishedDJob(store, ref, at, 10_000, 2_000);
      await store.insertJobs([newDJob("ahead"), newDJob("mine")], Date.now());
      const page = await (await fetch(`${served.url}/jobs/job_mine`)).text();
      expect(page).toMatch(/<dt>Queue position<\/dt><dd>2 <span class="muted">among the jobs waiting for D<\/span><\/dd>/);
      expect(page).toContain("<dt>Expected to start</dt>");
      expect(page).toContain("<dt>Expected to finish</dt>");
      // The job ahead is cancelled once the stream is open: the page's position becomes 1 without a change of its own.
      const timingOf = (message: { data: { parts?: { timing?: { html: string } } } }) => message.data.parts?.timing?.html;
      const messages = await readEvents(
        served,
        `/events?job=job_mine&since=${Date.now()}`,
        undefined,
        (seen) => seen.some((message) => timingOf(message)?.includes("<dd>1 <span")),
        15_000,
        () => void store.transition("job_ahead", { state: "queued" }, "cancelled", {}, "cancelled by the test", Date.now()),
      );
      expect(messages.map(timingOf).filter((html) => html !== undefined).at(-1)).toContain("Expected to finish");
      // An ended job's page has no timing.
      const ended = await (await fetch(`${served.url}/jobs/job_paced-1`)).text();
      expect(ended).not.toContain("Queue position");
      expect(ended).not.toContain("Expected to finish");
    });

    it("a job of a model with no finished job yet: its position, and the page says its finish is not known yet", async () => {
      const served = await serveSandbox({ engine: false, store: kind });
      opened.push(served);
      const store = await served.runtime.store();
      await store.insertJobs([newDJob("first")], Date.now());
      const page = await (await fetch(`${served.url}/jobs/job_first`)).text();
      expect(page).toMatch(/<dt>Queue position<\/dt><dd>1 /);
      expect(page).toContain("not known yet (no job of its model has finished)");
    });
  });
}
