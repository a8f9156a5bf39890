import { describe, expect, it } from "vitest";
import { API_ERROR_CODES } from "../../src/server/api/errors.js";
import { type ApiRoute, openApiDocument } from "../../src/server/api/openapi.js";

/** The OpenAPI document is built from the routes the server registers: what it says of each, exactly (issue 35). */
const handler = async () => ({});
const ERROR_CONTENT = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };

describe("the OpenAPI document", () => {
  it("describes each route: path parameters, query parameters, its body, its answers (errors with the one error shape), 401 on every route and 403 on the ones that write", () => {
    const routes: ApiRoute[] = [
      { method: "GET", path: "/v1/jobs/{id}/outputs/{index}", summary: "one output", query: { download: "as an attachment" }, responses: { 200: "the bytes", 404: "not_found" }, handler },
      { method: "POST", path: "/v1/jobs", summary: "queue a job", writes: true, responses: { 201: "queued", 422: "invalid_input" }, handler },
      { method: "POST", path: "/v1/jobs/{id}/cancel", summary: "cancel", writes: true, responses: { 200: "cancelled", 403: "not yours to cancel", 401: "who are you" }, handler },
      { method: "GET", path: "/v1/jobs", summary: "list", responses: { 200: "a page", 399: "odd", 400: "bad filter" }, handler },
    ];
    const document = openApiDocument(routes);
    expect(document.openapi).toBe("3.1.0");
    expect(document.security).toEqual([{ bearer: [] }]);
    expect(document.info).toMatchObject({ title: "mediagate", version: "1" });
    const components = document.components as { securitySchemes: unknown; schemas: { Error: { properties: { error: { required: string[]; properties: { code: { enum: string[] } } } } } } };
    expect(components.securitySchemes).toEqual({ bearer: { type: "http", scheme: "bearer", description: "an API token from `mediagate token create` (mg_…)" } });
    expect(components.schemas.Error.properties.error.required).toEqual(["code", "message"]);
    expect(components.schemas.Error.properties.error.properties.code.enum).toEqual(Object.keys(API_ERROR_CODES));
    expect(document.paths).toEqual({
      "/v1/jobs/{id}/outputs/{index}": {
        get: {
          summary: "one output",
          parameters: [
            { name: "id", in: "path", required: true, schema: { type: "string" } },
            { name: "index", in: "path", required: true, schema: { type: "string" } },
            { name: "download", in: "query", required: false, description: "as an attachment", schema: { type: "string" } },
          ],
          responses: { 200: { description: "the bytes" }, 404: { description: "not_found", content: ERROR_CONTENT }, 401: { description: "unauthorized", content: ERROR_CONTENT } },
        },
      },
      "/v1/jobs": {
        post: {
          summary: "queue a job",
          requestBody: { required: true, content: { "application/json": { schema: { type: "object" } } } },
          responses: {
            201: { description: "queued" },
            422: { description: "invalid_input", content: ERROR_CONTENT },
            401: { description: "unauthorized", content: ERROR_CONTENT },
            403: { description: "read_only_token", content: ERROR_CONTENT },
          },
        },
        get: {
          summary: "list",
          responses: { 200: { description: "a page" }, 399: { description: "odd" }, 400: { description: "bad filter", content: ERROR_CONTENT }, 401: { description: "unauthorized", content: ERROR_CONTENT } },
        },
      },
      "/v1/jobs/{id}/cancel": {
        post: {
          summary: "cancel",
          parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
          // A cancel needs no body.
          requestBody: { required: false, content: { "application/json": { schema: { type: "object" } } } },
          // A route's own 401 and 403 are kept, not replaced by the defaults.
          responses: { 200: { description: "cancelled" }, 401: { description: "who are you", content: ERROR_CONTENT }, 403: { description: "not yours to cancel", content: ERROR_CONTENT } },
        },
      },
    });
  });

  it("describes a route in OpenAI's shapes: its form or JSON body, DELETE, and its refusals (401 and 403 too) in OpenAI's error shape", () => {
    const OPENAI_ERROR = { "application/json": { schema: { $ref: "#/components/schemas/OpenAiError" } } };
    const document = openApiDocument([
      { method: "POST", path: "/v1/videos", summary: "a video", writes: true, body: "json or form", errors: "OpenAiError", responses: { 200: "the video", 402: "insufficient_quota" } },
      { method: "DELETE", path: "/v1/videos/{id}", summary: "cancel it", writes: true, errors: "OpenAiError", responses: { 200: "deleted" } },
    ]);
    const schemas = (document.components as { schemas: Record<string, { properties: { error: { required: string[] } } }> }).schemas;
    expect(schemas.OpenAiError!.properties.error.required).toEqual(["message", "type", "param", "code"]);
    expect(document.paths).toEqual({
      "/v1/videos": {
        post: {
          summary: "a video",
          requestBody: { required: true, content: { "application/json": { schema: { type: "object" } }, "multipart/form-data": { schema: { type: "object" } } } },
          responses: {
            200: { description: "the video" },
            402: { description: "insufficient_quota", content: OPENAI_ERROR },
            401: { description: "unauthorized", content: OPENAI_ERROR },
            403: { description: "read_only_token", content: OPENAI_ERROR },
          },
        },
      },
      "/v1/videos/{id}": {
        delete: {
          summary: "cancel it",
          parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
          responses: { 200: { description: "deleted" }, 401: { description: "unauthorized", content: OPENAI_ERROR }, 403: { description: "read_only_token", content: OPENAI_ERROR } },
        },
      },
    });
  });
});
