import { z } from "zod";
import { ProviderError } from "../../core/errors.js";
import type { CallContext } from "../adapter.js";
import { TransportError, type HttpRequest, type HttpResponse } from "../http.js";
import { tokenErrorFrom } from "./errors.js";

/** spec E token request: the response field is `access_token`. `expires_in` (OAuth 2.0) is read when present; it is not shown. */
const TokenAnswer = z.object({ access_token: z.string().min(1), expires_in: z.unknown().optional() });

/**
 * spec E Authentication 3: "Token lifetime: not shown." Without an
 * `expires_in`, a token is assumed to last one hour: a fresh one each hour
 * costs little, and a 401 before that still refreshes it once.
 */
export const ASSUMED_TOKEN_LIFETIME_MS = 3_600_000;
/** A token is replaced this long before it expires (a tenth of its lifetime when that is shorter), so no call carries one that lapses in flight. */
export const MAX_REFRESH_MARGIN_MS = 5 * 60_000;
/** Tokens replaced recently stay in the redaction list: a late error may still quote one. */
const REMEMBERED_TOKENS = 4;

export interface ETokenConfig {
  authUrl: string;
  clientId: string;
  clientSecret: string;
  /** Null when not configured (the spec's list has placeholders only the account knows). */
  scopes: string[] | null;
}

function notConfigured(variable: string, what: string): ProviderError {
  return new ProviderError("not_configured", `E ${what} is not configured: set ${variable}`, { provider: "e", retryable: false, haltsProvider: true });
}

/** Waits for a shared promise, but gives up when this caller's own signal aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * spec E Authentication: client-credentials tokens, one per adapter, shared
 * by every call and every concurrent caller (one token request at a time),
 * replaced before expiry and once after a 401.
 */
export class ETokenSource {
  private current: { token: string; refreshAt: number } | null = null;
  private pending: Promise<string> | null = null;
  private readonly recent: string[] = [];

  constructor(private readonly config: ETokenConfig) {}

  /** The client secret and the tokens this adapter holds: what must never appear in a log or an error. */
  secrets(): string[] {
    return [this.config.clientSecret, ...this.recent].filter((secret) => secret.length > 0);
  }

  /** spec E Authentication 2: every call carries `x-api-key: <CLIENT_ID>` and `Authorization: Bearer <ACCESS_TOKEN>`. */
  headersFor(token: string): Record<string, string> {
    return { "x-api-key": this.config.clientId, authorization: `Bearer ${token}` };
  }

  async token(context: CallContext): Promise<string> {
    if (this.current && context.clock.now() < this.current.refreshAt) return this.current.token;
    this.pending ??= this.fetch(context).finally(() => {
      this.pending = null;
    });
    return untilAborted(this.pending, context.signal);
  }

  /** After a 401 to a call made with `rejected`: that token is dropped (unless already replaced) and another one obtained. */
  async replace(rejected: string, context: CallContext): Promise<string> {
    if (this.current?.token === rejected) this.current = null;
    return this.token(context);
  }

  private async fetch(context: CallContext): Promise<string> {
    const { authUrl, clientId, clientSecret, scopes } = this.config;
    if (!authUrl) throw notConfigured("MEDIAGATE_E_AUTH_URL", "auth URL");
    if (!clientId) throw notConfigured("MEDIAGATE_E_CLIENT_ID", "client id");
    if (!clientSecret) throw notConfigured("MEDIAGATE_E_CLIENT_SECRET", "client secret");
    if (!scopes) throw notConfigured("MEDIAGATE_E_SCOPES", "scope list (the spec leaves its vendor and service names as placeholders)");
    const requestedAt = context.clock.now();
    // spec E token request: form-encoded, grant_type client_credentials, scope comma-separated.
    const form = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret, scope: scopes.join(",") });
    // Not tied to one caller's signal: the token is shared by everyone waiting for it.
    const response = await context.http.request({ method: "POST", url: `${authUrl}/ims/token/v3`, body: form, retry: "idempotent" });
    if (response.status < 200 || response.status >= 300) throw tokenErrorFrom(context.http, response);
    const answer = TokenAnswer.safeParse(response.json());
    if (!answer.success) throw context.http.errorFrom(response, "invalid_response", "E's token answer has no access_token", { retryable: true });
    const token = answer.data.access_token;
    this.remember(token);
    const expiresIn = answer.data.expires_in;
    const lifetimeMs = typeof expiresIn === "number" && expiresIn > 0 ? expiresIn * 1000 : ASSUMED_TOKEN_LIFETIME_MS;
    // Counted from when the request left, so the local view never outlives the provider's.
    this.current = { token, refreshAt: requestedAt + lifetimeMs - Math.min(MAX_REFRESH_MARGIN_MS, lifetimeMs / 10) };
    return token;
  }

  private remember(token: string): void {
    this.recent.unshift(token);
    this.recent.length = Math.min(this.recent.length, REMEMBERED_TOKENS);
  }
}

/**
 * One API call with E's headers. spec E Errors lists 401 (meaning not
 * shown): the token is replaced once and the call repeated once; a second
 * 401 is the caller's to report. A token request that fails on the network
 * never carried the call, so it is reported as not sent.
 */
export async function authorizedRequest(
  tokens: ETokenSource,
  context: CallContext,
  build: (headers: Record<string, string>) => HttpRequest,
): Promise<HttpResponse> {
  const token = await notSentOnFailure(() => tokens.token(context));
  const response = await context.http.request(build(tokens.headersFor(token)), context.signal);
  if (response.status !== 401) return response;
  const fresh = await notSentOnFailure(() => tokens.replace(token, context));
  return context.http.request(build(tokens.headersFor(fresh)), context.signal);
}

/** Runs a step that comes before the call itself: its network failures mean the call was not sent. */
export async function notSentOnFailure<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof TransportError && error.maybeSent) {
      throw new TransportError(error.provider, false, `${error.message} (before the call itself was sent)`, { cause: error });
    }
    throw error;
  }
}
