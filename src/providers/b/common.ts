import {
  COMMON_FIELDS,
  parseRatio,
  parseSize,
  ratioOfSize,
  type CommonCapabilities,
  type CommonField,
  type CommonMapping,
  type CommonRequest,
  type ImageInput,
  type Unhonoured,
} from "../../core/common-request.js";
import { InputError } from "../../core/errors.js";
import type { CommonTarget, JobRequest } from "../adapter.js";
import { apiIdOf, splitApiId } from "./api-id.js";
import type { BCachedOperation, BCatalogRecord } from "./catalog.js";

/**
 * A common video request onto one of B's catalog operations, through the
 * operation's own `input_schema` (spec B rule 6: the schema is authoritative;
 * nothing is inferred from a model name). A B property is filled from a
 * common field only where its name and type say it is the same thing:
 *
 * | common field     | B property                                                          | its type                  |
 * |------------------|---------------------------------------------------------------------|---------------------------|
 * | prompt           | `prompt`                                                            | string                    |
 * | size             | `size` ("WxH" as given), else `width` and `height` in pixels        | string; integer or number |
 * | aspect_ratio     | `aspect_ratio` ("adaptive" only where its enum lists "adaptive")    | string                    |
 * | seed             | `seed`                                                              | integer or number         |
 * | duration_s       | `duration_s` (rounded to a whole second only within 0.05 s, warned) | integer or number         |
 * | resolution       | `resolution`                                                        | string                    |
 * | generate_audio   | `generate_audio`                                                    | boolean                   |
 * | first_frame      | `first_frame`, else `image` of an `image-to-video` operation        | string (a URL, for image) |
 * | last_frame       | `last_frame`                                                        | string                    |
 * | reference_images | `reference_images`                                                  | array of strings          |
 *
 * Media are sent as http(s) URLs only: B takes media as URLs and shows no
 * upload. Each value placed is then held to the property's own schema (enum,
 * range, length, format) by B's schema check; a property it refuses, a
 * property missing or of another type, and a required property that no
 * common field and no `provider_options.b` key fills, each make the target
 * ineligible, named in `unhonoured`. Image requests are not honoured: B's
 * operations produce video or audio.
 *
 * `cachedOf` is the adapter's catalog cache: the record must have been read
 * by `prefetch` for this target. When it was not, this throws (the caller's
 * mistake, as in `validate`) rather than calling an able target ineligible.
 */
