import { costText } from "../../app/job-view.js";
import { promptMatches, PROMPT_SEARCH_MAX_CHARS, PROMPT_SEARCH_WINDOW } from "../../app/prompt-search.js";
import { isTerminal, JOB_STATES, type Job, type JobOutput } from "../../core/job.js";
import { PROVIDER_IDS } from "../../providers/adapter.js";
import { html, pathOf, queryOf, type Html } from "./html.js";
import { stateBadge, timeOf } from "./display.js";
import { durationsOf, durationText } from "./durations.js";

/** The table's filter as the query string gives it (the names of `GET /v1/jobs`' filters). */
export interface JobListQuery {
  state?: string;
  provider?: string;
  /** Exactly this ref (an address given by hand or kept from before the search box searched by prefix); the form replaces it. */
  ref?: string;
  /** The search box: refs starting with this. */
  ref_prefix?: string;
  /** Prompt text searched for among the newest jobs (app/prompt-search.ts). */
  q?: string;
  cursor?: string;
}

export function jobListQueryOf(query: Record<string, string | undefined>): JobListQuery {
  const pick = (name: string) => {
    const value = query[name]?.trim();
    return value ? value : undefined;
  };
  return { state: pick("state"), provider: pick("provider"), ref: pick("ref"), ref_prefix: pick("ref_prefix"), q: pick("q"), cursor: pick("cursor") };
}

/** Whether a job belongs in the table under this filter: a job created after the page was drawn is added when it does. */
export function matchesFilter(query: JobListQuery): (job: Job) => boolean {
  const states = query.state?.split(",").map((state) => state.trim());
  return (job) =>
    (!states || states.includes(job.state)) &&
    (!query.provider || job.provider === query.provider) &&
    (!query.ref || job.ref === query.ref) &&
    (!query.ref_prefix || job.ref.startsWith(query.ref_prefix)) &&
    (!query.q || promptMatches(job, query.q));
}

/** The side of the box a thumbnail fits in, in CSS pixels. */
const THUMB_PX = 64;

/**
 * A job's first saved output, small: an image loaded lazily at its aspect
 * ratio, or a video of which only the metadata is fetched (its first frame
 * shows; no poster is made). Served by this server from the saved file
 * (`/jobs/{id}/outputs/0`), never a provider's link.
 */
function thumbnailOf(job: Job, outputs: readonly JobOutput[]): Html {
  const output = outputs[0];
  if (!output) return html`<span class="muted">—</span>`;
  const { width, height } = output.media as { width?: number; height?: number };
  const scale = width && height ? THUMB_PX / Math.max(width, height) : 1;
  const shownWidth = width && height ? Math.max(1, Math.round(width * scale)) : THUMB_PX;
  const shownHeight = width && height ? Math.max(1, Math.round(height * scale)) : THUMB_PX;
  const href = pathOf("/jobs", job.id, "outputs", output.index);
  if (output.contentType.startsWith("image/")) return html`<a href="${pathOf("/jobs", job.id)}" tabindex="-1" aria-hidden="true"><img class="thumb" src="${href}" alt="" loading="lazy" decoding="async" width="${shownWidth}" height="${shownHeight}"></a>`;
  if (output.contentType.startsWith("video/")) return html`<video class="thumb" src="${href}" preload="metadata" muted playsinline width="${shownWidth}" height="${shownHeight}" aria-hidden="true"></video>`;
  return html`<span class="muted">${output.contentType}</span>`;
}

/** Waiting, rendering and capturing, each "—" until reached. */
export function durationsLine(job: Job): Html {
  const durations = durationsOf(job);
  return html`<span class="durations" title="waiting · rendering · capturing">${durationText(durations.waitingMs)} · ${durationText(durations.renderingMs)} · ${durationText(durations.capturingMs)}</span>`;
}

