/** A range of virtual milliseconds; each job draws uniformly from it with the sandbox's seeded randomness. */
export type EDurationRange = number | { min: number; max: number };

export interface EClientCredentials {
  clientId: string;
  clientSecret: string;
}

/**
 * spec E token request: scope is "openid, `<vendor>ID`, read_organizations,
 * `<service>_enterprise`, `<service>_api`, `<service_short>_apis`". The
 * placeholders are not named by the spec; the sandbox fills them with vendor
 * "Sandbox", service "imagegen" and short name "ig".
 */
export const E_REQUIRED_SCOPES: readonly string[] = [
  "openid",
  "SandboxID",
  "read_organizations",
  "imagegen_enterprise",
  "imagegen_api",
  "ig_apis",
];

export const DEFAULT_E_CLIENT: EClientCredentials = { clientId: "sandbox-e-client", clientSecret: "sandbox-e-secret" };

export interface EEmulatorOptions {
  /** Organisations that may obtain tokens; the client id is the organisation. Default [DEFAULT_E_CLIENT]. */
  clients?: EClientCredentials[];
  /** Scopes a token request must carry (more are accepted). Default E_REQUIRED_SCOPES. */
  requiredScopes?: readonly string[];
  /** spec E Authentication 3: token lifetime is not shown. Default 86 400 s (24 h of virtual time). */
  tokenLifetimeSeconds?: number;
  /** spec E Limits: 4 requests per minute per organisation. */
  requestsPerMinute?: number;
  /** spec E Limits: 9,000 requests per day per organisation. */
  requestsPerDay?: number;
  /** How long a job runs before it ends, virtual ms. Default 5 000 to 15 000. */
  renderMs?: EDurationRange;
  /** spec E Endpoints: an upload is valid 7 days. */
  uploadValidityMs?: number;
  /** spec E Limits: result URL validity is not shown. Default 1 h of virtual time from completion. */
  imageUrlTtlMs?: number;
  /** spec E: the status of a cancelled job is not shown. Default "canceled". */
  cancelledStatus?: string;
  /**
   * spec E Endpoints: "never build [the statusUrl] from the submit host". When
   * true (default), a status or cancel request that arrives on the submit
   * host (`127.0.0.1`) instead of the status host (`localhost`) is 404.
   */
  statusHostCheck?: boolean;
}

export type ResolvedEOptions = Required<EEmulatorOptions>;

export function resolveEOptions(options: EEmulatorOptions): ResolvedEOptions {
  return {
    clients: options.clients ?? [DEFAULT_E_CLIENT],
    requiredScopes: options.requiredScopes ?? E_REQUIRED_SCOPES,
    tokenLifetimeSeconds: options.tokenLifetimeSeconds ?? 86_400,
    requestsPerMinute: options.requestsPerMinute ?? 4,
    requestsPerDay: options.requestsPerDay ?? 9_000,
    renderMs: options.renderMs ?? { min: 5_000, max: 15_000 },
    uploadValidityMs: options.uploadValidityMs ?? 7 * 24 * 3_600_000,
    imageUrlTtlMs: options.imageUrlTtlMs ?? 3_600_000,
    cancelledStatus: options.cancelledStatus ?? "canceled",
    statusHostCheck: options.statusHostCheck ?? true,
  };
}

export function drawDuration(range: EDurationRange, random: () => number): number {
  if (typeof range === "number") return range;
  return Math.round(range.min + (range.max - range.min) * random());
}