export function bFromCommon(request: CommonRequest, target: CommonTarget, cachedOf: (apiId: string) => BCachedOperation | undefined): CommonMapping<JobRequest> {
  if (request.task !== "video") return { ok: false, unhonoured: [{ field: "task", reason: "B's catalog operations produce video or audio (spec B), not images" }] };
  const apiId = apiIdOf(target);
  const cached = cachedOf(apiId);
  if (cached === undefined) {
    throw new InputError(target.operation === undefined ? "model" : "operation", `catalog record not loaded for ${apiId}: prefetch must run before fromCommon`);
  }
  if (cached.kind === "missing") {
    const alternatives = cached.alternatives.length > 0 ? `; B lists ${cached.alternatives.join(", ")}` : "";
    return { ok: false, unhonoured: [{ field: "model", reason: `"${apiId}" is not an operation in B's catalog${alternatives}` }] };
  }
  const refusal = targetRefusal(cached.record, apiId);
  if (refusal) return { ok: false, unhonoured: [refusal] };
  const operation = operationOf(cached.record, apiId);

  const placed = new Map<CommonField, Placement>();
  const unhonoured: Unhonoured[] = [];
  const outcomes: Array<[CommonField, Placement | Refusal]> = [];
  if (request.prompt !== undefined) outcomes.push(["prompt", textProperty(operation, "prompt", request.prompt)]);
  if (request.size !== undefined) outcomes.push(["size", sizeProperties(operation, request.size)]);
  if (request.aspect_ratio !== undefined) outcomes.push(["aspect_ratio", aspectRatioProperty(operation, request.aspect_ratio)]);
  if (request.seed !== undefined) outcomes.push(["seed", numberProperty(operation, "seed", request.seed)]);
  if (request.duration_s !== undefined) outcomes.push(["duration_s", durationProperty(operation, request.duration_s)]);
  if (request.resolution !== undefined) outcomes.push(["resolution", textProperty(operation, "resolution", request.resolution)]);
  if (request.generate_audio !== undefined) outcomes.push(["generate_audio", booleanProperty(operation, "generate_audio", request.generate_audio)]);
  if (request.first_frame !== undefined) outcomes.push(["first_frame", firstFrameProperty(operation, request.first_frame)]);
  if (request.last_frame !== undefined) outcomes.push(["last_frame", imageProperty(operation, "last_frame", request.last_frame)]);
  if (request.reference_images !== undefined) outcomes.push(["reference_images", imageListProperty(operation, "reference_images", request.reference_images)]);
  for (const [field, outcome] of outcomes) {
    if ("reason" in outcome) unhonoured.push({ field, reason: outcome.reason });
    else placed.set(field, outcome);
  }

  // Each value is held to its property's own schema (enum, range, length, format) by the same check validate runs.
  // Problems of the input as a whole, and required properties, wait for validate: provider_options.b is merged first.
  const input: Record<string, unknown> = {};
  for (const placement of placed.values()) Object.assign(input, placement.properties);
  const problems = operation.record.check.problems(input);
  for (const [field, placement] of [...placed]) {
    const own = problems.filter((problem) => Object.keys(placement.properties).some((property) => belongsTo(problem.path, property)));
    if (own.length === 0) continue;
    placed.delete(field);
    const said = own.map((problem) => `${problem.path} ${problem.message}${problem.allowed !== undefined ? ` (allowed: ${problem.allowed})` : ""}`).join("; ");
    unhonoured.push({ field, reason: `${apiId}'s input_schema refuses ${shortValue(request[field])}: ${said}` });
  }
  unhonoured.push(...unfilledRequired(operation, request, placed, unhonoured));

  if (unhonoured.length > 0) return { ok: false, unhonoured: inFieldOrder(unhonoured) };
  const body: Record<string, unknown> = {};
  const warnings: string[] = [];
  for (const placement of placed.values()) {
    Object.assign(body, placement.properties);
    warnings.push(...placement.warnings);
  }
  return { ok: true, request: { provider: "b", model: target.model, ...(target.operation !== undefined ? { operation: target.operation } : {}), input: body }, warnings };
}

type Schema = Record<string, unknown>;

interface Placement {
  properties: Record<string, unknown>;
  warnings: string[];
}

interface Refusal {
  reason: string;
}

interface Operation {
  apiId: string;
  /** The function segment (spec B rule 1: an operation is chosen by it); null when the api_id has fewer than three segments. */
  functionName: string | null;
  record: BCatalogRecord;
  root: Schema;
  properties: Record<string, Schema>;
}

/** spec B Submit body: "One image-to-video operation takes … image (string, URL)": the picture the clip starts from. */
const IMAGE_TO_VIDEO = "image-to-video";
const IMAGE_PROPERTY = "image";
/**
 * A duration this close to a whole second is sent as that second (about one
 * frame at 24 fps: 121 frames at 24 fps is 5.04 s); further off, an integer
 * duration_s cannot hold it faithfully.
 */
const DURATION_ROUNDING_S = 0.05;
/** JSON Schema formats that say a string is a link. */
const URL_FORMATS: ReadonlySet<string> = new Set(["uri", "iri", "url"]);
/** Values in messages are cut here: a prompt is the user's own, and a reason should stay one line. */
const VALUE_IN_MESSAGE = 60;
/** How deep local `$ref`s are followed: a schema referring to itself in a loop is read as untyped. */
const REF_DEPTH = 8;

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An unavailable operation, or one that does not make video: the target as a whole is not eligible. */
function targetRefusal(record: BCatalogRecord, apiId: string): Unhonoured | null {
  if (record.availability.kind === "unavailable") {
    return { field: "model", reason: `${apiId} is listed in B's catalog but not available now (${JSON.stringify(record.availability.raw)})` };
  }
  const made = outputMediaOf(record, splitApiId(apiId)?.operation ?? null);
  if (made.media !== "video") return { field: "task", reason: `${apiId} ${made.said}, not video` };
  return null;
}

