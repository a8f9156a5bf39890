import { PROVIDER_IDS, type ProviderId } from "../../providers/adapter.js";
import type { DailySpendView } from "../../app/queries.js";
import type { DailySpend } from "../../store/store.js";
import { html, type Html } from "./html.js";
import { moneyOf } from "./display.js";

/** The chart and its table cover this many UTC days, today included: one bounded read. */
export const SPEND_DAYS = 14;

type SpendView = DailySpendView;

function dayName(day: number): string {
  return new Date(day).toISOString().slice(0, 10);
}

const CHART = { width: 400, height: 150, top: 16, bottom: 20, left: 4, right: 12 };

/**
 * Two bars a day, each stacked by provider: estimated (pale) and settled
 * (solid). An SVG drawn here, no library; the table below it says the same in
 * numbers, for readers who cannot see it.
 */
function chartOf(view: SpendView): Html {
  const slot = (CHART.width - CHART.left - CHART.right) / view.days.length;
  const barWidth = Math.max(2, Math.floor(slot / 2) - 3);
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const totals = view.days.map((day) => {
    const lines = view.lines.filter((line) => line.day === day);
    return { day, lines, settled: lines.reduce((sum, line) => sum + line.settledMicroUsd, 0), estimated: lines.reduce((sum, line) => sum + line.estimatedMicroUsd, 0) };
  });
  const top = Math.max(1, ...totals.map((total) => Math.max(total.settled, total.estimated)));
  const scale = (microUsd: number) => (microUsd / top) * plotHeight;
  const stack = (lines: readonly DailySpend[], x: number, pick: (line: DailySpend) => number, className: string) => {
    let base = CHART.top + plotHeight;
    return PROVIDER_IDS.map((provider) => {
      const value = lines.filter((line) => line.provider === provider).reduce((sum, line) => sum + pick(line), 0);
      if (value <= 0) return "";
      const height = Math.max(1, scale(value));
      base -= height;
      return html`<rect class="p-${provider}${className}" x="${x.toFixed(1)}" y="${base.toFixed(1)}" width="${barWidth}" height="${height.toFixed(1)}"></rect>`;
    });
  };
  return html`<svg class="chart" viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-labelledby="spend-chart-title">
<title id="spend-chart-title">Spend per day over the last ${SPEND_DAYS} days (UTC): for each day, estimated then settled, by provider; the highest bar is ${moneyOf(top)}</title>
<text x="${CHART.left}" y="11">${moneyOf(top)}</text>
<line class="axis" x1="${CHART.left}" x2="${CHART.width}" y1="${CHART.top + plotHeight}" y2="${CHART.top + plotHeight}"></line>
${totals.map((total, index) => {
  const x = CHART.left + index * slot + 2;
  return html`<g><title>${dayName(total.day)}: estimated ${moneyOf(total.estimated)}, settled ${moneyOf(total.settled)}</title>
${stack(total.lines, x, (line) => line.estimatedMicroUsd, " estimated")}
${stack(total.lines, x + barWidth + 2, (line) => line.settledMicroUsd, "")}
${index % 2 === view.days.length % 2 ? "" : html`<text x="${(x + barWidth + 1).toFixed(1)}" y="${CHART.height - 6}" text-anchor="middle">${dayName(total.day).slice(5)}</text>`}</g>`;
})}
</svg>`;
}

/**
 * A sum beside the jobs it cannot count: unpriced is not free. Only unpriced
 * jobs and nothing counted: "unpriced"; some of each: "$x + N unpriced".
 */
function sumWithUnpriced(microUsd: number, unpriced: number): Html {
  if (unpriced === 0) return html`${moneyOf(microUsd)}`;
  const jobs = `${unpriced} unpriced job${unpriced === 1 ? "" : "s"}`;
  if (microUsd === 0) return html`<span class="unpriced">unpriced</span> <span class="muted">(${jobs})</span>`;
  return html`${moneyOf(microUsd)} <span class="muted">+ ${jobs}</span>`;
}

/** The panel's content (the part /events replaces). */
export function spendPanel(view: SpendView): Html {
  const byProvider = new Map<ProviderId, { settled: number; estimated: number; unpriced: number }>();
  for (const line of view.lines) {
    const sum = byProvider.get(line.provider) ?? { settled: 0, estimated: 0, unpriced: 0 };
    sum.settled += line.settledMicroUsd;
    sum.estimated += line.estimatedMicroUsd;
    sum.unpriced += line.unpricedJobs;
    byProvider.set(line.provider, sum);
  }
  const providers = PROVIDER_IDS.filter((id) => byProvider.has(id));
  const settled = view.lines.reduce((sum, line) => sum + line.settledMicroUsd, 0);
  const estimated = view.lines.reduce((sum, line) => sum + line.estimatedMicroUsd, 0);
  const unpriced = view.lines.reduce((sum, line) => sum + line.unpricedJobs, 0);
  return html`<p>Last ${SPEND_DAYS} days (UTC, ${dayName(view.days[0]!)} to ${dayName(view.days.at(-1)!)}): settled <strong>${sumWithUnpriced(settled, unpriced)}</strong> against <strong>${sumWithUnpriced(estimated, unpriced)}</strong> estimated.</p>
${chartOf(view)}
<ul class="legend" aria-hidden="true">
${PROVIDER_IDS.map((id) => html`<li><span class="swatch p-${id}"></span>${id.toUpperCase()}</li>`)}
<li><span class="swatch p-d estimated"></span>pale: estimated</li>
</ul>
<div class="scroll"><table class="spend">
<caption class="visually-hidden">Spend by provider over the last ${SPEND_DAYS} days</caption>
<thead><tr><th scope="col">Provider</th><th scope="col" class="num">Settled</th><th scope="col" class="num">Estimated</th></tr></thead>
<tbody>
${providers.length ? providers.map((id) => {
  const sum = byProvider.get(id)!;
  return html`<tr><th scope="row">${id.toUpperCase()}</th><td class="num">${sumWithUnpriced(sum.settled, sum.unpriced)}</td><td class="num">${sumWithUnpriced(sum.estimated, sum.unpriced)}</td></tr>`;
}) : html`<tr><td colspan="3">Nothing spent or estimated in these days.</td></tr>`}
</tbody>
</table></div>
${
  view.lines.length
    ? html`<details><summary>By day</summary><div class="scroll"><table class="spend">
<thead><tr><th scope="col">Day</th><th scope="col">Provider</th><th scope="col" class="num">Settled</th><th scope="col" class="num">Estimated</th></tr></thead>
<tbody>${[...view.lines].reverse().map((line) => html`<tr><td>${dayName(line.day)}</td><td>${line.provider.toUpperCase()}</td><td class="num">${moneyOf(line.settledMicroUsd)}</td><td class="num">${moneyOf(line.estimatedMicroUsd)}</td></tr>`)}</tbody>
</table></div></details>`
    : ""
}`;
}

export function spendSection(view: SpendView): Html {
  return html`<section class="panel" id="spend" aria-labelledby="spend-title">
<h2 id="spend-title">Spend</h2>
<div data-panel="spend">${spendPanel(view)}</div>
</section>`;
}
