import { isUtf8 } from "node:buffer";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { cancelBatchUnsent, cancelJob } from "../../app/cancel.js";
import { searchPrompts } from "../../app/prompt-search.js";
import { remoteJob } from "../../app/job-view.js";
import { NO_TIMING, timingsOf } from "../../app/eta.js";
import { submitJob, quoteOf } from "../../app/intake.js";
import { providerStates } from "../../app/provider-states.js";
import { BATCH_FAILURES_SHOWN, batchFailures, batchOf, jobEvents, jobOutput, jobOutputs, listJobs, spendOfDays, visibleJob } from "../../app/queries.js";
import type { Runtime } from "../../app/runtime.js";
import { tokenOfSecret } from "../../app/tokens.js";
import type { Caller } from "../../app/caller.js";
import { isTerminal, type Job, type JobOutput } from "../../core/job.js";
import type { Engine } from "../../engine/engine.js";
import type { EngineLogger } from "../../engine/logger.js";
import { PROVIDER_IDS, type ProviderId } from "../../providers/adapter.js";
import { ApiError, apiErrorOf, failureOf, frameworkErrorCode } from "../api/errors.js";
import { decodeCursor, encodeCursor, jobListQuery, quotedRequestOfBody, submissionOfBody } from "../api/requests.js";
import { sendOutputFile } from "../output-file.js";
import { errorBody } from "../error-body.js";
import { InputError } from "../../core/errors.js";
import { checkWellFormed } from "../../core/well-formed.js";
import { ASSETS } from "./assets.js";
import { EventStreams } from "./events.js";
import { JobFeed } from "./feed.js";
import { html, pathOf, queryOf, type Html } from "./html.js";
import { againPanel, jobPageBody, jobParts, timingPart } from "./job-view.js";
import { batchPageBody, batchPanels } from "./batch-view.js";
import { jobListQueryOf, jobRow, jobsSection, matchesFilter, type JobListQuery } from "./jobs-view.js";
import { pageOf, type PageOptions } from "./layout.js";
import { errorPageBody, localPath, loginPageBody } from "./login-view.js";
import { providersPanel, providersSection } from "./providers-view.js";
import { clearedSessionCookie, DashboardSessions, sameOrigin, sessionCookie, type Session } from "./session.js";
import { SPEND_DAYS, spendPanel, spendSection } from "./spend-view.js";
import { digestOf, emptySubmitForm, requestOfForm, submitFormOf, submitPageBody, type SubmitState } from "./submit-view.js";

export interface DashboardDeps {
  runtime: Runtime;
  log: EngineLogger;
  /** The engine of this process: its changes reach open pages as they happen. */
  engine: Engine;
}

declare module "fastify" {
  interface FastifyRequest {
    dashboardSession?: Session;
  }
}

/** Rows of the job table per page. */
const TABLE_ROWS = 50;
/** Open event streams at most; more are answered 503 (each holds a connection and a place in the feed). */
const STREAMS_MAX = 200;
/** A job page's queue position and expected times are drawn again this often while it waits or runs. */
const TIMING_EVERY_MS = 2_000;

/**
 * Pages draw nothing from elsewhere and run only this server's own script:
 * whatever a value holds, it cannot load or run anything, nor be framed.
 */
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "x-content-type-options": "nosniff",
};

/**
 * An output is whatever its provider sent: opened on its own, it runs no
 * script and reaches nothing of this origin (an SVG or HTML answer included).
 */
const OUTPUT_POLICY = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox";

function queryValues(request: FastifyRequest): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
    values[name] = Array.isArray(value) ? String(value.at(-1)) : value === undefined ? undefined : String(value);
    if (values[name] !== undefined) checkWellFormed(values[name], name);
  }
  return values;
}

/**
 * The fields of a form POST (`application/x-www-form-urlencoded`, what a
 * form sends without an enctype), decoded strictly: URLSearchParams would
 * read a percent-encoding that is not UTF-8 as U+FFFD, another text than the
 * one sent.
 */
