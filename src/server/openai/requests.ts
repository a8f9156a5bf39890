import type { FastifyRequest } from "fastify";
import type { ImageInput } from "../../core/common-request.js";
import { InputError } from "../../core/errors.js";
import { imageTypeOf, IMAGE_TYPES_ALLOWED } from "../../core/image-type.js";
import { checkJsonText } from "../../core/json-text.js";
import { checkWellFormed } from "../../core/well-formed.js";
import { ApiError } from "../api/errors.js";
import { apiImage, utf8Body } from "../api/requests.js";

/** A file sent in a form: its name and bytes (checked to be an image where one is wanted). */
export interface FormFile {
  fileName: string;
  bytes: Buffer;
}

/** A request's fields whatever its body: JSON (any values) or a multipart form (text fields; files apart). */
export interface OpenAiBody {
  fields: Record<string, unknown>;
  files: Map<string, FormFile[]>;
}

/**
 * The body of a call as the SDKs send it: JSON for images/generations, a
 * multipart form for images/edits and videos (`image[]` for a list, as
 * openai-node writes an array; `input_reference[image_url]` for an object).
 */
export async function openAiBody(request: FastifyRequest): Promise<OpenAiBody> {
  if (request.isMultipart()) {
    const fields: Record<string, unknown> = {};
    const files = new Map<string, FormFile[]>();
    for await (const part of request.parts()) {
      checkWellFormed(part.fieldname, "form field name");
      if (part.type === "file") {
        const list = files.get(part.fieldname) ?? [];
        list.push({ fileName: part.filename || part.fieldname, bytes: await part.toBuffer() });
        files.set(part.fieldname, list);
      } else {
        const value = String(part.value);
        checkWellFormed(value, part.fieldname);
        if (part.fieldname in fields) throw new InputError(part.fieldname, "is given more than once");
        fields[part.fieldname] = value;
      }
    }
    return { fields, files };
  }
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  if (raw.length === 0) return { fields: {}, files: new Map() };
  const text = utf8Body(raw);
  checkJsonText(text, "body", { namesMember: true });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_json", "the body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new InputError("body", "must be a JSON object");
  return { fields: parsed as Record<string, unknown>, files: new Map() };
}

/** Refuses every field not in `known`, by name: nothing asked is dropped silently. */
export function refuseUnknown(fields: Record<string, unknown>, known: readonly string[], allowed: string): void {
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    if (!known.includes(name)) throw new InputError(name, "is not honoured by mediagate on this route", allowed);
  }
}

/** A text field, or undefined when not given (null counts as not given, as the SDKs send it). */
export function textField(fields: Record<string, unknown>, name: string): string | undefined {
  const value = fields[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new InputError(name, "must be a string");
  return value;
}

/** A whole-number field (JSON number or form text), or undefined when not given. */
export function wholeField(fields: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const value = fields[name];
  if (value === undefined || value === null) return undefined;
  const number = typeof value === "string" && /^\d{1,6}$/.test(value) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isInteger(number) || number < min || number > max) throw new InputError(name, `must be a whole number from ${min} to ${max}`);
  return number;
}

/** An uploaded file as an image input, refused when its first bytes are not an image's. */
export function imageOfFile(file: FormFile, field: string): ImageInput {
  if (imageTypeOf(file.bytes) === null) throw new InputError(field, `file ${file.fileName.slice(0, 80)} is not ${IMAGE_TYPES_ALLOWED} (judged by its first bytes)`, `${IMAGE_TYPES_ALLOWED} bytes`);
  return { fileName: file.fileName, bytes: file.bytes };
}

/** An image given by address (`image_url`): an http(s) URL or a data: URL, never a path of the server. */
export function imageOfUrl(value: unknown, field: string): ImageInput {
  if (typeof value !== "string") throw new InputError(field, "must be a URL string");
  return apiImage(value, field);
}