/**
 * What the operation makes. spec B: "Operations produce video or audio" and
 * an operation is chosen by its function segment; the record's field for it
 * is not shown. A string `output_media_type` in the record is read first;
 * else the function's `…-to-video` / `…-to-audio`. Neither: not known, so
 * not offered for a video request.
 */
function outputMediaOf(record: BCatalogRecord, functionName: string | null): { media: string | null; said: string } {
  const stated = record.raw.output_media_type;
  if (typeof stated === "string") return { media: stated, said: `makes ${stated} (its catalog record's output_media_type)` };
  const suffix = functionName === null ? null : /-to-([a-z]+)$/.exec(functionName);
  if (suffix) return { media: suffix[1]!, said: `makes ${suffix[1]} (its function ${functionName})` };
  return { media: null, said: `does not say what it makes (no output_media_type in its catalog record, and its function is not …-to-video)` };
}

function operationOf(record: BCatalogRecord, apiId: string): Operation {
  const root = record.inputSchema;
  const properties: Record<string, Schema> = {};
  if (isSchema(root.properties)) {
    for (const [name, schema] of Object.entries(root.properties)) if (isSchema(schema)) properties[name] = resolved(root, schema);
  }
  return { apiId, functionName: splitApiId(apiId)?.operation ?? null, record, root, properties };
}

/** A schema with a local `$ref` (`#/$defs/…`, `#/definitions/…`) followed; its sibling keywords kept (2020-12 applies both). */
function resolved(root: Schema, schema: Schema, depth = 0): Schema {
  const reference = schema.$ref;
  if (typeof reference !== "string" || depth >= REF_DEPTH) return schema;
  const match = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(reference);
  const definitions = match ? root[match[1]!] : undefined;
  const name = match ? match[2]!.replace(/~1/g, "/").replace(/~0/g, "~") : "";
  const definition = isSchema(definitions) ? definitions[name] : undefined;
  if (!isSchema(definition)) return schema;
  const { $ref: _followed, ...siblings } = schema;
  return { ...resolved(root, definition, depth + 1), ...siblings };
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** The JSON types a property takes: `type`, or its `anyOf`/`oneOf` branches, `allOf` in common, or its enum's values. Null when the schema does not say. */
function typesOf(root: Schema, input: Schema): Set<string> | null {
  const schema = resolved(root, input);
  if (typeof schema.type === "string") return new Set([schema.type]);
  if (Array.isArray(schema.type)) return new Set(schema.type.filter((type): type is string => typeof type === "string"));
  const branches = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branches)) {
    const union = new Set<string>();
    for (const branch of branches) {
      const types = isSchema(branch) ? typesOf(root, branch) : null;
      if (types === null) return null;
      for (const type of types) union.add(type);
    }
    return union;
  }
  if (Array.isArray(schema.allOf)) {
    // Every branch applies: the types they have in common (branches that say nothing about type do not narrow).
    const known = schema.allOf.map((branch) => (isSchema(branch) ? typesOf(root, branch) : null)).filter((types): types is Set<string> => types !== null);
    const [first, ...rest] = known;
    return first === undefined ? null : new Set([...first].filter((type) => rest.every((types) => types.has(type))));
  }
  if (Array.isArray(schema.enum)) return new Set(schema.enum.map(jsonTypeOf));
  if ("const" in schema) return new Set([jsonTypeOf(schema.const)]);
  return null;
}

/** The values a property is limited to (`enum`, `const`, through `$ref`, `allOf` and `anyOf`/`oneOf`); null when any value of its type goes. */
function enumOf(root: Schema, input: Schema): unknown[] | null {
  const schema = resolved(root, input);
  if (Array.isArray(schema.enum)) return schema.enum;
  if ("const" in schema) return [schema.const];
  if (Array.isArray(schema.allOf)) {
    for (const branch of schema.allOf) {
      const values = isSchema(branch) ? enumOf(root, branch) : null;
      if (values !== null) return values;
    }
  }
  const branches = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branches)) {
    const values: unknown[] = [];
    for (const branch of branches) {
      if (!isSchema(branch)) return null;
      const types = typesOf(root, branch);
      if (types?.size === 1 && types.has("null")) continue;
      const branchValues = enumOf(root, branch);
      if (branchValues === null) return null;
      values.push(...branchValues);
    }
    return values;
  }
  return null;
}

