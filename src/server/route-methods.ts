import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "./api/errors.js";

/**
 * The methods each path of the server answers, learnt from the routes as
 * they are registered, so a request to a path that exists with another
 * method is answered 405 with an `Allow` header listing them (RFC 9110
 * §15.5.6) instead of 404. Paths are matched as the router matches them: a
 * `:param` is one segment, `*` the rest.
 */
export class RouteMethods {
  private readonly routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];

  /** Learns every route registered on `app` from now on, in it or in any plugin under it. */
  static of(app: FastifyInstance): RouteMethods {
    const known = new RouteMethods();
    app.addHook("onRoute", (route) => known.add(route.method, route.url ?? route.path));
    return known;
  }

  add(method: string | string[], url: string): void {
    const source = url
      .split("/")
      .map((segment) => (segment === "*" ? ".*" : segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/");
    const pattern = new RegExp(`^${source}$`);
    let entry = this.routes.find((route) => route.pattern.source === pattern.source);
    if (!entry) {
      entry = { pattern, methods: new Set() };
      this.routes.push(entry);
    }
    for (const each of Array.isArray(method) ? method : [method]) entry.methods.add(each.toUpperCase());
  }

  /** The methods `path` (without its query) is answered for, sorted; empty when no route has that path. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    return [...methods].sort();
  }
}

/**
 * The answer to a request no route takes whose path other methods are
 * answered for: 405 with `Allow`. Null when no route has the path (a 404,
 * which the caller words).
 */
export function methodNotAllowed(methods: RouteMethods, request: FastifyRequest, reply: FastifyReply): FastifyReply | null {
  const path = request.url.split("?")[0]!;
  const allowed = methods.allowed(path);
  if (allowed.length === 0) return null;
  const error = new ApiError("method_not_allowed", `${path.slice(0, 80)} is not answered for ${request.method.slice(0, 20)}; it is for ${allowed.join(", ")}`);
  return reply.code(error.status).header("allow", allowed.join(", ")).send(error.body());
}
