import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { B_CATALOG } from "./catalog-entries.js";
import { inputSchema } from "./catalog-record.js";
import type { BOperation } from "./operation.js";

/** The "uri" format of the schemas: an absolute http(s) URL (media inputs are fetched by the service). */
function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
}

const ajv = new Ajv2020({ allErrors: true, strict: true });
ajv.addFormat("uri", { type: "string", validate: isHttpUrl });

const validators = new Map<string, ValidateFunction>();

function validatorFor(operation: BOperation): ValidateFunction {
  let validate = validators.get(operation.apiId);
  if (!validate) {
    validate = ajv.compile(inputSchema(operation));
    validators.set(operation.apiId, validate);
  }
  return validate;
}

function describe(error: ErrorObject): string {
  const at = error.instancePath === "" ? "body" : error.instancePath.slice(1).replaceAll("/", ".");
  if (error.keyword === "additionalProperties") return `${at}: unknown field ${String(error.params.additionalProperty)}`;
  if (error.keyword === "enum") return `${at}: must be one of ${JSON.stringify(error.params.allowedValues)}`;
  return `${at}: ${error.message ?? error.keyword}`;
}

/**
 * spec B Submit body: the catalog input_schema is the authoritative shape.
 * Returns null for a valid body, else a message naming every problem.
 */
export function bodyProblems(operation: BOperation, body: unknown): string | null {
  const validate = validatorFor(operation);
  if (validate(body)) return null;
  return (validate.errors ?? []).map(describe).join("; ");
}

/** Compiles every schema once (a malformed catalog entry fails at start-up, not at the first submit). */
export function compileCatalogSchemas(): void {
  for (const operation of B_CATALOG) validatorFor(operation);
}