function takes(types: Set<string> | null, wanted: string): boolean {
  if (types === null) return false;
  // JSON Schema: every integer is also a number.
  return types.has(wanted) || (wanted === "integer" && types.has("number"));
}

function absent(operation: Operation, property: string): Refusal {
  return { reason: `${operation.apiId}'s input_schema has no "${property}" property` };
}

function otherType(operation: Operation, property: string, wanted: string): Refusal {
  const types = typesOf(operation.root, operation.properties[property]!);
  const said = types === null ? "gives it no type" : `types it ${[...types].join(" or ")}`;
  return { reason: `${operation.apiId}'s input_schema ${said}, not ${wanted}: "${property}" cannot be told to be the same thing` };
}

/** Why the operation has no property of this name taking this JSON type; null when it has one. */
function typeRefusal(operation: Operation, property: string, wanted: string): Refusal | null {
  const schema = operation.properties[property];
  if (schema === undefined) return absent(operation, property);
  if (!takes(typesOf(operation.root, schema), wanted)) return otherType(operation, property, wanted);
  return null;
}

function one(property: string, value: unknown, warnings: string[] = []): Placement {
  return { properties: { [property]: value }, warnings };
}

function textProperty(operation: Operation, property: string, value: string): Placement | Refusal {
  return typeRefusal(operation, property, "string") ?? one(property, value);
}

function numberProperty(operation: Operation, property: string, value: number): Placement | Refusal {
  return typeRefusal(operation, property, Number.isInteger(value) ? "integer" : "number") ?? one(property, value);
}

function booleanProperty(operation: Operation, property: string, value: boolean): Placement | Refusal {
  return typeRefusal(operation, property, "boolean") ?? one(property, value);
}

/** "WxH" into a `size` string as given, else into `width` and `height` (both numbers of pixels by name and type). */
function sizeProperties(operation: Operation, size: string): Placement | Refusal {
  if (operation.properties.size !== undefined) return textProperty(operation, "size", size);
  const dimensions = parseSize(size);
  if (operation.properties.width === undefined || operation.properties.height === undefined || dimensions === null) {
    return { reason: `${operation.apiId}'s input_schema has no "size" property, nor "width" and "height"` };
  }
  const refusal = typeRefusal(operation, "width", "integer") ?? typeRefusal(operation, "height", "integer");
  return refusal ?? { properties: { width: dimensions.width, height: dimensions.height }, warnings: [] };
}

/**
 * "W:H" as given, or the entry of the property's enum that is exactly the
 * same ratio written otherwise ("32:18" as "16:9", with a warning). "adaptive"
 * is mediagate's word for the first frame's ratio: sent only where the enum
 * lists it, since a free string gives no sign that B reads it so.
 */
function aspectRatioProperty(operation: Operation, ratio: string): Placement | Refusal {
  const refusal = typeRefusal(operation, "aspect_ratio", "string");
  if (refusal) return refusal;
  const allowed = enumOf(operation.root, operation.properties.aspect_ratio!);
  if (ratio === "adaptive" && !allowed?.includes(ratio)) {
    const lists = allowed === null ? "is a free string" : `takes ${allowed.map((value) => JSON.stringify(value)).join(", ")}`;
    return { reason: `${operation.apiId}'s aspect_ratio ${lists} and lists no "adaptive", so it cannot be told to follow the first frame's ratio` };
  }
  if (allowed === null || allowed.includes(ratio)) return one("aspect_ratio", ratio);
  const asked = parseRatio(ratio);
  const same = asked === null ? undefined : allowed.find((entry) => typeof entry === "string" && parseRatio(entry) !== null && ratioOfSize(parseRatio(entry)!) === ratioOfSize(asked));
  if (same !== undefined) return one("aspect_ratio", same, [`aspect_ratio ${ratio} sent as ${same as string} (the same ratio, as ${operation.apiId}'s input_schema writes it)`]);
  // Not in the enum: placed as asked, so the schema check names the allowed values.
  return one("aspect_ratio", ratio);
}

