import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../core/clock.js";
import { EApiError } from "./errors.js";
import type { EClientCredentials } from "./options.js";

/**
 * The token endpoint's refusals. Its error body is not shown; the sandbox
 * answers as an OAuth 2.0 token endpoint does (RFC 6749 §5.2):
 * `{ "error", "error_description" }`, 401 for `invalid_client`, else 400.
 */
export type ETokenErrorCode = "invalid_request" | "invalid_client" | "unsupported_grant_type" | "invalid_scope";

export class ETokenError extends Error {
  constructor(
    readonly statusCode: 400 | 401,
    readonly error: ETokenErrorCode,
    description: string,
  ) {
    super(description);
    this.name = "ETokenError";
  }

  body(): { error: ETokenErrorCode; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

export interface ETokenRecord {
  accessToken: string;
  clientId: string;
  scopes: string[];
  /** Virtual times (ms). */
  issuedAt: number;
  expiresAt: number;
}

export interface ETokenAnswer {
  access_token: string;
  token_type: "bearer";
  expires_in: number;
}

function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Client-credentials tokens of service E, and the check every API call makes with them. */
export class ETokens {
  private readonly secrets = new Map<string, string>();
  private readonly byToken = new Map<string, ETokenRecord>();
  private readonly issued: ETokenRecord[] = [];

  constructor(
    private readonly clock: Clock,
    clients: readonly EClientCredentials[],
    private readonly requiredScopes: readonly string[],
    /** spec E Authentication 3: lifetime not shown; configurable, read at each issue. */
    public lifetimeSeconds: number,
  ) {
    for (const client of clients) this.secrets.set(client.clientId, client.clientSecret);
  }

  isClient(clientId: string): boolean {
    return this.secrets.has(clientId);
  }

  /** spec E token request: grant_type, client_id, client_secret and the comma-separated scope list. */
  issue(form: Record<string, string>): ETokenAnswer {
    if (form.grant_type === undefined) throw new ETokenError(400, "invalid_request", "grant_type is required");
    if (form.grant_type !== "client_credentials") {
      throw new ETokenError(400, "unsupported_grant_type", "only grant_type=client_credentials is supported");
    }
    const clientId = form.client_id ?? "";
    const secret = this.secrets.get(clientId);
    if (secret === undefined || !sameText(form.client_secret ?? "", secret)) {
      throw new ETokenError(401, "invalid_client", "client_id or client_secret is not valid");
    }
    const scopes = (form.scope ?? "")
      .split(",")
      .map((scope) => scope.trim())
      .filter((scope) => scope !== "");
    const missing = this.requiredScopes.filter((scope) => !scopes.includes(scope));
    if (missing.length > 0) throw new ETokenError(400, "invalid_scope", `scope is missing ${missing.join(", ")}`);
    const issuedAt = this.clock.now();
    const record: ETokenRecord = {
      accessToken: `sbxe.${randomBytes(24).toString("base64url")}`,
      clientId,
      scopes,
      issuedAt,
      expiresAt: issuedAt + this.lifetimeSeconds * 1000,
    };
    this.byToken.set(record.accessToken, record);
    this.issued.push(record);
    return { access_token: record.accessToken, token_type: "bearer", expires_in: this.lifetimeSeconds };
  }

  /**
   * spec E Authentication 2: every call carries `x-api-key: <CLIENT_ID>` and
   * `Authorization: Bearer <ACCESS_TOKEN>`. The token must be one this
   * sandbox issued to that same client id and not yet expired; else 401.
   */
  authenticate(clientId: string, authorization: string | string[] | undefined): ETokenRecord {
    const header = single(authorization);
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new EApiError(401, "invalid_token", "missing or malformed Authorization: Bearer header");
    const record = this.byToken.get(match[1]!);
    if (!record || record.clientId !== clientId) {
      throw new EApiError(401, "invalid_token", "the access token is not valid for this x-api-key");
    }
    if (this.clock.now() >= record.expiresAt) throw new EApiError(401, "token_expired", "the access token has expired");
    return record;
  }

  /** Makes every token issued so far expired now (tests of refresh-on-401). */
  expireAll(): void {
    const now = this.clock.now();
    for (const record of this.issued) record.expiresAt = Math.min(record.expiresAt, now);
  }

  all(): readonly ETokenRecord[] {
    return this.issued;
  }
}
