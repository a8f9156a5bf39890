import { isTerminal, JOB_STATES, type Job } from "../../core/job.js";
import type { BatchSummary } from "../../store/store.js";
import { html, pathOf, type Html } from "./html.js";
import { moneyOf, stateBadge, timeOf } from "./display.js";
import type { Session } from "./session.js";

/** The parts of a batch's page that follow its jobs: each drawn again (the page's /events) when one of them changes. */
export type BatchPanelName = "batch-progress" | "batch-spend" | "batch-cancel" | "batch-failures";

export function batchPanels(batchId: string, summary: BatchSummary, failures: readonly Job[], failuresShown: number, session: Session): Record<BatchPanelName, Html> {
  const ended = JOB_STATES.filter(isTerminal).reduce((sum, state) => sum + (summary.byState[state] ?? 0), 0);
  const percent = summary.jobs === 0 ? 0 : Math.floor((ended * 100) / summary.jobs);
  const counted = JOB_STATES.filter((state) => (summary.byState[state] ?? 0) > 0);
  return {
    "batch-progress": html`<p><label for="batch-progress">${ended} of ${summary.jobs} jobs ended (${percent}%)</label>
      <progress id="batch-progress" max="${summary.jobs}" value="${ended}">${percent}%</progress></p>
      <table class="counts">
        <caption class="visually-hidden">Jobs by state</caption>
        <thead><tr><th scope="col">State</th><th scope="col" class="num">Jobs</th></tr></thead>
        <tbody>${counted.map((state) => html`<tr data-count="${state}"><td>${stateBadge(state)}</td><td class="num">${summary.byState[state] ?? 0}</td></tr>`)}</tbody>
      </table>`,
    "batch-spend": html`<dl class="facts">
        <dt>Charged</dt><dd data-spend="charged">${moneyOf(summary.chargedMicroUsd)}</dd>
        <dt>Estimated</dt><dd data-spend="estimated">${moneyOf(summary.estimateMicroUsd)}${summary.unpriced > 0 ? html` <span class="muted">(and ${summary.unpriced} unpriced, not free)</span>` : ""}</dd>
      </dl>`,
    "batch-cancel": cancelPanel(batchId, summary.byState.queued ?? 0, session),
    "batch-failures": failuresOf(failures, failuresShown),
  };
}

/** The batch page (issue 37, part 4): its jobs counted by state, how far it is, what it cost, what failed and why, and a cancel of what is not sent. */
export function batchPageBody(batchId: string, panels: Record<BatchPanelName, Html>, notice: Html | null): Html {
  return html`<p><a href="/">← All jobs</a></p>
<h1>Batch ${batchId}</h1>
${notice}
<div class="columns">
  <div>
    <section class="panel" aria-labelledby="progress-title"><h2 id="progress-title">Progress</h2><div data-panel="batch-progress">${panels["batch-progress"]}</div></section>
    <section class="panel" aria-labelledby="spend-title"><h2 id="spend-title">Spend</h2><div data-panel="batch-spend">${panels["batch-spend"]}</div></section>
    <section class="panel" aria-labelledby="cancel-title"><h2 id="cancel-title">Cancel</h2><div data-panel="batch-cancel">${panels["batch-cancel"]}</div></section>
  </div>
  <section class="panel" aria-labelledby="failures-title"><h2 id="failures-title">Failures</h2><div data-panel="batch-failures">${panels["batch-failures"]}</div></section>
</div>`;
}

function cancelPanel(batchId: string, queued: number, session: Session): Html {
  if (queued === 0) return html`<p class="muted">Every job of this batch has been sent or has ended: nothing is left to cancel here.</p>`;
  if (session.caller.readOnly) return html`<p class="muted">${queued} ${queued === 1 ? "job is" : "jobs are"} not sent yet; token ${session.caller.name} is read-only and cannot cancel them.</p>`;
  return html`<form method="post" action="${pathOf("/batches", batchId, "cancel")}" class="actions">
<input type="hidden" name="form_token" value="${session.formToken}">
<button type="submit" class="danger">Cancel ${queued} unsent ${queued === 1 ? "job" : "jobs"}</button>
<span class="hint">Only jobs not sent yet are cancelled (never charged). Jobs already sent keep running and are saved and charged as usual.</span>
</form>`;
}

function failuresOf(failures: readonly Job[], shown: number): Html {
  if (failures.length === 0) return html`<p class="muted">No job of this batch has failed.</p>`;
  return html`<ul class="failures">${failures.map(
    (job) => html`<li data-job="${job.id}"><a href="${pathOf("/jobs", job.id)}">${job.ref}</a> ${stateBadge(job.state)} <span class="muted">${timeOf(job.finishedAt)}</span>
<p>${job.error ? html`<strong>${job.error.code}</strong>: ${job.error.message}` : html`<span class="muted">${job.reason ?? "no message"}</span>`}</p></li>`,
  )}</ul>
<p class="hint">At most ${shown} of each kind of failure are listed; the counts say how many there are.</p>`;
}
