import type { Clock } from "../core/clock.js";
import { ConfigError } from "../core/errors.js";
import type { Job } from "../core/job.js";
import type { JobTracer, ProviderStep } from "../core/tracing.js";
import { policyForBase, type UrlPolicy } from "../core/url-safety.js";
import type { CallContext, ProviderAdapter, ProviderId, RateWindow, ValidatedRequest } from "../providers/adapter.js";
import { ProviderHttp, type ProviderHttpOptions } from "../providers/http.js";
import type { ProviderEntry } from "../providers/registry.js";
import { RATE_SEND_BOUND_MS, type Store } from "../store/store.js";
import type { ProviderCounters } from "./context.js";
import { RateLimiter } from "./rate-limiter.js";

/** What an engine's calls to providers are made with. */
export interface ProviderCallOptions {
  store: Store;
  clock: Clock;
  owner: string;
  providers: Map<ProviderId, ProviderEntry>;
  /** The configured secrets to redact (adapters' own are added, see `ProviderCalls.secrets`). */
  secrets: () => string[];
  allowPrivateUrls: boolean;
  /** See `EngineOptions.publicUrl`. */
  publicUrl: string | null;
  /** Aborts a job's reads (polls, downloads) and provider-level calls. */
  signal: AbortSignal;
  /** Aborted as the engine starts stopping: a submit still waiting for its rate token gives up. */
  stopWaiting: AbortSignal;
  /** Traces exported: each request of a traced job gets a span under the job's (null: traces are off). */
  tracer: JobTracer | null;
}

/**
 * How an engine calls providers: their adapters (or why one cannot be used),
 * the request counts per provider, each provider's URL policy, and the call
 * contexts whose HTTP layer takes rate tokens and notes a submit before it
 * leaves.
 */
export class ProviderCalls {
  private readonly counters = new Map<ProviderId, ProviderCounters>();
  private readonly policies = new Map<ProviderId, UrlPolicy>();
  private readonly rateLimiter: RateLimiter;

  constructor(private readonly options: ProviderCallOptions) {
    this.rateLimiter = new RateLimiter(options.store, options.clock);
  }

  adapter(provider: ProviderId): ProviderAdapter {
    const entry = this.options.providers.get(provider);
    if (!entry?.adapter) throw new ConfigError(`MEDIAGATE_${provider.toUpperCase()}_BASE_URL`, `provider ${provider.toUpperCase()} is not supported by this version`);
    if (entry.missing.length > 0) {
      throw new ConfigError(entry.missing[0]!, `provider ${provider.toUpperCase()} is not configured: set ${entry.missing.join(" and ")}`);
    }
    return entry.adapter;
  }

  /** Why jobs of this provider cannot be sent now, or null when they can. */
  unavailableReason(provider: ProviderId): string | null {
    try {
      this.adapter(provider);
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  }

  countersFor(provider: ProviderId): ProviderCounters {
    let counters = this.counters.get(provider);
    if (!counters) {
      counters = { requests: 0, status429: 0, backpressure: 0, submits: 0, polls: 0, downloads: 0, claims: 0, claimsLost: 0 };
      this.counters.set(provider, counters);
    }
    return counters;
  }

  /** Request and error counts per provider so far. */
  stats(): Record<string, ProviderCounters> {
    return Object.fromEntries(this.counters);
  }

  /** Every secret to redact: configured keys and what adapters hold now (tokens). */
  secrets(): string[] {
    const adapterSecrets = [...this.options.providers.values()].flatMap((entry) => entry.adapter?.secrets?.() ?? []);
    return [...this.options.secrets(), ...adapterSecrets];
  }

  /** A call context for provider-level calls outside any job (webhook verification fetching keys, account reads). */
  async providerContext(provider: ProviderId): Promise<CallContext> {
    const counters = this.countersFor(provider);
    const http = new ProviderHttp({
      provider,
      clock: this.options.clock,
      secrets: () => this.secrets(),
      urlPolicy: await this.urlPolicy(provider),
      afterResponse: ({ status }) => {
        counters.requests++;
        if (status === 429) counters.status429++;
      },
    });
    return { http, clock: this.options.clock, signal: this.options.signal };
  }

  private async urlPolicy(provider: ProviderId): Promise<UrlPolicy> {
    let policy = this.policies.get(provider);
    if (!policy) {
      const baseUrl = this.options.providers.get(provider)?.baseUrl;
      policy = baseUrl
        ? await policyForBase(baseUrl, this.options.allowPrivateUrls)
        : { allowHttp: false, allowPrivate: this.options.allowPrivateUrls };
      this.policies.set(provider, policy);
    }
    return policy;
  }

  async callContext(job: Job, request: ValidatedRequest, rateLimited: boolean, step: ProviderStep): Promise<CallContext> {
    const limits = this.adapter(job.provider).limits(request);
    const counters = this.countersFor(job.provider);
    const abortable = job.state !== "submitting";
    const signal = abortable ? this.options.signal : undefined;
    const http = new ProviderHttp({
      provider: job.provider,
      clock: this.options.clock,
      secrets: () => this.secrets(),
      urlPolicy: await this.urlPolicy(job.provider),
      ...(rateLimited ? { beforeRequest: this.beforeRequest(job, limits.rateWindows, signal) } : {}),
      afterResponse: ({ status }) => {
        counters.requests++;
        if (status === 429) counters.status429++;
      },
      ...this.requestSpans(job, step),
    });
    const adapter = this.adapter(job.provider);
    const publicUrl = this.options.publicUrl?.replace(/\/+$/, "");
    const callbackUrl = publicUrl && adapter.webhooks ? `${publicUrl}/webhooks/${job.provider}/${encodeURIComponent(job.id)}` : null;
    return {
      http,
      clock: this.options.clock,
      ...(signal ? { signal } : {}),
      job: { id: job.id, idempotencyKey: job.idempotencyKey, callbackUrl },
    };
  }

  /** A span per request of a traced job, child of the job's span, when traces are exported. */
  private requestSpans(job: Job, step: ProviderStep): Pick<ProviderHttpOptions, "requestSpan"> {
    const { tracer } = this.options;
    const trace = job.trace;
    if (!tracer || !trace) return {};
    const traced = { id: job.id, provider: job.provider, trace };
    return { requestSpan: (method, url) => tracer.providerRequest(traced, step, method, url) };
  }

  /**
   * Before each request of a job: its rate token, then, for a submit, a note
   * in the store that a request is leaving. A job found in `submitting`
   * after a crash without that note never sent anything and is safely queued
   * again, even on a provider without idempotency.
   */
  private beforeRequest(job: Job, windows: readonly RateWindow[], signal: AbortSignal | undefined): () => Promise<() => Promise<void>> {
    const submitting = job.state === "submitting";
    let noted = false;
    return async () => {
      const answered = await this.rateLimiter.take(windows, signal ?? this.options.stopWaiting, submitting ? "submit" : "read");
      const grantedAt = this.options.clock.now();
      if (submitting && !noted) {
        noted = true;
        const ours = await this.options.store.markSubmitSent(job.id, this.options.owner, grantedAt);
        // Another engine has the job now (this one's lease lapsed): it must not be sent from here.
        if (!ours) throw new Error(`job ${job.id} is no longer this engine's to submit`);
        const late = this.options.clock.now() - grantedAt;
        if (windows.length > 0 && late > RATE_SEND_BOUND_MS) {
          // Sent this late, a crash could leave it counted past the store's bound on unanswered requests.
          await answered();
          throw new Error(`the store took ${Math.round(late / 1000)} s to note the submit, longer than its rate token allows`);
        }
      }
      return answered;
    };
  }
}
