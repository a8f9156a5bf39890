import type { Job } from "../core/job.js";
import { LOCAL_TENANT } from "../core/tenant.js";
import type { ApiToken } from "../store/store.js";

export { LOCAL_TENANT } from "../core/tenant.js";

/**
 * Who is asking: a tenant. Each API token is one tenant and the local
 * operator another; a tenant sees and changes only its own jobs unless it is
 * an admin (the local operator is one). Every operation of the application
 * takes the caller as an argument, never from a global.
 */
export interface Caller {
  /** Whose jobs these are: the token's id, or LOCAL_TENANT. */
  tenant: string;
  token: ApiToken | null;
  admin: boolean;
  readOnly: boolean;
  /** For logs and messages: the token's name, or "local" (never the secret). */
  name: string;
}

export const LOCAL_CALLER: Caller = { tenant: LOCAL_TENANT, token: null, admin: true, readOnly: false, name: "local" };

export function callerOf(token: ApiToken): Caller {
  return { tenant: token.id, token, admin: token.admin, readOnly: token.readOnly, name: token.name };
}

/** Whether the caller may see this job (a job it may not see is answered as not found, never as forbidden). */
export function canSee(caller: Caller, job: Pick<Job, "tenant">): boolean {
  return caller.admin || job.tenant === caller.tenant;
}

/** The tenant whose jobs a read is limited to: undefined for an admin (every tenant's). */
export function scopeOf(caller: Caller): string | undefined {
  return caller.admin ? undefined : caller.tenant;
}
