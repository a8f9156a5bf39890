import { type Compilable, type CompiledQuery, sql } from "kysely";
import type { Db } from "./context.js";

/** A value's place in a statement built once (see `reusableStatements`). */
class Slot {
  constructor(readonly name: string) {}
}

/** Statement shapes kept compiled; the loop's hot statements have a few dozen. */
const REUSABLE_STATEMENTS = 256;

/**
 * Runs a statement whose shape `key` names. It is built and compiled at its
 * first use, with `slot(name)` wherever a value changes from one use to the
 * next, then reused with `values` put in those places: building and
 * compiling a statement through Kysely costs more than SQLite takes to run
 * it, and the engine loop runs a few shapes many times a job. `key` must
 * name everything that changes the SQL (lists' lengths, optional clauses).
 */
export type Reusable = <R>(
  executor: Db,
  key: string,
  build: (slot: <T>(name: string) => T) => Compilable<R>,
  values: Record<string, unknown>,
) => Promise<R[]>;

/**
 * One store object's reusable statements, kept compiled by shape, each with
 * the names of the slots among its parameters. `onReusable` is told the SQL
 * of each statement compiled, for a driver that prepares them (PostgreSQL's
 * named statements).
 */
export function reusableStatements(onReusable: ((sql: string) => void) | null): Reusable {
  const statements = new Map<string, { compiled: CompiledQuery; places: Array<string | null> }>();
  return async <R>(executor: Db, key: string, build: (slot: <T>(name: string) => T) => Compilable<R>, values: Record<string, unknown>): Promise<R[]> => {
    let entry = statements.get(key);
    if (!entry) {
      const named = new Map<string, Slot>();
      const slot = <T>(name: string): T => {
        let found = named.get(name);
        if (!found) named.set(name, (found = new Slot(name)));
        return found as T;
      };
      const compiled = build(slot).compile();
      const places = compiled.parameters.map((value) => (value instanceof Slot ? value.name : null));
      for (const name of named.keys()) if (!places.includes(name)) throw new Error(`statement ${key}: ${name} is not one of its parameters`);
      entry = { compiled, places };
      onReusable?.(compiled.sql);
      if (statements.size >= REUSABLE_STATEMENTS) statements.delete(statements.keys().next().value!);
      statements.set(key, entry);
    }
    const { compiled, places } = entry;
    const parameters = compiled.parameters.map((value, index) => {
      const name = places[index];
      if (name === null || name === undefined) return value;
      if (!(name in values)) throw new Error(`statement ${key}: no value for ${name}`);
      return values[name];
    });
    return (await executor.executeQuery<R>({ ...compiled, parameters })).rows;
  };
}

/**
 * A hot query's row limit, written into the statement: SQLite plans a bound
 * `LIMIT ?` inside a subquery without it (six times slower for the queue's
 * heads). The limits are the store's own small integers; one statement is
 * prepared per distinct value.
 */
export function literalLimit(limit: number) {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new Error(`a row limit must be a whole number, not ${limit}`);
  return sql.lit(limit);
}
