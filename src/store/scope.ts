import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import type { Database } from "./schema.js";
import type { JobScope } from "./store.js";

/** Ids per statement: well under SQLite's and PostgreSQL's limits on bound parameters. */
export const IDS_PER_STATEMENT = 1_000;

/** The jobs of one command: its batch (indexed by batch, state, due time) or its few job ids. */
export function inScope(eb: ExpressionBuilder<Database, "jobs">, scope: JobScope): Expression<SqlBool> {
  const values = scopeValuesOf(scope);
  return inScopeSlots(eb, scope, <T>(name: string) => values[name] as T);
}

/** What of a scope changes the SQL of a reusable statement: a command's own ids change from call to call in number only. */
export function scopeKeyOf(scope: JobScope | null): string {
  return scope === null ? "all" : "batchId" in scope ? "batch" : `ids${scope.jobIds.length}`;
}

/** The values of a scope's slots (see `inScopeSlots`). */
export function scopeValuesOf(scope: JobScope | null): Record<string, string> {
  if (scope === null) return {};
  if ("batchId" in scope) return { batchId: scope.batchId };
  return Object.fromEntries(scope.jobIds.map((id, index) => [`id${index}`, id]));
}

/** `inScope` for a reusable statement: its values in slots. */
export function inScopeSlots(eb: ExpressionBuilder<Database, "jobs">, scope: JobScope, slot: <T>(name: string) => T): Expression<SqlBool> {
  if ("batchId" in scope) return eb("batch_id", "=", slot<string>("batchId"));
  return scope.jobIds.length ? eb("id", "in", scope.jobIds.map((_, index) => slot<string>(`id${index}`))) : sql<SqlBool>`1 = 0`;
}

/** A scope of many ids as several, each small enough for one statement. */
export function scopeParts(scope: JobScope): JobScope[] {
  if ("batchId" in scope || scope.jobIds.length <= IDS_PER_STATEMENT) return [scope];
  const parts: JobScope[] = [];
  for (let start = 0; start < scope.jobIds.length; start += IDS_PER_STATEMENT) parts.push({ jobIds: scope.jobIds.slice(start, start + IDS_PER_STATEMENT) });
  return parts;
}
