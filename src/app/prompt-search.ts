import { InputError } from "../core/errors.js";
import type { Job } from "../core/job.js";
import { foldAscii } from "../store/body-search.js";
import { scopeOf, type Caller } from "./caller.js";
import type { Runtime } from "./runtime.js";

/**
 * Search by prompt text (issue 37, part 4): a bounded scan, not an index of
 * words. Each search reads the caller's newest `PROMPT_SEARCH_WINDOW` jobs
 * at most (one range of jobs_tenant_created), so its cost does not grow with
 * the store, and finds nothing older; what it says on the page says so.
 */

/** How many of the caller's newest jobs a search reads: enough for a day's work, and a read of a few megabytes at most. */
export const PROMPT_SEARCH_WINDOW = 2_000;
/** The longest text searched for: a few words of a prompt, not a pasted prompt. */
export const PROMPT_SEARCH_MAX_CHARS = 200;

/** The prompt a request carries, whatever its provider calls it (`prompt`, F's `text_prompt` or `json_prompt`, A's text items of `content`); null when none. */
export function promptOf(body: Record<string, unknown>): string | null {
  for (const field of ["prompt", "text_prompt", "json_prompt"]) {
    const value = body[field];
    if (typeof value === "string") return value;
  }
  if (Array.isArray(body.content)) {
    const texts = body.content.flatMap((item) => (item && typeof item === "object" && typeof (item as { text?: unknown }).text === "string" ? [(item as { text: string }).text] : []));
    if (texts.length > 0) return texts.join("\n");
  }
  return null;
}

/** The text to search for, trimmed; refused in one sentence naming the field (`q`) when empty or too long. */
export function promptSearchText(text: string, field = "q"): string {
  const trimmed = text.trim();
  if (trimmed.length === 0) throw new InputError(field, "is empty", `1 to ${PROMPT_SEARCH_MAX_CHARS} characters of a prompt`);
  if (trimmed.length > PROMPT_SEARCH_MAX_CHARS) throw new InputError(field, `is ${trimmed.length} characters long`, `1 to ${PROMPT_SEARCH_MAX_CHARS} characters of a prompt`);
  return trimmed;
}

/** Whether a job's prompt holds the text (ASCII letters of either case, as the store compares them). */
export function promptMatches(job: Pick<Job, "body">, text: string): boolean {
  return promptOf(job.body) !== null && foldAscii(promptOf(job.body)!).includes(foldAscii(text));
}

/**
 * The caller's jobs (every tenant's for an admin) among its newest
 * `PROMPT_SEARCH_WINDOW` whose prompt holds `text`, newest first, a page of
 * at most `limit`, after `olderThan`; `next` continues the search (a page
 * may hold fewer than `limit`: the requests read held the text elsewhere).
 */
export async function searchPrompts(
  runtime: Runtime,
  caller: Caller,
  text: string,
  limit: number,
  olderThan?: Pick<Job, "createdAt" | "id">,
): Promise<{ jobs: Job[]; next: Pick<Job, "createdAt" | "id"> | null; window: number }> {
  const wanted = promptSearchText(text);
  const tenant = scopeOf(caller);
  const candidates = await (await runtime.store()).searchRecentBodies({
    text: wanted,
    ...(tenant !== undefined ? { tenant } : {}),
    window: PROMPT_SEARCH_WINDOW,
    ...(olderThan ? { olderThan: { createdAt: olderThan.createdAt, id: olderThan.id } } : {}),
    limit: limit + 1,
  });
  const page = candidates.slice(0, limit);
  return { jobs: page.filter((job) => promptMatches(job, wanted)), next: candidates.length > limit ? page.at(-1)! : null, window: PROMPT_SEARCH_WINDOW };
}