function formFields(request: FastifyRequest): URLSearchParams {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw new ApiError("invalid_input", "a form is sent as application/x-www-form-urlencoded");
  const fields = new URLSearchParams();
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  if (!isUtf8(body)) throw new ApiError("invalid_input", "the form is not UTF-8 text", { field: "form" });
  const text = body.toString("utf8");
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const [name = "", value = ""] = pair.split(/=(.*)/s).map((part) => part.replace(/\+/g, " "));
    let decodedName: string;
    try {
      decodedName = decodeURIComponent(name);
    } catch {
      throw new ApiError("invalid_input", "a form field's name is not percent-encoded UTF-8", { field: "form" });
    }
    try {
      fields.append(decodedName, decodeURIComponent(value));
    } catch {
      throw new InputError(decodedName.slice(0, 40), "is not percent-encoded UTF-8 text", "what a browser sends from the form");
    }
  }
  return fields;
}

function sendPage(reply: FastifyReply, status: number, options: PageOptions): FastifyReply {
  return reply.code(status).headers(PAGE_HEADERS).send(pageOf(options).text);
}

/** Routes answered with bytes or a stream rather than a page: their errors are the server's error shape, not a page. */
function answersPlainly(request: FastifyRequest): boolean {
  const route = request.routeOptions.url ?? "";
  return route === "/events" || route.startsWith("/jobs/:id/outputs") || route.startsWith("/assets");
}

/**
 * The dashboard at `/`: server-drawn pages (jobs, a job, providers, spend,
 * a submit form with its quote), whole without script; `/events` streams
 * job changes to the pages that follow them. Access is the API's: a token
 * (logged in by a form into an HttpOnly, SameSite=Strict cookie, or a bearer
 * header) sees its own jobs unless admin; without any token in the store the
 * local user is admin, on loopback names only. Every form POST must come
 * from a page of this server (Origin) and carry its session's form token.
 */
