import { InputError } from "../../core/errors.js";
import { longPromptWarnings } from "../../core/prompt-length.js";
import type { JobRequest, ValidatedRequest } from "../adapter.js";
import { apiIdOf, splitApiId } from "./api-id.js";
import type { BCachedOperation, BCatalogRecord } from "./catalog.js";
import type { InputProblem } from "./input-schema.js";

/** The field mediagate adds itself from the job's callback URL (spec B Events 1); never taken from input. */
const WEBHOOK_FIELD = "webhook_url";
/** spec B Submit body: the one media field the spec names (an image-to-video operation's `image`, a URL). */
const IMAGE_FIELD = "image";

/** What validation derived, stored with the job. */
export interface BFacts {
  apiId: string;
  /** When the catalog record used was read (ms since the epoch). */
  catalogReadAt: number;
  /** The record's availability as given (its field name and values are not shown by the spec). */
  availability: unknown;
  /** The input_schema's `$id`, when it has one. */
  schemaId: string | null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function operationField(request: JobRequest): "operation" | "model" {
  return request.operation === undefined ? "model" : "operation";
}

function recordOf(request: JobRequest, apiId: string, cached: BCachedOperation | undefined): { record: BCatalogRecord; fetchedAt: number } {
  if (cached === undefined) {
    // validate is pure: B's fields come from its catalog record, which prefetch reads.
    throw new InputError(operationField(request), `catalog record not loaded for ${apiId}: prefetch must run before validate`);
  }
  if (cached.kind === "missing") {
    const allowed = cached.alternatives.length > 0 ? cached.alternatives.join(", ") : "see `mediagate catalog`";
    throw new InputError(operationField(request), `"${apiId}" is not an operation in B's catalog`, allowed);
  }
  if (cached.record.availability.kind === "unavailable") {
    throw new InputError(operationField(request), `${apiId} is listed in B's catalog but not available now (${JSON.stringify(cached.record.availability.raw)})`);
  }
  return cached;
}

/** Properties of the record's schema, for messages. */
function schemaFields(record: BCatalogRecord): string[] {
  const properties = record.inputSchema.properties;
  return isPlainObject(properties) ? Object.keys(properties) : [];
}

/**
 * The job's `images` onto B's native fields. B takes media as URLs in the
 * operation's own fields and shows no upload: only an http(s) URL can be
 * sent, and only to the `image` field the spec names, when the record's
 * schema has one. Anything else must be given in `input` under the field the
 * record names (nothing is guessed from field or model names).
 */
function withImages(request: JobRequest, record: BCatalogRecord, input: Record<string, unknown>): Record<string, unknown> {
  const images = request.images ?? [];
  if (images.length === 0) return input;
  const fields = schemaFields(record);
  const hint = `give media URLs in input under this operation's fields: ${fields.join(", ") || "(none)"}`;
  for (const [index, image] of images.entries()) {
    if (typeof image !== "string") {
      throw new InputError(`images[${index}]`, `file ${image.fileName}: B takes media as URLs and shows no upload`, "an http(s) URL");
    }
    if (!/^https?:\/\//i.test(image) || !URL.canParse(image)) throw new InputError(`images[${index}]`, "must be an http(s) URL", "an http(s) URL");
  }
  if (images.length > 1 || !fields.includes(IMAGE_FIELD)) {
    throw new InputError("images", `${record.apiId} has no single "${IMAGE_FIELD}" field to put ${images.length} image(s) in`, hint);
  }
  if (input[IMAGE_FIELD] !== undefined) throw new InputError("images", `give the image either as input.${IMAGE_FIELD} or as images, not both`, hint);
  return { ...input, [IMAGE_FIELD]: images[0] };
}

/**
 * spec B: "the numeric caps … are in each catalog record", so a text field
 * whose record gives a maxLength is held to it by the schema check. A text
 * field given no maxLength (and no format: links are not prompts) gets the
 * long-prompt warning, since no limit is published for it.
 */
function unlimitedTextWarnings(record: BCatalogRecord, body: Record<string, unknown>): string[] {
  const properties = isPlainObject(record.inputSchema.properties) ? record.inputSchema.properties : {};
  const warnings: string[] = [];
  for (const [field, value] of Object.entries(body)) {
    if (typeof value !== "string") continue;
    const property = properties[field];
    if (isPlainObject(property) && (typeof property.maxLength === "number" || typeof property.format === "string")) continue;
    warnings.push(...longPromptWarnings(field, value, `B's catalog record of ${record.apiId} gives ${field} no maxLength`));
  }
  return warnings;
}

function refuse(problems: InputProblem[]): never {
  const [first, ...rest] = problems;
  const also = rest.length > 0 ? `; also ${rest.map((problem) => `${problem.path}: ${problem.message}`).join("; ")}` : "";
  throw new InputError(first!.path, `${first!.message}${also}`, first!.allowed);
}

/**
 * Checks a job for B against its operation's catalog record and builds the
 * exact submit body (without `webhook_url`, which submit adds). Pure: the
 * record was read by prefetch.
 */
export function validateBRequest(request: JobRequest, cachedOf: (apiId: string) => BCachedOperation | undefined): ValidatedRequest {
  const apiId = apiIdOf(request);
  if (!isPlainObject(request.input)) throw new InputError("input", "must be an object");
  const { record, fetchedAt } = recordOf(request, apiId, cachedOf(apiId));
  const parts = splitApiId(apiId);
  if (parts === null) {
    throw new InputError("model", `"${apiId}" is not a {vendor}/{model}/{function} path`, "an api_id from `mediagate catalog`");
  }
  if (Object.hasOwn(request.input, WEBHOOK_FIELD)) {
    throw new InputError(WEBHOOK_FIELD, "is set by mediagate from MEDIAGATE_PUBLIC_URL (its webhook route), never from input");
  }
  const body = structuredClone(withImages(request, record, request.input));
  // spec B rule 6: the catalog input_schema is authoritative; paths, fields, enums and caps all come from it.
  const problems = record.check.problems(body);
  if (problems.length > 0) refuse(problems);

  const warnings = unlimitedTextWarnings(record, body);
  if (record.availability.kind === "unknown") {
    warnings.push(`B's catalog record of ${apiId} states no availability mediagate can read (${JSON.stringify(record.availability.raw) ?? "absent"}); B decides on submit`);
  }
  if (record.check.uncheckedFormats.length > 0) {
    warnings.push(`formats not checked by mediagate (B checks them on submit): ${record.check.uncheckedFormats.join(", ")}`);
  }
  const schemaId = record.inputSchema.$id;
  const facts: BFacts = {
    apiId,
    catalogReadAt: fetchedAt,
    availability: record.availability.raw ?? null,
    schemaId: typeof schemaId === "string" ? schemaId : null,
  };
  return { provider: "b", model: parts.model, operation: parts.operation, body, warnings, facts: { ...facts } };
}