/** duration_s as given; into an integer-only property, a value within DURATION_ROUNDING_S of a whole second is rounded, with a warning. */
function durationProperty(operation: Operation, seconds: number): Placement | Refusal {
  const schema = operation.properties.duration_s;
  if (schema === undefined) return absent(operation, "duration_s");
  const types = typesOf(operation.root, schema);
  if (takes(types, "number") || (Number.isInteger(seconds) && takes(types, "integer"))) return one("duration_s", seconds);
  if (!takes(types, "integer")) return otherType(operation, "duration_s", "a number of seconds");
  const whole = Math.round(seconds);
  if (whole < 1 || Math.abs(seconds - whole) > DURATION_ROUNDING_S) {
    return { reason: `${operation.apiId}'s input_schema takes duration_s in whole seconds (integer), and ${seconds} is more than ${DURATION_ROUNDING_S} s from one` };
  }
  return one("duration_s", whole, [`duration_s ${seconds} sent as ${whole} (${operation.apiId} takes whole seconds)`]);
}

/** B takes media as URLs and shows no upload (spec B Submit body: `image` is a URL): why this one cannot be sent, or null. */
function mediaRefusal(image: ImageInput): Refusal | null {
  if (typeof image !== "string") return { reason: `file ${image.fileName}: B takes media as URLs and shows no upload, so a local file cannot be sent` };
  if (!/^https?:\/\//i.test(image) || !URL.canParse(image)) return { reason: `${shortValue(image)} is not an http(s) URL (B takes media as URLs)` };
  return null;
}

function describedAsUrl(schema: Schema): boolean {
  return (typeof schema.format === "string" && URL_FORMATS.has(schema.format)) || (typeof schema.description === "string" && /\bURL\b/i.test(schema.description));
}

/** `image` is the clip's first frame only on an image-to-video operation (spec B Submit body) that has no `first_frame` and describes `image` as a URL string. */
function imageIsFirstFrame(operation: Operation): boolean {
  const schema = operation.properties[IMAGE_PROPERTY];
  return (
    operation.functionName === IMAGE_TO_VIDEO &&
    operation.properties.first_frame === undefined &&
    schema !== undefined &&
    takes(typesOf(operation.root, schema), "string") &&
    describedAsUrl(schema)
  );
}

function imageProperty(operation: Operation, property: string, image: ImageInput): Placement | Refusal {
  return typeRefusal(operation, property, "string") ?? mediaRefusal(image) ?? one(property, image);
}

function firstFrameProperty(operation: Operation, image: ImageInput): Placement | Refusal {
  if (operation.properties.first_frame !== undefined) return imageProperty(operation, "first_frame", image);
  if (imageIsFirstFrame(operation)) return imageProperty(operation, IMAGE_PROPERTY, image);
  const why =
    operation.functionName === IMAGE_TO_VIDEO && operation.properties[IMAGE_PROPERTY] !== undefined
      ? `, and its "image" is not described as a URL string`
      : ` (an "image" is read as the first frame only on an image-to-video operation)`;
  return { reason: `${operation.apiId}'s input_schema has no "first_frame" property${why}` };
}

function imageListProperty(operation: Operation, property: string, images: ImageInput[]): Placement | Refusal {
  const refusal = typeRefusal(operation, property, "array");
  if (refusal) return refusal;
  const items = operation.properties[property]!.items;
  if (!isSchema(items) || !takes(typesOf(operation.root, items), "string")) {
    return { reason: `${operation.apiId}'s input_schema does not type the items of "${property}" as strings (URLs)` };
  }
  for (const image of images) {
    const mediaProblem = mediaRefusal(image);
    if (mediaProblem) return mediaProblem;
  }
  return one(property, images);
}

/** Which common field fills a property of this operation, by the table of bFromCommon. */
function commonFieldFor(operation: Operation, property: string): CommonField | null {
  switch (property) {
    case "prompt":
    case "size":
    case "aspect_ratio":
    case "seed":
    case "duration_s":
    case "resolution":
    case "generate_audio":
    case "first_frame":
    case "last_frame":
    case "reference_images":
      return property;
    case "width":
    case "height":
      return operation.properties.size === undefined ? "size" : null;
    case IMAGE_PROPERTY:
      return imageIsFirstFrame(operation) ? "first_frame" : null;
    default:
      return null;
  }
}

function allowedText(operation: Operation, property: string): string {
  const schema = operation.properties[property];
  if (schema === undefined) return "not described";
  const values = enumOf(operation.root, schema);
  if (values !== null) return `one of ${values.map((value) => JSON.stringify(value)).join(", ")}`;
  const types = typesOf(operation.root, schema);
  const parts = [types === null ? "any value" : [...types].join(" or ")];
  if (typeof schema.minimum === "number") parts.push(`from ${schema.minimum}`);
  if (typeof schema.maximum === "number") parts.push(`to ${schema.maximum}`);
  if (typeof schema.format === "string") parts.push(`(${schema.format})`);
  return parts.join(" ");
}

/**
 * Required properties nothing fills. A key of `provider_options.b` counts as
 * filled: the caller merges it over the mapped input before validate, so an
 * operation needing a native field (Effects' `effect`) is eligible when the
 * user gives it there. A property whose common field was given but not
 * honoured is already named under that field.
 */
function unfilledRequired(operation: Operation, request: CommonRequest, placed: Map<CommonField, Placement>, unhonoured: Unhonoured[]): Unhonoured[] {
  const required = Array.isArray(operation.root.required) ? operation.root.required.filter((name): name is string => typeof name === "string") : [];
  const native = request.provider_options?.b;
  const supplied = new Set(isSchema(native) ? Object.keys(native) : []);
  const filled = new Set([...placed.values()].flatMap((placement) => Object.keys(placement.properties)));
  const refused = new Set(unhonoured.map((entry) => entry.field));
  const missing: Unhonoured[] = [];
  for (const property of required) {
    if (filled.has(property) || supplied.has(property)) continue;
    const field = commonFieldFor(operation, property);
    if (field !== null && refused.has(field)) continue;
    const allowed = allowedText(operation, property);
    if (field !== null && request[field] === undefined) {
      missing.push({ field, reason: `${operation.apiId} requires "${property}" (${allowed}): give ${field}, or provider_options.b.${property}` });
    } else {
      missing.push({ field: `provider_options.b.${property}`, reason: `${operation.apiId} requires "${property}" (${allowed}), which no common field fills: give it in provider_options.b.${property}` });
    }
  }
  return missing;
}

/** Whether a schema problem's path (`prompt`, `reference_images[1]`, `["odd name"]`) is about this property. */
function belongsTo(path: string, property: string): boolean {
  const quoted = `[${JSON.stringify(property)}]`;
  return path === property || path.startsWith(`${property}.`) || path.startsWith(`${property}[`) || path === quoted || path.startsWith(`${quoted}.`) || path.startsWith(`${quoted}[`);
}

function shortValue(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
  return [...text].length > VALUE_IN_MESSAGE ? `${[...text].slice(0, VALUE_IN_MESSAGE).join("")}…` : text;
}

const FIELD_ORDER: readonly string[] = ["task", "model", ...COMMON_FIELDS];

/** Unhonoured fields in the request's field order, native requirements last. */
function inFieldOrder(unhonoured: Unhonoured[]): Unhonoured[] {
  const rank = (field: string) => (FIELD_ORDER.includes(field) ? FIELD_ORDER.indexOf(field) : FIELD_ORDER.length);
  return unhonoured.map((entry, index) => ({ entry, index })).sort((left, right) => rank(left.entry.field) - rank(right.entry.field) || left.index - right.index).map(({ entry }) => entry);
}

/**
 * What `bFromCommon` honours (`mediagate models`): it depends on each
 * operation's input_schema, read from B's catalog (`mediagate catalog show`),
 * so only the rule is given here.
 */
export const B_COMMON_CAPABILITIES: CommonCapabilities = {
  task: "video",
  honours: {
    prompt: "where the operation's input_schema has a string prompt",
    size: "a string size property (as given), or integer width and height",
    aspect_ratio: "a string aspect_ratio property, its enum's value (adaptive only when the enum lists it)",
    seed: "an integer seed property",
    duration_s: "an integer or number duration_s property (within 0.05 s of a whole second rounded, with a warning), within its enum or range",
    resolution: "a string resolution property, within its enum",
    generate_audio: "a boolean generate_audio property",
    first_frame: "a first_frame property, or image on an image-to-video operation; URLs only",
    last_frame: "a last_frame property; URLs only",
    reference_images: "an array reference_images property; URLs only",
  },
  refuses: {},
  priceBasis: "B's quote for the operation before sending (a ceiling); the charge B settles after the job is the accounting fact",
};
