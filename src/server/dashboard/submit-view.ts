import { createHash } from "node:crypto";
import { COMMON_TASKS } from "../../core/common-request.js";
import { InputError } from "../../core/errors.js";
import { checkJsonText } from "../../core/json-text.js";
import { PROVIDER_IDS, type ProviderId } from "../../providers/adapter.js";
import type { Quote } from "../../app/intake.js";
import { html, type Html } from "./html.js";
import { moneyOf } from "./display.js";
import type { Session } from "./session.js";

/** The submit forms' fields as posted: every value a string, as typed. */
export interface SubmitForm {
  kind: "native" | "common";
  ref: string;
  provider: string;
  model: string;
  operation: string;
  input: string;
  task: string;
  prompt: string;
  size: string;
  aspect_ratio: string;
  duration_s: string;
  targets: string;
  /** The digest of the request last quoted (a hidden field): sending needs the quote of the request sent. */
  quoted: string;
}

const EMPTY: SubmitForm = {
  kind: "native",
  ref: "",
  provider: "d",
  model: "",
  operation: "",
  input: "",
  task: "image",
  prompt: "",
  size: "",
  aspect_ratio: "",
  duration_s: "",
  targets: "",
  quoted: "",
};

export function submitFormOf(fields: URLSearchParams): SubmitForm {
  const form = { ...EMPTY };
  for (const key of Object.keys(EMPTY) as Array<keyof SubmitForm>) {
    const value = fields.get(key);
    if (value !== null && key !== "kind") form[key] = value;
  }
  form.kind = fields.get("kind") === "common" ? "common" : "native";
  return form;
}

export function emptySubmitForm(kind: SubmitForm["kind"]): SubmitForm {
  return { ...EMPTY, kind };
}

/**
 * The request a form describes, in the shape `POST /v1/jobs` takes: native
 * (provider, model, operation, input as JSON) or common (task, prompt, size,
 * aspect_ratio, duration_s, and one target as model or several as route).
 */
export function requestOfForm(form: SubmitForm): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (form.ref.trim()) body.ref = form.ref.trim();
  if (form.kind === "native") {
    body.provider = form.provider;
    body.model = form.model.trim();
    if (form.operation.trim()) body.operation = form.operation.trim();
    checkJsonText(form.input, "input");
    try {
      body.input = form.input.trim() ? JSON.parse(form.input) : {};
    } catch (error) {
      throw new InputError("input", `is not valid JSON (${error instanceof Error ? error.message : String(error)})`, 'a JSON object of the provider\'s fields, e.g. {"prompt": "a lighthouse", "width": 1024, "height": 1024}');
    }
    return body;
  }
  body.task = form.task;
  for (const field of ["prompt", "size", "aspect_ratio"] as const) if (form[field].trim()) body[field] = form[field].trim();
  if (form.duration_s.trim()) {
    const seconds = Number(form.duration_s);
    if (!Number.isFinite(seconds)) throw new InputError("duration_s", `"${form.duration_s}" is not a number of seconds`);
    body.duration_s = seconds;
  }
  const targets = form.targets.split(/[\s,]+/).filter(Boolean);
  if (targets.length === 1) body.model = targets[0];
  else if (targets.length > 1) body.route = targets;
  return body;
}

export function digestOf(request: Record<string, unknown>): string {
  return createHash("sha256").update(JSON.stringify(request)).digest("base64url");
}

export interface SubmitState {
  form: SubmitForm;
  quote?: Quote;
  /** The request changed after it was quoted: this is the new quote, and nothing was sent. */
  requoted?: boolean;
  error?: { message: string; field?: string; targets?: Array<{ target: string; reasons: string[] }> };
}

function field(id: string, label: string, control: Html, hint?: string): Html {
  return html`<div class="field"><label for="${id}">${label}</label>${control}${hint ? html`<span class="hint" id="${id}-hint">${hint}</span>` : ""}</div>`;
}

function describedBy(id: string, hint: boolean): Html | string {
  return hint ? html` aria-describedby="${id}-hint"` : "";
}

function quoteBox(quote: Quote, requoted: boolean): Html {
  return html`<div class="quote" role="status">
<h3>Quote</h3>
${requoted ? html`<p><strong>The request changed since its quote: this is its new quote. Nothing was sent.</strong></p>` : ""}
<dl class="facts">
<dt>Estimate</dt><dd><strong>${moneyOf(quote.estimate_micro_usd)}</strong> <span class="muted">(${quote.source})</span></dd>
<dt>Goes to</dt><dd>${quote.target ?? `${quote.provider}/${quote.model}`}</dd>
${quote.route && quote.route.length > 1 ? html`<dt>Then</dt><dd>${quote.route.slice(1).map((step) => `${step.target} (${moneyOf(step.estimate_micro_usd)})`).join(", ")}</dd>` : ""}
${quote.warnings.length ? html`<dt>Warnings</dt><dd><ul>${quote.warnings.map((warning) => html`<li>${warning}</li>`)}</ul></dd>` : ""}
${quote.ineligible?.length ? html`<dt>Cannot take it</dt><dd><ul>${quote.ineligible.map((entry) => html`<li>${entry.target}: ${entry.reasons.join("; ")}</li>`)}</ul></dd>` : ""}
</dl>
</div>`;
}

