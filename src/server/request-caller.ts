import type { FastifyRequest } from "fastify";
import { callerOf, LOCAL_CALLER, type Caller } from "../app/caller.js";
import type { Runtime } from "../app/runtime.js";
import { tokenOfSecret } from "../app/tokens.js";
import { ApiError } from "./api/errors.js";
import { isLoopbackHost } from "./dashboard/session.js";

/**
 * Who sends a request to the API (`/v1`, in mediagate's shapes or OpenAI's):
 * a bearer token when the store has any, else the local user (the server
 * then listens on loopback only). Refusals are `ApiError("unauthorized")`;
 * each surface words them in its own error shape.
 */
export async function callerOfRequest(runtime: Runtime, request: FastifyRequest): Promise<Caller> {
  const store = await runtime.store();
  const header = request.headers.authorization;
  if (header === undefined) {
    if (await store.hasActiveTokens()) throw new ApiError("unauthorized", "send an API token as Authorization: Bearer mg_… (`mediagate token create`)");
    // The local user, without a token: only from this machine by a loopback name, so a page elsewhere that resolves
    // its own name to 127.0.0.1 (DNS rebinding) reaching this port is refused.
    if (!isLoopbackHost(request.headers.host)) throw new ApiError("unauthorized", "without API tokens the API answers only requests addressed to a loopback name (localhost, 127.0.0.1, [::1])");
    return LOCAL_CALLER;
  }
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match) throw new ApiError("unauthorized", "the Authorization header must be Bearer <token>");
  const found = await tokenOfSecret(store, match[1]!);
  if ("refused" in found) throw new ApiError("unauthorized", found.refused);
  return callerOf(found.token);
}
