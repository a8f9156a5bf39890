import type { PreparedJob } from "../app/prepare.js";

/**
 * Which target a common request goes to, which come after it, and why any
 * other cannot take it. `origin` names the request among several (a batch's
 * "line 3"); a command's one request has none.
 */
export function routeText(route: NonNullable<PreparedJob["route"]>, origin?: string): string {
  const [chosen, ...rest] = route.order;
  const lines = [`${origin ? `${origin}: ` : ""}route: ${chosen!.target.name}${rest.length ? `, then ${rest.map((entry) => entry.target.name).join(", ")}` : ""}`];
  for (const verdict of route.verdicts) if (!verdict.eligible) lines.push(`  ${verdict.target.name} cannot take it: ${verdict.reasons.join("; ")}`);
  return `${lines.join("\n")}\n`;
}

/**
 * What a request says before it is queued, for stderr: each warning (a value
 * a provider changes) and, for a common request, its route. The same for
 * `generate`'s one request and each line of `batch` or `quote --file`.
 */
export function preparedNotes(item: PreparedJob, origin?: string): string {
  const warnings = item.validated.warnings.map((warning) => `mediagate: warning${origin ? ` (${origin})` : ""}: ${warning}\n`);
  return `${warnings.join("")}${item.route ? routeText(item.route, origin) : ""}`;
}
