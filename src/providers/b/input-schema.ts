import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";

/** One thing the catalog's input_schema refuses, at a JSON path of the input (`duration_s`, `keyframes[1].url`; `input` for the whole). */
export interface InputProblem {
  path: string;
  message: string;
  allowed?: string;
}

export interface InputSchemaCheck {
  /** Every problem with `input` (allErrors), in the order Ajv reports them; empty when it passes. */
  problems(input: unknown): InputProblem[];
  /** `format` values the schema uses that mediagate does not check (B checks them when the job is submitted). */
  uncheckedFormats: string[];
}

/**
 * JSON Schema's `uri`: an absolute URI (RFC 3986 §4.3), a scheme then ":".
 * Implemented here rather than through ajv-formats, which mediagate does not
 * depend on directly. B may accept fewer schemes; it says so when submitted.
 */
function isAbsoluteUri(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\S*$/i.test(value) && URL.canParse(value);
}

const CHECKED_FORMATS: Record<string, (value: string) => boolean> = { uri: isAbsoluteUri };

function formatsUsed(schema: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) {
    for (const item of schema) formatsUsed(item, found);
  } else if (typeof schema === "object" && schema !== null) {
    for (const [key, value] of Object.entries(schema)) {
      if (key === "format" && typeof value === "string") found.add(value);
      else formatsUsed(value, found);
    }
  }
  return found;
}

/** A JSON Pointer (`/keyframes/1/url`) as a path people read (`keyframes[1].url`). */
function readablePath(segments: string[]): string {
  let path = "";
  for (const segment of segments) {
    if (/^\d+$/.test(segment)) path += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(segment)) path += path === "" ? segment : `.${segment}`;
    else path += `[${JSON.stringify(segment)}]`;
  }
  return path === "" ? "input" : path;
}

function pointerSegments(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer.slice(1).split("/").map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The property an error is about, when Ajv names it in `params` rather than in the path. */
function namedProperty(error: ErrorObject): string | undefined {
  const params = error.params as Record<string, unknown>;
  for (const name of ["missingProperty", "additionalProperty", "unevaluatedProperty", "propertyName"]) {
    if (typeof params[name] === "string") return params[name] as string;
  }
  return undefined;
}

function problemOf(error: ErrorObject): InputProblem {
  const segments = pointerSegments(error.instancePath);
  const property = namedProperty(error);
  if (property !== undefined) segments.push(property);
  const params = error.params as Record<string, unknown>;
  let message = error.message ?? `fails ${error.keyword}`;
  let allowed: string | undefined;
  if (error.keyword === "enum" && Array.isArray(params.allowedValues)) {
    allowed = params.allowedValues.map((value) => JSON.stringify(value)).join(", ");
    message = "is not one of the allowed values";
  } else if (error.keyword === "const") {
    allowed = JSON.stringify(params.allowedValue);
  } else if (error.keyword === "required") {
    message = "is required";
  } else if (error.keyword === "additionalProperties" || error.keyword === "unevaluatedProperties") {
    message = "is not a field of this operation";
  }
  return { path: readablePath(segments), message, ...(allowed !== undefined ? { allowed } : {}) };
}

/**
 * Compiles a catalog record's `input_schema` (JSON Schema 2020-12). Throws
 * when it cannot be compiled. Unknown keywords and formats are let through
 * (strict off): the schema is B's, and B checks it again on submit.
 */
export function compileInputSchema(schema: Record<string, unknown>): InputSchemaCheck {
  // A fresh Ajv per record: a refreshed record keeps its `$id`, which one Ajv instance would refuse to add twice.
  const ajv = new Ajv2020({ allErrors: true, strict: false, logger: false, formats: CHECKED_FORMATS });
  const validate: ValidateFunction = ajv.compile(schema);
  return {
    problems(input: unknown): InputProblem[] {
      if (validate(input)) return [];
      const seen = new Set<string>();
      const problems: InputProblem[] = [];
      for (const error of validate.errors ?? []) {
        const problem = problemOf(error);
        const key = `${problem.path}\u0000${problem.message}`;
        if (seen.has(key)) continue;
        seen.add(key);
        problems.push(problem);
      }
      return problems;
    },
    uncheckedFormats: [...formatsUsed(schema)].filter((format) => !(format in CHECKED_FORMATS)).sort(),
  };
}
