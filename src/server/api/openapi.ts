import type { FastifyReply, FastifyRequest } from "fastify";
import { API_ERROR_CODES } from "./errors.js";

/** What `/openapi.json` says of one route: the table a route is registered from says it (so the two cannot drift). */
export interface DescribedRoute {
  method: "GET" | "POST" | "DELETE";
  /** OpenAPI form: `/v1/jobs/{id}`. */
  path: string;
  summary: string;
  /** Changes something (refused to a read-only token). */
  writes?: boolean;
  /** Query parameters: name → what it does. */
  query?: Record<string, string>;
  /** Status → what it answers. */
  responses: Record<number, string>;
  /** What a POST's body may be (default JSON): the OpenAI routes take a multipart form where a file may go. */
  body?: "json" | "form" | "json or form";
  /** The schema of its refusals: mediagate's one error shape (default), or OpenAI's on the routes that answer OpenAI's shapes. */
  errors?: "Error" | "OpenAiError";
}

/** One route of the REST API: registered from this, and described by it in `/openapi.json`. */
export interface ApiRoute extends DescribedRoute {
  method: "GET" | "POST";
  /** Bodies larger than this are refused (413); the server's default is 1 MB. */
  bodyLimit?: number;
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

/** OpenAI's error shape, on the routes that answer OpenAI's shapes (server/openai/errors.ts). */
const OPENAI_ERROR_SCHEMA = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["message", "type", "param", "code"],
      properties: { message: { type: "string" }, type: { type: "string" }, param: { type: ["string", "null"] }, code: { type: ["string", "null"] } },
    },
  },
} as const;

const BODY_TYPES = { json: ["application/json"], form: ["multipart/form-data"], "json or form": ["application/json", "multipart/form-data"] } as const;

/** The OpenAPI 3.1 document of the routes, served at `/openapi.json`. */
export function openApiDocument(routes: readonly DescribedRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters = [
      ...[...route.path.matchAll(/\{([a-z_]+)\}/g)].map((match) => ({ name: match[1], in: "path", required: true, schema: { type: "string" } })),
      ...Object.entries(route.query ?? {}).map(([name, description]) => ({ name, in: "query", required: false, description, schema: { type: "string" } })),
    ];
    const responses: Record<string, unknown> = {};
    const errorContent = { "application/json": { schema: { $ref: `#/components/schemas/${route.errors ?? "Error"}` } } };
    for (const [status, description] of Object.entries(route.responses)) {
      responses[status] = Number(status) >= 400 ? { description, content: errorContent } : { description };
    }
    responses["401"] ??= { description: "unauthorized", content: errorContent };
    if (route.writes) responses["403"] ??= { description: "read_only_token", content: errorContent };
    const bodyContent = Object.fromEntries(BODY_TYPES[route.body ?? "json"].map((type) => [type, { schema: { type: "object" } }]));
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      summary: route.summary,
      ...(parameters.length ? { parameters } : {}),
      ...(route.method === "POST" ? { requestBody: { required: route.path !== "/v1/jobs/{id}/cancel", content: bodyContent } } : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "mediagate", version: "1", description: "One job model over six image and video provider APIs: durable queue, limits, ledger." },
    security: [{ bearer: [] }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "an API token from `mediagate token create` (mg_…)" } }, schemas: { Error: ERROR_SCHEMA, OpenAiError: OPENAI_ERROR_SCHEMA } },
    paths,
  };
}
