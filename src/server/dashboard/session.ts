import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { Store } from "../../store/store.js";
import { callerOf, LOCAL_CALLER, type Caller } from "../../app/caller.js";
import { tokenOfSecret } from "../../app/tokens.js";

/** The cookie that holds the token secret the user logged in with (HttpOnly: no script reads it). */
export const SESSION_COOKIE = "mg_session";

/** Who is using the dashboard, and how they proved it. */
export interface Session {
  caller: Caller;
  /**
   * `cookie`: logged in through the form; `bearer`: an Authorization header
   * (a script: never sent by a browser on its own, so not forgeable across
   * sites); `local`: no token exists, so the one local user (admin) on loopback.
   */
  via: "cookie" | "bearer" | "local";
  /** The value every form of this session carries back (see `checkForm`). */
  formToken: string;
}

export type SessionAnswer = { session: Session } | { refused: string; status: 401 | 403 };

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const separator = part.indexOf("=");
    if (separator < 0 || part.slice(0, separator).trim() !== name) continue;
    const value = part.slice(separator + 1).trim();
    try {
      return decodeURIComponent(value);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** A secure context decides `Secure`: a cookie marked so would never come back over plain http (loopback use). */
function isHttps(request: FastifyRequest): boolean {
  return request.protocol === "https";
}

/** Set-Cookie for a login: the secret, HttpOnly, SameSite=Strict (never sent on a request another site starts), whole site, for the browser's session. */
export function sessionCookie(request: FastifyRequest, secret: string): string {
  return `${SESSION_COOKIE}=${encodeURIComponent(secret)}; Path=/; HttpOnly; SameSite=Strict${isHttps(request) ? "; Secure" : ""}`;
}

export function clearedSessionCookie(request: FastifyRequest): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${isHttps(request) ? "; Secure" : ""}`;
}

function hostName(host: string): string {
  return host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.split(":")[0]!;
}

/** Loopback by name: `localhost`, `127.x.x.x`, `[::1]`. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = hostName(host.toLowerCase());
  return name === "localhost" || name === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/**
 * Whether a request was started by a page of this server: its `Origin` (or,
 * when a browser sends none, its `Referer`) names the host it was sent to.
 * A request with neither is refused: every browser this dashboard supports
 * sends `Origin` with a form POST.
 */
export function sameOrigin(request: FastifyRequest): boolean {
  const host = request.headers.host?.toLowerCase();
  const origin = request.headers.origin;
  const source = origin !== undefined && origin !== "null" ? origin : request.headers.referer;
  if (!host || !source) return false;
  try {
    return new URL(source).host === host;
  } catch {
    return false;
  }
}

/**
 * Sessions and form checks. A form token is an HMAC that only this session
 * can show: keyed by the session's secret (so every server sharing the store
 * agrees), or, for the local user, by a key of this process. Forms carry it
 * in a hidden field; a page of another site can neither read it nor send
 * the cookie (SameSite=Strict), and its Origin gives it away besides.
 */
export class DashboardSessions {
  private readonly localKey = randomBytes(32);

  constructor(private readonly store: () => Promise<Store>) {}

  formTokenOf(secret: string | null): string {
    return createHmac("sha256", secret ?? this.localKey)
      .update("mediagate dashboard form")
      .digest("base64url");
  }

  async sessionOf(request: FastifyRequest): Promise<SessionAnswer> {
    const store = await this.store();
    if (!(await store.hasActiveTokens())) {
      // Without tokens nothing asks who is there, so only this machine may ask: a page of another site whose
      // name was made to resolve to 127.0.0.1 (DNS rebinding) still sends its own name as Host.
      if (!isLoopbackHost(request.headers.host)) return { refused: "without any API token the dashboard answers on loopback names only (localhost, 127.0.0.1, [::1])", status: 403 };
      return { session: { caller: LOCAL_CALLER, via: "local", formToken: this.formTokenOf(null) } };
    }
    const header = request.headers.authorization;
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)$/i.exec(header);
      if (!match) return { refused: "the Authorization header must be Bearer <token>", status: 401 };
      const found = await tokenOfSecret(store, match[1]!);
      if ("refused" in found) return { refused: found.refused, status: 401 };
      return { session: { caller: callerOf(found.token), via: "bearer", formToken: this.formTokenOf(match[1]!) } };
    }
    const secret = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (!secret) return { refused: "log in with an API token", status: 401 };
    const found = await tokenOfSecret(store, secret);
    if ("refused" in found) return { refused: found.refused, status: 401 };
    return { session: { caller: callerOf(found.token), via: "cookie", formToken: this.formTokenOf(secret) } };
  }

  /** Why a form POST of this session is refused, or null when it may act. */
  checkForm(request: FastifyRequest, session: Session, formToken: string | undefined): string | null {
    if (session.via === "bearer") return null;
    if (!sameOrigin(request)) return "the form was not sent from a page of this server (its Origin or Referer names another host, or none)";
    const given = Buffer.from(formToken ?? "");
    const expected = Buffer.from(session.formToken);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "the form's token does not belong to this session (reload the page and send it again)";
    return null;
  }
}