function errorBox(error: NonNullable<SubmitState["error"]>): Html {
  // The message names the field already (InputError's "width: must be …").
  return html`<div class="error" role="alert"><p>${error.message}</p>
${error.targets?.length ? html`<ul>${error.targets.map((target) => html`<li>${target.target}: ${target.reasons.join("; ")}</li>`)}</ul>` : ""}</div>`;
}

function formOf(kind: SubmitForm["kind"], state: SubmitState | null, session: Session, providers: ReadonlyMap<ProviderId, { name: string; configured: boolean }>): Html {
  const active = state?.form.kind === kind ? state : null;
  const form = active?.form ?? emptySubmitForm(kind);
  const id = (name: string) => `${kind}-${name}`;
  const quoted = active?.quote && active.form.quoted ? active.form.quoted : "";
  const fields =
    kind === "native"
      ? html`<div class="row">
${field(id("provider"), "Provider", html`<select id="${id("provider")}" name="provider">${PROVIDER_IDS.map((provider) => html`<option value="${provider}"${form.provider === provider ? html` selected` : ""}>${providers.get(provider)?.name ?? provider}${providers.get(provider)?.configured === false ? " (not configured)" : ""}</option>`)}</select>`)}
${field(id("model"), "Model", html`<input id="${id("model")}" name="model" type="text" value="${form.model}" required placeholder="gen-2-pro" autocomplete="off" spellcheck="false">`)}
${field(id("operation"), "Operation (optional)", html`<input id="${id("operation")}" name="operation" type="text" value="${form.operation}" autocomplete="off" spellcheck="false">`)}
</div>
${field(id("input"), "Input (JSON: the provider's own fields)", html`<textarea id="${id("input")}" name="input" spellcheck="false"${describedBy(id("input"), true)} placeholder='{"prompt": "a lighthouse at dusk", "width": 1024, "height": 1024}'>${form.input}</textarea>`, "Exactly what the provider's API takes; checked against its rules before anything is sent.")}`
      : html`<div class="row">
${field(id("task"), "Task", html`<select id="${id("task")}" name="task">${COMMON_TASKS.map((task) => html`<option value="${task}"${form.task === task ? html` selected` : ""}>${task}</option>`)}</select>`)}
${field(id("targets"), "Model or route", html`<input id="${id("targets")}" name="targets" type="text" value="${form.targets}" required placeholder="d/gen-2-pro" autocomplete="off" spellcheck="false"${describedBy(id("targets"), true)}>`, "One target (provider/model), or several separated by commas, tried in order.")}
</div>
${field(id("prompt"), "Prompt", html`<textarea id="${id("prompt")}" name="prompt" rows="3">${form.prompt}</textarea>`)}
<div class="row">
${field(id("size"), "Size (optional)", html`<input id="${id("size")}" name="size" type="text" value="${form.size}" placeholder="1024x768" autocomplete="off">`)}
${field(id("aspect_ratio"), "Aspect ratio (optional)", html`<input id="${id("aspect_ratio")}" name="aspect_ratio" type="text" value="${form.aspect_ratio}" placeholder="16:9" autocomplete="off">`)}
${field(id("duration_s"), "Duration, s (video)", html`<input id="${id("duration_s")}" name="duration_s" type="number" min="1" step="any" value="${form.duration_s}">`)}
</div>`;
  return html`<section class="panel" aria-labelledby="${id("title")}">
<h2 id="${id("title")}">${kind === "native" ? "Native request" : "Common request"}</h2>
<p class="muted">${kind === "native" ? "One provider's model with that provider's own fields." : "One shape for every provider: the target maps it, or says what it cannot honour."}</p>
${active?.error ? errorBox(active.error) : ""}
<form method="post" action="/new#${id("title")}"${quoted ? html` data-quoted="${quoted}"` : ""}>
<input type="hidden" name="form_token" value="${session.formToken}">
<input type="hidden" name="kind" value="${kind}">
<input type="hidden" name="quoted" value="${quoted}">
${fields}
${field(id("ref"), "Ref (optional)", html`<input id="${id("ref")}" name="ref" type="text" value="${form.ref}" autocomplete="off" spellcheck="false"${describedBy(id("ref"), true)}>`, "Your name for the job; sending the same ref and request again answers the job already stored.")}
${active?.quote ? quoteBox(active.quote, active.requoted === true) : ""}
<div class="actions">
<button type="submit" name="step" value="quote"${active?.quote ? "" : html` class="primary"`}>${active?.quote ? "Quote again" : "Quote"}</button>
${active?.quote ? html`<button type="submit" name="step" value="send" class="primary">Send (${moneyOf(active.quote.estimate_micro_usd)})</button><span class="hint stale" hidden>Changed since the quote: quote again before sending.</span>` : ""}
</div>
</form>
</section>`;
}

export function submitPageBody(state: SubmitState | null, session: Session, providers: ReadonlyMap<ProviderId, { name: string; configured: boolean }>): Html {
  return html`<h1>New job</h1>
<p>Quote a request first: its estimate is shown before anything is sent.</p>
${formOf("native", state, session, providers)}
${formOf("common", state, session, providers)}`;
}
