import type { Runtime } from "../../cli/runtime.js";
import type { Job } from "../../core/job.js";
import { validatedOf } from "../../engine/context.js";
import { PROVIDER_IDS, type ProviderId, type ProviderLimits, type ValidatedRequest } from "../../providers/adapter.js";
import type { ProviderHalt, RateWindowUsage, Store } from "../../store/store.js";
import type { Caller } from "../api/caller.js";
import { html, pathOf, type Html } from "./html.js";
import { timeOf } from "./display.js";

/** Recent errors are looked for among this many of the newest jobs the caller can see: one bounded read. */
const RECENT_JOBS = 100;
const ERRORS_SHOWN = 3;

export interface ProviderState {
  id: ProviderId;
  name: string;
  configured: boolean;
  missing: string[];
  slots: Array<{ pool: string; inUse: number; capacity: number; pausedUntil: number | null }>;
  rates: RateWindowUsage[];
  halt: ProviderHalt | null;
  errors: Array<{ jobId: string; ref: string; code: string; at: number }>;
}

/** What a provider's limits are for a request like `job` (or, with none seen, for a bare request; null when the adapter cannot say). */
function limitsOf(runtime: Runtime, provider: ProviderId, job: Job | undefined): ProviderLimits | null {
  const adapter = runtime.providers.get(provider)?.adapter;
  if (!adapter) return null;
  const request: ValidatedRequest = job ? validatedOf(job) : { provider, model: "", operation: null, body: {}, warnings: [], facts: {} };
  try {
    return adapter.limits(request);
  } catch {
    return null;
  }
}

/**
 * Each provider as the panel shows it: configured or what is missing, slots
 * in use against the cap (as `GET /v1/providers`), what its rate windows
 * count now, its halt, and the errors among the newest jobs the caller can see.
 */
export async function providerStates(runtime: Runtime, store: Store, caller: Caller, now: number): Promise<ProviderState[]> {
  const tokenId = caller.admin ? undefined : (caller.token?.id ?? "");
  const [pools, halts, recent] = await Promise.all([
    store.poolStatus(),
    store.halts(),
    store.listJobs({ newestFirst: true, limit: RECENT_JOBS, ...(tokenId !== undefined ? { tokenId } : {}) }),
  ]);
  const states: ProviderState[] = [];
  for (const id of PROVIDER_IDS) {
    const entry = runtime.providers.get(id);
    const limits = limitsOf(runtime, id, recent.find((job) => job.provider === id));
    const slots = new Map<string, ProviderState["slots"][number]>();
    for (const pool of limits?.slotPools ?? []) slots.set(pool.key, { pool: pool.key, inUse: 0, capacity: pool.capacity, pausedUntil: null });
    for (const pool of pools.filter((each) => each.key.startsWith(`${id}:`))) {
      slots.set(pool.key, { pool: pool.key, inUse: pool.held, capacity: Math.min(pool.configuredCapacity, pool.learnedCapacity), pausedUntil: pool.blockedUntil > now ? pool.blockedUntil : null });
    }
    const errors = recent
      .filter((job) => job.provider === id && job.error !== null)
      .slice(0, ERRORS_SHOWN)
      .map((job) => ({ jobId: job.id, ref: job.ref, code: job.error!.code, at: job.finishedAt ?? job.updatedAt }));
    states.push({
      id,
      name: entry?.adapter?.displayName ?? id.toUpperCase(),
      configured: entry !== undefined && entry.adapter !== null && entry.missing.length === 0,
      missing: entry?.missing ?? [],
      slots: [...slots.values()],
      rates: limits?.rateWindows.length ? await store.rateWindowUsage(limits.rateWindows, now) : [],
      halt: halts.find((halt) => halt.provider === id) ?? null,
      errors,
    });
  }
  return states;
}

function windowName(windowMs: number): string {
  if (windowMs % 3_600_000 === 0) return windowMs === 3_600_000 ? "hour" : `${windowMs / 3_600_000} h`;
  if (windowMs % 60_000 === 0) return windowMs === 60_000 ? "minute" : `${windowMs / 60_000} min`;
  return `${windowMs / 1_000} s`;
}

function providerCard(state: ProviderState): Html {
  return html`<article class="provider" aria-labelledby="provider-${state.id}">
<h3 id="provider-${state.id}"><span>${state.name}</span>${state.configured ? "" : html`<span class="muted">not configured</span>`}</h3>
${state.halt ? html`<p class="halt">Halted: ${state.halt.code} (${timeOf(state.halt.at)}): ${state.halt.message}</p>` : ""}
${state.configured ? "" : html`<p class="muted">Set ${state.missing.join(", ") || "its variables"} to send jobs.</p>`}
${
  state.slots.length
    ? state.slots.map(
        (slot) => html`<div><span class="label">Slots ${slot.pool}: ${slot.inUse} of ${slot.capacity} in use${slot.pausedUntil ? html` (paused until ${timeOf(slot.pausedUntil)})` : ""}</span>
<meter min="0" max="${Math.max(slot.capacity, 1)}" value="${slot.inUse}" aria-label="Slots of ${slot.pool} in use">${slot.inUse} of ${slot.capacity}</meter></div>`,
      )
    : html`<p class="muted">No published concurrency cap.</p>`
}
${
  state.rates.length
    ? state.rates.map(
        (rate) => html`<div><span class="label">Rate ${rate.key}: ${rate.used} of ${rate.limit} a ${windowName(rate.windowMs)}</span>
<meter min="0" max="${rate.limit}" value="${Math.min(rate.used, rate.limit)}" aria-label="Requests counted in ${rate.key}">${rate.used} of ${rate.limit}</meter></div>`,
      )
    : html`<p class="muted">No published rate limit.</p>`
}
${
  state.errors.length
    ? html`<p class="label">Recent errors</p><ul>${state.errors.map((error) => html`<li><a href="${pathOf("/jobs", error.jobId)}">${error.ref}</a>: ${error.code} ${timeOf(error.at)}</li>`)}</ul>`
    : html`<p class="muted">No errors among the recent jobs.</p>`
}
</article>`;
}

/** The panel's content (the part /events replaces). */
export function providersPanel(states: readonly ProviderState[]): Html {
  return html`<div class="providers">${states.map(providerCard)}</div>`;
}

export function providersSection(states: readonly ProviderState[]): Html {
  return html`<section class="panel" id="providers" aria-labelledby="providers-title">
<h2 id="providers-title">Providers</h2>
<div data-panel="providers">${providersPanel(states)}</div>
</section>`;
}
