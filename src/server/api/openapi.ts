import type { FastifyReply, FastifyRequest } from "fastify";
import { API_ERROR_CODES } from "./errors.js";

/** One route of the REST API: registered from this, and described by it in `/openapi.json` (so the two cannot drift). */
export interface ApiRoute {
  method: "GET" | "POST";
  /** OpenAPI form: `/v1/jobs/{id}`. */
  path: string;
  summary: string;
  /** Changes something (refused to a read-only token). */
  writes?: boolean;
  /** Bodies larger than this are refused (413); the server's default is 1 MB. */
  bodyLimit?: number;
  /** Query parameters: name → what it does. */
  query?: Record<string, string>;
  /** Status → what it answers. */
  responses: Record<number, string>;
  handler(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
}

const ERROR_SCHEMA = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string", enum: Object.keys(API_ERROR_CODES) },
        message: { type: "string" },
        field: { type: "string" },
        targets: { type: "array", items: { type: "object", properties: { target: { type: "string" }, reasons: { type: "array", items: { type: "string" } } } } },
      },
    },
  },
} as const;

/** The OpenAPI 3.1 document of the routes, served at `/openapi.json`. */
export function openApiDocument(routes: readonly ApiRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters = [
      ...[...route.path.matchAll(/\{([a-z_]+)\}/g)].map((match) => ({ name: match[1], in: "path", required: true, schema: { type: "string" } })),
      ...Object.entries(route.query ?? {}).map(([name, description]) => ({ name, in: "query", required: false, description, schema: { type: "string" } })),
    ];
    const responses: Record<string, unknown> = {};
    for (const [status, description] of Object.entries(route.responses)) {
      responses[status] = Number(status) >= 400 ? { description, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } } : { description };
    }
    responses["401"] ??= { description: "unauthorized", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
    if (route.writes) responses["403"] ??= { description: "read_only_token", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      summary: route.summary,
      ...(parameters.length ? { parameters } : {}),
      ...(route.method === "POST" ? { requestBody: { required: route.path !== "/v1/jobs/{id}/cancel", content: { "application/json": { schema: { type: "object" } } } } } : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "mediagate", version: "1", description: "One job model over six image and video provider APIs: durable queue, limits, ledger." },
    security: [{ bearer: [] }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "an API token from `mediagate token create` (mg_…)" } }, schemas: { Error: ERROR_SCHEMA } },
    paths,
  };
}
