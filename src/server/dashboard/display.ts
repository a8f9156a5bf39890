import type { JobState } from "../../core/job.js";
import { formatMicroUsd } from "../../core/money.js";
import { html, type Html } from "./html.js";

/** A time as the dashboard shows it: UTC to the second, machine-readable in `datetime`. */
export function timeOf(at: number | null): Html {
  if (at === null) return html`<span class="muted">—</span>`;
  const iso = new Date(at).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace("T", " ")}</time>`;
}

export function moneyOf(microUsd: number | null): string {
  return microUsd === null ? "unpriced" : formatMicroUsd(microUsd);
}

/** A job's state as a badge; its class gives it a colour, its text says it (colour is never the only sign). */
export function stateBadge(state: JobState): Html {
  return html`<span class="state state-${state}">${state.replace("_", " ")}</span>`;
}

export function bytesOf(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
