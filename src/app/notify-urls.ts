import { displayUrl, redactDeep, redactUrl } from "../core/redact.js";
import type { Job, JobEvent } from "../core/job.js";
import type { Store } from "../store/store.js";

/**
 * A job's notify URL (its own `notify_url`, or MEDIAGATE_NOTIFY_URL) may
 * carry the receiver's token in its path or query, so the API and the
 * dashboard show it only as `redactUrl` does: scheme and host. The stored
 * URL, which notifications are delivered to, is kept whole.
 */

/**
 * Replaces each of `urls` in text by its redacted form, whether written
 * whole or as events recorded before this redaction wrote it: origin and
 * path, the query cut to `?…`.
 */
export function notifyUrlRedactor(urls: Iterable<string | null | undefined>): (text: string) => string {
  const replacements = new Map<string, string>();
  for (const url of urls) {
    if (!url) continue;
    const shown = redactUrl(url);
    const forms = [url];
    // As older events quote it (displayUrl: the query cut to "?…"), and that without the "?…".
    if (URL.canParse(url)) {
      const quoted = displayUrl(url);
      forms.push(quoted, quoted.replace(/\?…$/, ""));
    }
    // A form the redacted text starts with (an origin with a bare "/" path) hides nothing, and would match the redacted text itself.
    for (const form of forms) if (form.length > 0 && !shown.startsWith(form)) replacements.set(form, shown);
  }
  if (replacements.size === 0) return (text) => text;
  // One pass, longest form first: a URL's whole text before the shorter forms it starts with, and no replacement replaced again.
  const pattern = new RegExp([...replacements.keys()].sort((left, right) => right.length - left.length).map(escapeRegExp).join("|"), "g");
  return (text) => text.replace(pattern, (form) => replacements.get(form)!);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A job's events as the API and dashboard show them: every URL it was notified at (or owes a notification to) redacted. */
export async function shownEvents(store: Store, job: Pick<Job, "id" | "notifyUrl">, defaultNotifyUrl: string | null): Promise<JobEvent[]> {
  const [events, notifications] = await Promise.all([store.events(job.id), store.notifications(job.id)]);
  const redact = notifyUrlRedactor([job.notifyUrl, defaultNotifyUrl, ...notifications.map((notification) => notification.url)]);
  return events.map((event) => ({ ...event, reason: redact(event.reason), detail: redactDeep(event.detail, redact) }));
}

/** The notify URL a job shows (null: it has none of its own). */
export function shownNotifyUrl(job: Pick<Job, "notifyUrl">): string | null {
  return job.notifyUrl === null ? null : redactUrl(job.notifyUrl);
}