export function jobRow(job: Job, outputs: readonly JobOutput[] = []): Html {
  const note = isTerminal(job.state) ? (job.error ? job.error.code : null) : job.blockedCode ?? job.reason;
  return html`<tr data-job="${job.id}" data-state="${job.state}">
<td data-label="Output" class="thumb-cell">${thumbnailOf(job, outputs)}</td>
<td data-label="Ref"><a href="${pathOf("/jobs", job.id)}">${job.ref}</a></td>
<td data-label="State">${stateBadge(job.state)}${note ? html`<span class="hint">${note}</span>` : ""}</td>
<td data-label="Target">${job.provider}/${job.model}${job.operation ? `/${job.operation}` : ""}</td>
<td data-label="Cost" class="num">${costText(job)}</td>
<td data-label="Created">${timeOf(job.createdAt)}</td>
<td data-label="Took">${durationsLine(job)}</td>
</tr>`;
}

function filtered(query: JobListQuery): boolean {
  return Boolean(query.state || query.provider || query.ref || query.ref_prefix || query.q);
}

function filterForm(query: JobListQuery): Html {
  const option = (value: string, label: string, selected: string | undefined) => html`<option value="${value}"${value === (selected ?? "") ? html` selected` : ""}>${label}</option>`;
  return html`<form class="filters" method="get" action="/" role="search" aria-label="Filter jobs">
  <div class="field"><label for="filter-state">State</label>
    <select id="filter-state" name="state">${option("", "any", query.state)}${JOB_STATES.map((state) => option(state, state.replace("_", " "), query.state))}</select></div>
  <div class="field"><label for="filter-provider">Provider</label>
    <select id="filter-provider" name="provider">${option("", "any", query.provider)}${PROVIDER_IDS.map((id) => option(id, id.toUpperCase(), query.provider))}</select></div>
  <div class="field"><label for="filter-ref">Ref starts with</label>
    <input id="filter-ref" name="ref_prefix" type="search" value="${query.ref_prefix ?? ""}" placeholder="batch-7" autocomplete="off"></div>
  <div class="field"><label for="filter-prompt">Prompt contains</label>
    <input id="filter-prompt" name="q" type="search" value="${query.q ?? ""}" placeholder="lighthouse" maxlength="${PROMPT_SEARCH_MAX_CHARS}" autocomplete="off"></div>
  <div class="field"><button type="submit">Filter</button></div>
  ${filtered(query) ? html`<div class="field"><a href="/">Clear</a></div>` : ""}
</form>`;
}

export function jobsSection(jobs: readonly Job[], query: JobListQuery, nextCursor: string | null, outputs: ReadonlyMap<string, readonly JobOutput[]> = new Map()): Html {
  const filter = { state: query.state, provider: query.provider, ref: query.ref, ref_prefix: query.ref_prefix, q: query.q };
  return html`<section class="panel" aria-labelledby="jobs-title">
<h2 id="jobs-title">Jobs</h2>
${filterForm(query)}
${query.q ? html`<p class="hint" id="search-bound">Prompts are searched among your newest ${PROMPT_SEARCH_WINDOW.toLocaleString("en-US")} jobs only; older ones are not found (filter by ref to reach them).</p>` : ""}
<table class="jobs">
<caption class="visually-hidden">Jobs, newest first</caption>
<thead><tr><th scope="col">Output</th><th scope="col">Ref</th><th scope="col">State</th><th scope="col">Target</th><th scope="col" class="num">Cost</th><th scope="col">Created (UTC)</th><th scope="col">Waiting · rendering · capturing</th></tr></thead>
<tbody>
${jobs.length ? jobs.map((job) => jobRow(job, outputs.get(job.id) ?? [])) : html`<tr id="no-jobs"><td colspan="7">No jobs${filtered(query) ? " match this filter" : " yet"}.</td></tr>`}
</tbody>
</table>
<p class="pager actions">
${query.cursor ? html`<a href="/${queryOf(filter)}">Newest jobs</a>` : ""}
${nextCursor ? html`<a href="/${queryOf({ ...filter, cursor: nextCursor })}">Older jobs</a>` : ""}
</p>
</section>`;
}
