import type { ProviderState } from "../../app/provider-states.js";
import { html, pathOf, type Html } from "./html.js";
import { timeOf } from "./display.js";

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