export function registerDashboard(app: FastifyInstance, deps: DashboardDeps): void {
  const { runtime, log } = deps;
  const store = () => runtime.store();
  const sessions = new DashboardSessions(store);
  const feed = new JobFeed({ engine: deps.engine, store, log });
  const streams = new EventStreams();
  app.addHook("preClose", async () => {
    streams.closeAll();
    feed.close();
  });

  const providerNames = () =>
    new Map<ProviderId, { name: string; configured: boolean }>(
      PROVIDER_IDS.map((id) => {
        const entry = runtime.providers.get(id);
        return [id, { name: entry?.adapter?.displayName ?? id.toUpperCase(), configured: entry !== undefined && entry.adapter !== null && entry.missing.length === 0 }];
      }),
    );

  /**
   * The table's page of jobs for a query of the listing's filters, with the
   * page's outputs (its thumbnails) in one read. A prompt search (`q`) reads
   * the newest jobs only (app/prompt-search.ts), the other filters checked
   * on what it found.
   */
  const pageOfJobs = async (caller: Caller, query: JobListQuery): Promise<{ jobs: Job[]; nextCursor: string | null; outputs: Map<string, JobOutput[]> }> => {
    const { q, ...listed } = query;
    let page: { jobs: Job[]; next: Pick<Job, "createdAt" | "id"> | null };
    if (q !== undefined) {
      // The cursor is checked as the listing checks it; the filters other than the search are applied to its finds.
      jobListQuery({ ...listed });
      const found = await searchPrompts(runtime, caller, q, TABLE_ROWS, query.cursor === undefined ? undefined : decodeCursor(query.cursor));
      page = { jobs: found.jobs.filter(matchesFilter({ ...listed, cursor: undefined })), next: found.next };
    } else {
      const { filter } = jobListQuery({ ...listed });
      page = await listJobs(runtime, caller, filter, TABLE_ROWS);
    }
    const outputs = await (await store()).outputsOfJobs(page.jobs.filter((job) => job.state === "succeeded").map((job) => job.id));
    return { jobs: page.jobs, nextCursor: page.next ? encodeCursor(page.next) : null, outputs };
  };

  const errorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const known = apiErrorOf(error);
    const status = known?.status ?? (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500);
    if (!known && status === 500) log.error({ method: request.method, path: request.url.split("?")[0], caller: request.dashboardSession?.caller.name ?? null, ...failureOf(error) }, "dashboard request failed");
    const message = known?.message ?? (status === 413 ? "the form is larger than the server takes" : status < 500 ? error.message : "the request could not be handled; it was logged");
    if (answersPlainly(request)) return reply.code(status).send(known?.body() ?? errorBody(status === 500 ? "internal_error" : frameworkErrorCode(status), message));
    const title = status === 404 ? "Not found" : status === 403 ? "Not allowed" : status < 500 ? "Refused" : "Something went wrong";
    return sendPage(reply, status, { title, session: request.dashboardSession ?? null, section: "error", body: errorPageBody(title, message) });
  };

  // Pages anyone may load: the login form and the static files.
  app.register(async (open) => {
    open.setErrorHandler(errorHandler);
    open.get<{ Params: { name: string } }>("/assets/:name", async (request, reply) => {
      const asset = ASSETS[request.params.name];
      if (!asset) throw new ApiError("not_found", `no asset ${request.params.name}`);
      reply.header("etag", asset.etag).header("cache-control", "public, max-age=3600").header("x-content-type-options", "nosniff");
      if (request.headers["if-none-match"] === asset.etag) return reply.code(304).send();
      return reply.type(asset.contentType).send(asset.body);
    });
    open.get("/favicon.ico", async (_request, reply) => reply.code(204).header("cache-control", "public, max-age=86400").send());

    open.get("/login", async (request, reply) => {
      const next = localPath(queryValues(request).next);
      const answer = await sessions.sessionOf(request);
      if ("session" in answer) return reply.redirect(next, 303);
      if (answer.status === 403) return sendPage(reply, 403, { title: "Not allowed", session: null, section: "error", body: errorPageBody("Not allowed", answer.refused) });
      return sendPage(reply, 200, { title: "Log in", session: null, section: "login", body: loginPageBody({ next }) });
    });
    open.post("/login", async (request, reply) => {
      const fields = formFields(request);
      const next = localPath(fields.get("next"));
      // No session to hold a form token yet: the Origin check alone keeps other sites from logging a browser in.
      if (!sameOrigin(request)) return sendPage(reply, 403, { title: "Log in", session: null, section: "login", body: loginPageBody({ next, error: "the form was not sent from a page of this server" }) });
      const opened = await store();
      if (!(await opened.hasActiveTokens())) return reply.redirect("/", 303);
      const secret = (fields.get("token") ?? "").trim();
      const found = await tokenOfSecret(opened, secret);
      if ("refused" in found) return sendPage(reply, 401, { title: "Log in", session: null, section: "login", body: loginPageBody({ next, error: found.refused }) });
      return reply.header("set-cookie", sessionCookie(request, secret)).redirect(next, 303);
    });
  });

  app.register(async (dashboard) => {
    dashboard.setErrorHandler(errorHandler);
    dashboard.addHook("onRequest", async (request, reply) => {
      const answer = await sessions.sessionOf(request);
      if ("session" in answer) {
        request.dashboardSession = answer.session;
        return;
      }
      if (answersPlainly(request)) return reply.code(answer.status).send(errorBody(answer.status === 401 ? "unauthorized" : "loopback_only", answer.refused));
      if (answer.status === 401 && request.method === "GET") return reply.redirect(`/login${queryOf({ next: request.url })}`, 303);
      const title = answer.status === 401 ? "Log in first" : "Not allowed";
      return sendPage(reply, answer.status, { title, session: null, section: "error", body: html`${errorPageBody(title, answer.refused)}${answer.status === 401 ? html`<p><a href="/login">Log in</a></p>` : ""}` });
    });

    /** Refuses a form that did not come from this session's own page, or that needs more than a read-only token. */
    const refuseForm = (request: FastifyRequest, reply: FastifyReply, fields: URLSearchParams, writes: boolean): FastifyReply | null => {
      const session = request.dashboardSession!;
      const refusal = sessions.checkForm(request, session, fields.get("form_token") ?? undefined);
      const reason = refusal ?? (writes && session.caller.readOnly ? `token ${session.caller.name} is read-only: it cannot submit or cancel jobs` : null);
      if (reason === null) return null;
      return sendPage(reply, 403, { title: "Not allowed", session, section: "error", body: errorPageBody("Not allowed", reason) });
    };

    dashboard.get("/", async (request, reply) => {
      const session = request.dashboardSession!;
      const caller = session.caller;
      // Taken before anything is read: the page's stream sends what changes from here on.
      const readAt = Date.now();
      const values = queryValues(request);
      const query = jobListQueryOf(values);
      let notice: Html | null = null;
      let jobs: { jobs: Job[]; nextCursor: string | null; outputs: Map<string, JobOutput[]> } = { jobs: [], nextCursor: null, outputs: new Map() };
      try {
        jobs = await pageOfJobs(caller, query);
      } catch (error) {
        const known = apiErrorOf(error);
        if (!known) throw error;
        notice = html`<div class="error" role="alert"><p>${known.message}</p></div>`;
      }
      if (values.created) {
        const created = await visibleJob(runtime, caller, values.created).catch(() => null);
        if (created) notice = html`<div class="notice" role="status"><p>Queued <a href="${pathOf("/jobs", created.id)}">${created.ref}</a>: its row follows it below.</p></div>`;
      }
      const [providers, spend] = await Promise.all([providerStates(runtime, caller, readAt), spendOfDays(runtime, caller, readAt, SPEND_DAYS)]);
      const events = `/events${queryOf({ state: query.state, provider: query.provider, ref: query.ref, ref_prefix: query.ref_prefix, q: query.q, cursor: query.cursor, since: String(readAt) })}`;
      return sendPage(reply, 200, {
        title: "Jobs",
        session,
        section: "jobs",
        events,
        body: html`<h1>Jobs</h1>${notice}${jobsSection(jobs.jobs.map(remoteJob), query, jobs.nextCursor, jobs.outputs)}${providersSection(providers)}${spendSection(spend)}`,
      });
    });

    dashboard.get<{ Params: { id: string } }>("/jobs/:id", async (request, reply) => {
      const session = request.dashboardSession!;
      const readAt = Date.now();
      const job = await visibleJob(runtime, session.caller, request.params.id);
      const [outputs, events, timings] = await Promise.all([jobOutputs(runtime, job), jobEvents(runtime, job), timingsOf(runtime, [job])]);
      return sendPage(reply, 200, {
        title: job.ref,
        session,
        section: "job",
        events: `/events${queryOf({ job: job.id, since: String(readAt) })}`,
        body: jobPageBody(remoteJob(job), jobParts(remoteJob(job), outputs, events, session, timings.get(job.id)), null, againPanel(job, session, runtime.config.publicUrl ?? `${request.protocol}://${request.headers.host ?? "127.0.0.1"}`)),
      });
    });

    dashboard.get<{ Params: { id: string; n: string } }>("/jobs/:id/outputs/:n", async (request, reply) => {
      const job = await visibleJob(runtime, request.dashboardSession!.caller, request.params.id);
      const output = await jobOutput(runtime, job, request.params.n);
      reply.header("content-security-policy", OUTPUT_POLICY).header("x-content-type-options", "nosniff");
      return sendOutputFile(request, reply, output, `output ${request.params.n} of job ${job.id}`);
    });

    dashboard.post<{ Params: { id: string } }>("/jobs/:id/cancel", async (request, reply) => {
      const fields = formFields(request);
      const refused = refuseForm(request, reply, fields, true);
      if (refused) return refused;
      const session = request.dashboardSession!;
      const job = await visibleJob(runtime, session.caller, request.params.id);
      const outcome = await cancelJob(runtime, job);
      if (outcome.kind === "cancelled") return reply.redirect(pathOf("/jobs", job.id), 303);
      const [current, outputs, events] = await Promise.all([visibleJob(runtime, session.caller, job.id), jobOutputs(runtime, job), jobEvents(runtime, job)]);
      return sendPage(reply, 409, { title: current.ref, session, section: "job", body: jobPageBody(remoteJob(current), jobParts(remoteJob(current), outputs, events, session), outcome.message) });
    });

    /** A batch's panels as the caller sees them (its own jobs unless admin; not found when it has none). */
    const panelsOfBatch = async (session: Session, batchId: string) => {
      const summary = await batchOf(runtime, session.caller, batchId);
      return batchPanels(batchId, summary, await batchFailures(runtime, session.caller, batchId), BATCH_FAILURES_SHOWN, session);
    };

    dashboard.get<{ Params: { id: string } }>("/batches/:id", async (request, reply) => {
      const session = request.dashboardSession!;
      const batchId = request.params.id;
      // Taken before anything is read: the page's stream sends what changes from here on.
      const readAt = Date.now();
      const panels = await panelsOfBatch(session, batchId);
      const cancelled = queryValues(request).cancelled;
      const notice = cancelled !== undefined && /^\d+$/.test(cancelled) ? html`<div class="notice" role="status"><p>Cancelled ${cancelled} unsent ${cancelled === "1" ? "job" : "jobs"} of this batch; jobs already sent keep running.</p></div>` : null;
      return sendPage(reply, 200, { title: `Batch ${batchId}`, session, section: "batch", events: `/events${queryOf({ batch: batchId, since: String(readAt) })}`, body: batchPageBody(batchId, panels, notice) });
    });

    dashboard.post<{ Params: { id: string } }>("/batches/:id/cancel", async (request, reply) => {
      const fields = formFields(request);
      const refused = refuseForm(request, reply, fields, true);
      if (refused) return refused;
      const outcome = await cancelBatchUnsent(runtime, request.dashboardSession!.caller, request.params.id);
      return reply.redirect(`${pathOf("/batches", request.params.id)}${queryOf({ cancelled: String(outcome.cancelled) })}`, 303);
    });

    dashboard.get("/new", async (request, reply) => {
      const session = request.dashboardSession!;
      if (session.caller.readOnly) return sendPage(reply, 403, { title: "Not allowed", session, section: "error", body: errorPageBody("Not allowed", `token ${session.caller.name} is read-only: it cannot submit jobs`) });
      const kind = queryValues(request).kind === "common" ? "common" : "native";
      return sendPage(reply, 200, { title: "New job", session, section: "new", body: submitPageBody({ form: emptySubmitForm(kind) }, session, providerNames()) });
    });

    dashboard.post("/new", async (request, reply) => {
      const fields = formFields(request);
      const refused = refuseForm(request, reply, fields, true);
      if (refused) return refused;
      const session = request.dashboardSession!;
      const form = submitFormOf(fields);
      const sending = fields.get("step") === "send";
      let state: SubmitState;
      let status = 200;
      try {
        const body = requestOfForm(form);
        const digest = digestOf(body);
        // Sent only as quoted: a request changed after its quote is quoted again instead.
        if (sending && form.quoted === digest) {
          const created = await submitJob(runtime, session.caller, submissionOfBody(body));
          return reply.redirect(`/${queryOf({ created: created.job.id })}`, 303);
        }
        state = { form: { ...form, quoted: digest }, quote: await quoteOf(runtime, quotedRequestOfBody(body)), requoted: sending };
      } catch (error) {
        const known = apiErrorOf(error);
        if (!known) throw error;
        status = known.status;
        state = { form: { ...form, quoted: "" }, error: { message: known.message, ...known.extra } };
      }
      return sendPage(reply, status, { title: "New job", session, section: "new", body: submitPageBody(state, session, providerNames()) });
    });

    dashboard.post("/logout", async (request, reply) => {
      const fields = formFields(request);
      const refused = refuseForm(request, reply, fields, false);
      if (refused) return refused;
      return reply.header("set-cookie", clearedSessionCookie(request)).redirect("/login", 303);
    });

    // No HEAD twin: a HEAD would open a stream whose body is never read.
    dashboard.get("/events", { exposeHeadRoute: false }, async (request, reply) => {
      const session = request.dashboardSession!;
      const caller = session.caller;
      if (streams.size >= STREAMS_MAX) return reply.code(503).header("retry-after", "10").send(errorBody("too_many_streams", `${STREAMS_MAX} live views are open, the most this server follows at once; try again shortly`));
      const values = queryValues(request);
      const lastEventId = Number(request.headers["last-event-id"]);
      const since = Number.isSafeInteger(lastEventId) && lastEventId > 0 ? lastEventId : Number.isSafeInteger(Number(values.since)) && Number(values.since) > 0 ? Number(values.since) : Date.now();
      if (values.batch !== undefined) {
        const batchId = values.batch;
        // Checked before the stream opens: another tenant's batch is not found.
        await panelsOfBatch(session, batchId);
        streams.start(reply, {
          feed,
          log,
          caller,
          ids: [],
          wantsNew: false,
          shows: () => false,
          since,
          batchId,
          render: async () => null,
          panels: async () => Object.fromEntries(Object.entries(await panelsOfBatch(session, batchId)).map(([name, panel]) => [name, panel.text])),
        });
        return reply;
      }
      if (values.job !== undefined) {
        const job = await visibleJob(runtime, caller, values.job);
        let latest = job;
        streams.start(reply, {
          feed,
          log,
          caller,
          ids: [job.id],
          wantsNew: false,
          shows: () => false,
          since,
          render: async (changed) => {
            latest = changed;
            const [outputs, events, timings] = await Promise.all([jobOutputs(runtime, changed), jobEvents(runtime, changed), timingsOf(runtime, [changed])]);
            return { event: "job", data: { id: changed.id, state: changed.state, announce: `${changed.ref} is now ${changed.state.replace("_", " ")}`, parts: jobParts(remoteJob(changed), outputs, events, session, timings.get(changed.id)) } };
          },
          // Its queue position and expected times move with the other jobs, between its own changes (issue 37).
          tick: {
            everyMs: TIMING_EVERY_MS,
            message: async () => {
              if (isTerminal(latest.state)) return null;
              const timing = (await timingsOf(runtime, [latest])).get(latest.id) ?? NO_TIMING;
              return { event: "job", data: { id: latest.id, state: latest.state, parts: { timing: timingPart(latest, timing) } } };
            },
          },
        });
        return reply;
      }
      const query = jobListQueryOf(values);
      const page = await pageOfJobs(caller, query);
      const shows = matchesFilter(query);
      streams.start(reply, {
        feed,
        log,
        caller,
        ids: page.jobs.map((job) => job.id),
        wantsNew: query.cursor === undefined,
        shows,
        since,
        render: async (changed) => ({
          event: "job" as const,
          data: { id: changed.id, state: changed.state, matches: shows(changed), announce: `${changed.ref} is now ${changed.state.replace("_", " ")}`, row: jobRow(remoteJob(changed), changed.state === "succeeded" ? await jobOutputs(runtime, changed) : []).text },
        }),
        panels: async () => {
          const now = Date.now();
          const [providers, spend] = await Promise.all([providerStates(runtime, caller, now), spendOfDays(runtime, caller, now, SPEND_DAYS)]);
          return { providers: providersPanel(providers).text, spend: spendPanel(spend).text };
        },
      });
      return reply;
    });
  });
}
