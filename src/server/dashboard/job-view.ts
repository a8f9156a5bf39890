import { createHash } from "node:crypto";
import { isTerminal, type Job, type JobEvent, type JobOutput } from "../../core/job.js";
import { Html, html, pathOf } from "./html.js";
import { bytesOf, moneyOf, stateBadge, timeOf } from "./display.js";
import { durationsOf, durationText } from "./durations.js";
import type { Session } from "./session.js";
import { chargeUnknownWords } from "../../app/job-view.js";
import { NO_TIMING, type JobTiming } from "../../app/eta.js";
import { requestView, type RequestView } from "../../app/request-view.js";

/** How much of an event's detail a timeline shows (provider answers are kept whole in the store). */
const DETAIL_CHARS = 2_000;

/** A part of the job page that changes as the job moves; `version` says whether the browser's copy is current. */
export interface JobPart {
  version: string;
  html: string;
}

export type JobPartName = "summary" | "outputs" | "timeline" | "actions" | "timing";

function versionOf(...values: unknown[]): string {
  return createHash("sha256").update(JSON.stringify(values)).digest("base64url").slice(0, 16);
}

function outputHref(job: Job, output: JobOutput): string {
  return pathOf("/jobs", job.id, "outputs", output.index);
}

function outputView(job: Job, output: JobOutput): Html {
  const href = outputHref(job, output);
  const { width, height } = output.media as { width?: number; height?: number; duration_s?: number };
  const duration = (output.media as { duration_s?: number }).duration_s;
  const size = width && height ? html` width="${width}" height="${height}"` : "";
  const facts = [width && height ? `${width}×${height}` : null, duration ? `${duration} s` : null, output.contentType, bytesOf(output.bytes)].filter(Boolean).join(" · ");
  const media = output.contentType.startsWith("image/")
    ? html`<img src="${href}" alt="Output ${output.index + 1} of ${job.ref}"${size}>`
    : output.contentType.startsWith("video/")
      ? html`<video src="${href}" controls preload="metadata" playsinline aria-label="Output ${output.index + 1} of ${job.ref}"${size}></video>`
      : "";
  return html`<figure>${media}<figcaption>Output ${output.index + 1}: ${facts} · <a href="${href}" download>Download</a></figcaption></figure>`;
}

/** Waiting (created → sent), rendering (sent → provider done), capturing (provider done → ended): "—" for a stage not reached. */
function durationFacts(job: Job): Html {
  const durations = durationsOf(job);
  return html`<dt>Waiting</dt><dd data-duration="waiting">${durationText(durations.waitingMs)}</dd>
<dt>Rendering</dt><dd data-duration="rendering">${durationText(durations.renderingMs)}</dd>
<dt>Capturing</dt><dd data-duration="capturing">${durationText(durations.capturingMs)}</dd>`;
}

function summaryOf(job: Job): Html {
  const route = job.route;
  return html`<dl class="facts">
<dt>State</dt><dd>${stateBadge(job.state)}${job.reason ? html` <span class="muted">${job.reason}</span>` : ""}</dd>
${job.blockedCode ? html`<dt>Blocked</dt><dd>${job.blockedCode}</dd>` : ""}
${job.error ? html`<dt>Error</dt><dd><strong>${job.error.code}</strong>: ${job.error.message}</dd>` : ""}
<dt>Target</dt><dd>${job.provider}/${job.model}${job.operation ? `/${job.operation}` : ""}</dd>
${
  route
    ? html`<dt>Route</dt><dd>${[...route.tried.map((attempt) => html`${attempt.name} (left: ${attempt.reason}) → `), html`<strong>${route.current}</strong>`, route.next.map((step) => html` → ${step.name}`)]}</dd>`
    : ""
}
<dt>Estimate</dt><dd>${moneyOf(job.estimateMicroUsd)} <span class="muted">(${job.estimateSource})</span></dd>
<dt>Charge</dt><dd>${job.chargeMicroUsd === null ? html`<span class="muted">${chargeUnknownWords(job)}</span>` : moneyOf(job.chargeMicroUsd)}${job.chargeState !== "none" ? html` <span class="muted">(${job.chargeState}${job.chargeSource ? `, ${job.chargeSource}` : ""})</span>` : ""}</dd>
<dt>Attempts</dt><dd>${job.attempts}</dd>
<dt>Provider job</dt><dd>${job.providerJobId ?? html`<span class="muted">none</span>`}${job.providerStatus ? html` <span class="muted">(${job.providerStatus})</span>` : ""}</dd>
${job.warnings.length ? html`<dt>Warnings</dt><dd><ul>${job.warnings.map((warning) => html`<li>${warning}</li>`)}</ul></dd>` : ""}
<dt>Id</dt><dd>${job.id}</dd>
${job.batchId ? html`<dt>Batch</dt><dd><a href="${pathOf("/batches", job.batchId)}">${job.batchId}</a></dd>` : ""}
<dt>Created</dt><dd>${timeOf(job.createdAt)}</dd>
<dt>Updated</dt><dd>${timeOf(job.updatedAt)}</dd>
<dt>Finished</dt><dd>${timeOf(job.finishedAt)}</dd>
${durationFacts(job)}
</dl>`;
}

