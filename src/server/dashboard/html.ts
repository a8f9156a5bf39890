/**
 * HTML built from templates in which every interpolated value is escaped
 * unless it is itself built by `html` (or is a list of such): a value can
 * never become markup by accident. Attribute values must be quoted in the
 * template (`href="${url}"`), since escaping protects quoted values only.
 */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => ESCAPES[character]!);
}

/** Nothing for null, undefined and false (so `${condition && html`…`}` reads naturally); lists joined. */
function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let text = strings[0]!;
  for (let index = 0; index < values.length; index++) text += render(values[index]) + strings[index + 1]!;
  return new Html(text);
}

/** A path with each segment encoded (ids handed out by providers or users cannot add a segment, query or fragment). */
export function pathOf(...segments: Array<string | number>): string {
  return segments.map((segment, index) => (index === 0 ? String(segment) : encodeURIComponent(String(segment)))).join("/");
}

/** A query string of the values given (empty ones left out), with its `?`, or "" when none. */
export function queryOf(values: Record<string, string | undefined | null>): string {
  const entries = Object.entries(values).filter((entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "");
  return entries.length ? `?${new URLSearchParams(entries).toString()}` : "";
}
