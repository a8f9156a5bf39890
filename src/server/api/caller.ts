import type { Job } from "../../core/job.js";
import type { ApiToken } from "../../store/store.js";

/**
 * Who is asking. With tokens in the store, every request names one
 * (`Authorization: Bearer mg_…`); a token sees and changes only the jobs it
 * created unless it is an admin. With none, `serve` listens on loopback only
 * and the one local user is the admin.
 */
export interface Caller {
  token: ApiToken | null;
  admin: boolean;
  readOnly: boolean;
  /** For logs and messages: the token's name, or "local" (never the secret). */
  name: string;
}

export const LOCAL_CALLER: Caller = { token: null, admin: true, readOnly: false, name: "local" };

export function callerOf(token: ApiToken): Caller {
  return { token, admin: token.admin, readOnly: token.readOnly, name: token.name };
}

/** Whether the caller may see this job (a job it may not see is answered as not found, never as forbidden). */
export function canSee(caller: Caller, job: Pick<Job, "tokenId">): boolean {
  return caller.admin || (caller.token !== null && job.tokenId === caller.token.id);
}