function outputsOf(job: Job, outputs: readonly JobOutput[]): Html {
  if (outputs.length) return html`<div class="outputs">${outputs.map((output) => outputView(job, output))}</div>`;
  return html`<p class="muted">${isTerminal(job.state) ? "This job saved no output." : "Outputs appear here once the job is captured."}</p>`;
}

function detailText(detail: unknown): string | null {
  if (detail === null || detail === undefined) return null;
  const text = typeof detail === "string" ? detail : JSON.stringify(detail, null, 2);
  return text.length > DETAIL_CHARS ? `${text.slice(0, DETAIL_CHARS)}…` : text;
}

function timelineOf(events: readonly JobEvent[]): Html {
  return html`<ol class="timeline">${events.map((event) => {
    const detail = detailText(event.detail);
    return html`<li>${timeOf(event.at)} ${event.fromState && event.fromState !== event.toState ? html`${stateBadge(event.fromState)} → ` : ""}${stateBadge(event.toState)}
<p>${event.reason}</p>${detail ? html`<details><summary>Detail</summary><pre>${detail}</pre></details>` : ""}</li>`;
  })}</ol>`;
}

function actionsOf(job: Job, session: Session): Html {
  if (isTerminal(job.state) || session.caller.readOnly) return html``;
  return html`<form method="post" action="${pathOf("/jobs", job.id, "cancel")}" class="actions">
<input type="hidden" name="form_token" value="${session.formToken}">
<button type="submit" class="danger">Cancel this job</button>
<span class="hint">A queued job is cancelled here; a running one at its provider, where the provider can cancel.</span>
</form>`;
}

/** A field's value as the request panel shows it: text as it is, a file by its name, type, size and sha256, the rest as JSON. */
function fieldValue(value: unknown): Html {
  if (typeof value === "string") return html`${value}`;
  const file = (value as { file?: { name: string | null; type: string | null; bytes: number; sha256: string } } | null)?.file;
  if (value !== null && typeof value === "object" && file !== undefined && Object.keys(value).length === 1) {
    return html`file ${file.name ?? "(unnamed)"} <span class="muted">(${file.type ?? "type not recognised"}, ${bytesOf(file.bytes)}, sha256 <code>${file.sha256.slice(0, 12)}…</code>)</span>`;
  }
  return html`<code>${JSON.stringify(value)}</code>`;
}

/** What was asked: the target, each field sent, the files given, a common request's route (issue 37, part 4). */
export function requestPanel(view: RequestView): Html {
  return html`<dl class="facts request">
<dt>Target</dt><dd>${view.provider}/${view.model}${view.operation ? `/${view.operation}` : ""}</dd>
${Object.entries(view.input).map(([field, value]) => html`<dt>${field}</dt><dd>${fieldValue(value)}</dd>`)}
${view.files.map((file) => html`<dt>File ${file.field}</dt><dd>${file.name} <span class="muted">(${file.type ?? "type not recognised"}, ${bytesOf(file.bytes)}, sha256 <code>${file.sha256.slice(0, 12)}…</code>)</span></dd>`)}
${view.route ? html`<dt>Route</dt><dd>${[...view.route.tried, view.route.current, ...view.route.next].join(" → ")}</dd>` : ""}
</dl>`;
}

/** When it will start and finish (issue 37): its queue position and expected times, drawn again as the queue moves. */
function timingOf(job: Job, timing: JobTiming): Html {
  if (isTerminal(job.state)) return html``;
  const known = timing.queuePosition !== null || timing.expectedStartAt !== null || timing.expectedFinishAt !== null;
  if (!known) return html`<p class="muted">When it will finish is not known yet: no job of ${job.provider}/${job.model} has finished here.</p>`;
  return html`<dl class="facts timing">
${timing.queuePosition !== null ? html`<dt>Queue position</dt><dd>${timing.queuePosition} <span class="muted">among the jobs waiting for ${job.provider.toUpperCase()}</span></dd>` : ""}
${timing.expectedStartAt !== null ? html`<dt>${job.state === "queued" ? "Expected to start" : "Sent"}</dt><dd>${timeOf(timing.expectedStartAt)}</dd>` : ""}
<dt>Expected to finish</dt><dd>${timing.expectedFinishAt !== null ? timeOf(timing.expectedFinishAt) : html`<span class="muted">not known yet (no job of its model has finished)</span>`}</dd>
</dl>`;
}

