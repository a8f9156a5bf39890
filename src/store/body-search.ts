import { sql } from "kysely";
import type { Job } from "../core/job.js";
import type { StoreContext } from "./context.js";
import { rowToJob } from "./rows.js";

/** A search of the newest jobs' requests for a text (the dashboard's search by prompt). */
export interface BodySearch {
  /** The text, as typed: matched in the request's JSON, ASCII letters of either case. */
  text: string;
  /** Only this tenant's jobs (undefined: every tenant's, an admin's search). */
  tenant?: string;
  /** How many of the newest jobs are searched at most: the bound that keeps a search's cost flat in the store's size. */
  window: number;
  /** Newest first: the jobs after this one (the previous page's last). */
  olderThan?: { createdAt: number; id: string };
  limit: number;
}

/** ASCII letters in lower case, the others as they are: what both stores fold alike (SQLite's lower() folds only these). */
export function foldAscii(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
}

/** `text` as it appears inside a JSON string (quotes and backslashes escaped), then as a LIKE pattern's literal part. */
function likeLiteral(text: string): string {
  return JSON.stringify(foldAscii(text)).slice(1, -1).replace(/[\\%_]/g, (special) => `\\${special}`);
}

/**
 * Jobs among the newest `window` (one tenant's: a range of jobs_tenant_created;
 * everyone's: of jobs_created) whose request's JSON holds the text, newest
 * first. A bounded scan, not an index of words: each search reads at most
 * `window` rows, whatever the store holds, and finds nothing older. The
 * caller checks the match is in the prompt (the JSON holds other fields).
 */
export async function searchRecentBodies(context: StoreContext, search: BodySearch): Promise<Job[]> {
  const pattern = `%${likeLiteral(search.text)}%`;
  let recent = context.db.selectFrom("jobs").select("id");
  if (search.tenant !== undefined) recent = recent.where("tenant", "=", search.tenant);
  recent = recent.orderBy("created_at", "desc").orderBy("id", "desc").limit(search.window);
  const folded = context.dialect === "postgres" ? sql`translate(body_json, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')` : sql`lower(body_json)`;
  let query = context.db
    .selectFrom("jobs")
    .selectAll()
    .where("id", "in", recent)
    .where(sql<boolean>`${folded} like ${pattern} escape '\\'`);
  if (search.olderThan !== undefined) {
    const { createdAt, id } = search.olderThan;
    query = query.where((eb) => eb.or([eb("created_at", "<", createdAt), eb.and([eb("created_at", "=", createdAt), eb("id", "<", id)])]));
  }
  const rows = await query.orderBy("created_at", "desc").orderBy("id", "desc").limit(search.limit).execute();
  return rows.map(rowToJob);
}