/** The parts of the job page that follow the job, each with the version the browser compares before replacing it. */
export function jobParts(job: Job, outputs: readonly JobOutput[], events: readonly JobEvent[], session: Session, timing: JobTiming = NO_TIMING): Record<JobPartName, JobPart> {
  return {
    timing: timingPart(job, timing),
    summary: { version: versionOf(job.updatedAt, job.state, job.reason, job.chargeMicroUsd), html: summaryOf(job).text },
    outputs: { version: versionOf(job.state === "succeeded", outputs.map((output) => output.sha256)), html: outputsOf(job, outputs).text },
    timeline: { version: versionOf(events.length, events.at(-1)?.id ?? null), html: timelineOf(events).text },
    actions: { version: versionOf(isTerminal(job.state)), html: actionsOf(job, session).text },
  };
}

/** The timing part alone: what the job page's stream sends as the queue moves, between the job's own changes. */
export function timingPart(job: Job, timing: JobTiming): JobPart {
  return { version: versionOf(isTerminal(job.state), timing), html: timingOf(job, timing).text };
}

/** A part in its container; its markup was made by `html`, so it goes in as it is. */
function part(name: JobPartName, value: JobPart): Html {
  return html`<div data-part="${name}" data-version="${value.version}">${new Html(value.html)}</div>`;
}

/** A native request's body as `POST /v1/jobs` takes it: what the job sends, on the target it is on. */
function nativeBodyOf(job: Job): Record<string, unknown> {
  return { provider: job.provider, model: job.model, ...(job.operation ? { operation: job.operation } : {}), input: job.body };
}

/** Text in single quotes for a POSIX shell: a quote inside closes, escapes and reopens. */
function shellQuoted(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** The `curl` command that sends this job's request again to the API at `apiBase`, the token read from MEDIAGATE_TOKEN (never written here). */
export function curlOf(job: Job, apiBase: string): string {
  return [
    `curl -sS -X POST ${shellQuoted(`${apiBase.replace(/\/+$/, "")}/v1/jobs`)}`,
    `  -H "Authorization: Bearer $MEDIAGATE_TOKEN"`,
    `  -H 'Content-Type: application/json'`,
    `  --data ${shellQuoted(JSON.stringify(nativeBodyOf(job)))}`,
  ].join(" \\\n");
}

/**
 * "Run again" (a new job with the same request, quoted first on the form's
 * page) and "copy as curl", for a job whose request is all in its body. A job
 * that carried local files keeps their names, not their bytes everywhere
 * (some providers get them as uploads): it says so instead.
 */
export function againPanel(job: Job, session: Session, apiBase: string): Html {
  if (requestView(job).files.length > 0) {
    return html`<p class="muted">This request carried local files; send it again from the CLI or the API with the same files.</p>`;
  }
  const curl = curlOf(job, apiBase);
  const body = nativeBodyOf(job);
  const runAgain = session.caller.readOnly
    ? ""
    : html`<form method="post" action="/new" class="actions">
<input type="hidden" name="form_token" value="${session.formToken}">
<input type="hidden" name="kind" value="native">
<input type="hidden" name="provider" value="${job.provider}">
<input type="hidden" name="model" value="${job.model}">
<input type="hidden" name="operation" value="${job.operation ?? ""}">
<input type="hidden" name="input" value="${JSON.stringify(body.input)}">
<button type="submit">Run again</button>
<span class="hint">A new job with this request on ${job.provider}/${job.model}, quoted before anything is sent.</span>
</form>`;
  return html`${runAgain}
<label for="curl">As curl (your token in MEDIAGATE_TOKEN)</label>
<textarea id="curl" readonly rows="6">${curl}</textarea>
<p><button type="button" data-copy="curl">Copy as curl</button> <span class="copied muted" role="status" hidden></span></p>`;
}

export function jobPageBody(job: Job, parts: Record<JobPartName, JobPart>, notice: string | null, again: Html | null = null): Html {
  return html`<p><a href="/">← All jobs</a></p>
<h1>${job.ref}</h1>
${notice ? html`<div class="notice" role="status"><p>${notice}</p></div>` : ""}
<div class="columns">
  <div>
    <section class="panel" aria-labelledby="outputs-title"><h2 id="outputs-title">Outputs</h2>${part("outputs", parts.outputs)}</section>
    <section class="panel" aria-labelledby="summary-title"><h2 id="summary-title">Job</h2>${part("timing", parts.timing)}${part("summary", parts.summary)}${part("actions", parts.actions)}</section>
    <section class="panel" aria-labelledby="request-title"><h2 id="request-title">Request</h2>${requestPanel(requestView(job))}${again ?? ""}</section>
  </div>
  <section class="panel" aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2>${part("timeline", parts.timeline)}</section>
</div>`;
}
