import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../../src/core/clock.js";
import type { CallContext, JobRequest } from "../../../src/providers/adapter.js";
import { createBAdapter, type BAdapter } from "../../../src/providers/b/index.js";
import { ProviderHttp } from "../../../src/providers/http.js";
import { B_CATALOG, createBEmulator, DEFAULT_B_API_KEY, inputSchema, type BField, type BOperation } from "../../../src/sandbox/b/index.js";
import { bodyProblems } from "../../../src/sandbox/b/validation.js";
import { startSandbox, type Sandbox } from "../../../src/sandbox/index.js";
import { anyValue, expectNamesAField, expectRefusedNaming, promptText, RUNS, verdictOf, withField } from "../../helpers/properties.js";

/**
 * B's rules live in its catalog (spec B rule 6: the record's input_schema is
 * authoritative). The oracle compiles each record's schema with its own Ajv,
 * apart from the client's, with JSON Schema's `uri` as any absolute URI.
 */
const oracleAjv = new Ajv2020({ allErrors: true, strict: false, formats: { uri: (value: string) => /^[a-z][a-z0-9+.-]*:\S*$/i.test(value) && URL.canParse(value) } });
const oracles = new Map<string, ValidateFunction>(B_CATALOG.map((operation) => [operation.apiId, oracleAjv.compile(inputSchema(operation))]));

const AVAILABLE = B_CATALOG.filter((operation) => operation.availability === "available");
const UNAVAILABLE = B_CATALOG.filter((operation) => operation.availability === "unavailable");

let sandbox: Sandbox;
let adapter: BAdapter;

beforeAll(async () => {
  sandbox = await startSandbox({ providers: ["b"], emulators: { b: createBEmulator() } });
  adapter = createBAdapter({ baseUrl: `${sandbox.url}/b`, apiKey: DEFAULT_B_API_KEY });
  const http = new ProviderHttp({ provider: "b", clock: systemClock, secrets: () => [DEFAULT_B_API_KEY], urlPolicy: { allowHttp: true, allowPrivate: true }, random: () => 0 });
  const context: CallContext = { http, clock: sandbox.clock };
  // validate is pure: every catalog record is read once, then the properties run on the cached records.
  for (const operation of B_CATALOG) await adapter.prefetch!({ provider: "b", model: operation.apiId, input: {} }, context);
});

afterAll(async () => {
  await sandbox.stop();
});

const mediaUrl = fc.stringMatching(/^[a-z0-9]{1,16}$/).map((name) => `https://media.example/${name}.png`);

/** A value the field's catalog entry allows. */
function validValue(field: BField): fc.Arbitrary<unknown> {
  if (field.enum) return fc.constantFrom(...field.enum);
  if (field.format === "uri") return mediaUrl;
  if (field.type === "integer") return fc.integer({ min: field.minimum ?? -1_000, max: field.maximum ?? 1_000_000 });
  if (field.type === "number") return fc.double({ min: field.minimum ?? -1_000, max: field.maximum ?? 1_000_000, noNaN: true });
  return promptText.filter((text) => text.length >= (field.minLength ?? 0) && text.length <= (field.maxLength ?? Infinity));
}

/** A value the field's catalog entry refuses. */
function invalidValue(field: BField): fc.Arbitrary<unknown> {
  const wrongType = field.type === "string" ? fc.constantFrom(5, true, null, ["x"]) : fc.constantFrom("5", 2.5, null, true);
  const options: Array<fc.Arbitrary<unknown>> = [wrongType];
  if (field.enum) options.push(fc.constantFrom(field.type === "string" ? "4k" : 7));
  if (field.maximum !== undefined) options.push(fc.constant(field.maximum + 1));
  if (field.minimum !== undefined) options.push(fc.constant(field.minimum - 1));
  if (field.maxLength !== undefined) options.push(fc.constant("x".repeat(field.maxLength + 1)));
  if (field.format === "uri") options.push(fc.constantFrom("lighthouse.png", "not a url"));
  return fc.oneof(...options);
}

/** A body of `operation` from its catalog entry: every required field and any of the optional ones. */
function validBodyOf(operation: BOperation): fc.Arbitrary<Record<string, unknown>> {
  const shape = Object.fromEntries(operation.fields.map((field) => [field.name, validValue(field)]));
  return fc.record(shape, { requiredKeys: operation.fields.filter((field) => field.required).map((field) => field.name) });
}

/** Built once per operation: building arbitraries inside a property's chain would cost more than the checks. */
const validBodies = new Map(B_CATALOG.map((operation) => [operation.apiId, validBodyOf(operation)]));
const validValues = new Map(B_CATALOG.flatMap((operation) => operation.fields.map((field): [string, fc.Arbitrary<unknown>] => [`${operation.apiId} ${field.name}`, validValue(field)])));
const invalidValues = new Map(B_CATALOG.flatMap((operation) => operation.fields.map((field): [string, fc.Arbitrary<unknown>] => [`${operation.apiId} ${field.name}`, invalidValue(field)])));
const validBody = (operation: BOperation) => validBodies.get(operation.apiId)!;

const validRequest: fc.Arbitrary<{ operation: BOperation; request: JobRequest }> = fc
  .constantFrom(...AVAILABLE)
  .chain((operation) => validBody(operation).map((input) => ({ operation, request: { provider: "b" as const, model: operation.apiId, input } })));

const anyRequest: fc.Arbitrary<{ operation: BOperation; request: JobRequest }> = fc.constantFrom(...AVAILABLE).chain((operation) =>
  fc
    .record({
      values: fc.array(fc.tuple(fc.constantFrom(...operation.fields), fc.nat({ max: 2 })), { maxLength: operation.fields.length + 2 }),
      extra: fc.array(fc.tuple(fc.constantFrom("fps", "webhook_url", "negative"), anyValue), { maxLength: 2 }),
      images: fc.option(fc.constantFrom<string[]>(["https://images.example/a.png"], ["ftp://images.example/a.png"], ["https://a.example/1.png", "https://a.example/2.png"]), { nil: undefined, freq: 4 }),
      seed: fc.nat(),
    })
    .chain(({ values, extra, images }) =>
      fc.tuple(...values.map(([field, pick]) => {
        const key = `${operation.apiId} ${field.name}`;
        return (pick === 0 ? invalidValues.get(key)! : pick === 1 ? anyValue : validValues.get(key)!).map((value) => [field.name, value] as const);
      })).map((pairs) => {
        let input: Record<string, unknown> = {};
        for (const [name, value] of [...pairs, ...extra]) input = withField(input, name, value);
        return { operation, request: { provider: "b" as const, model: operation.apiId, input, ...(images ? { images } : {}) } };
      }),
    ),
);

describe("B validator, property-based (against the sandbox's catalog over loopback)", () => {
  it("B property: a body built from an operation's catalog record is accepted as it is, and the sandbox accepts it too", () => {
    fc.assert(
      fc.property(validRequest, ({ operation, request }) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "refused") throw new Error(`refused a valid ${operation.apiId} request: ${verdict.error.message}`);
        expect(verdict.validated.body).toEqual(request.input);
        expect(bodyProblems(operation, verdict.validated.body)).toBeNull();
      }),
      RUNS,
    );
  });

  it("B property: no body the catalog's input_schema refuses is accepted; every refusal is an InputError naming a field of the request", () => {
    fc.assert(
      fc.property(anyRequest, ({ operation, request }) => {
        const verdict = verdictOf(() => adapter.validate(request));
        if (verdict.kind === "accepted") {
          const oracle = oracles.get(operation.apiId)!;
          expect(oracle(verdict.validated.body), JSON.stringify(oracle.errors)).toBe(true);
          // spec B Events 1: webhook_url is set from the job's callback, never taken from input.
          expect(verdict.validated.body).not.toHaveProperty("webhook_url");
        } else {
          expectNamesAField(verdict.error, request, operation.fields.map((field) => field.name));
        }
      }),
      RUNS,
    );
  });

  it("B property: breaking one field of a valid body is refused naming that field", () => {
    const broken = validRequest.chain(({ operation, request }) =>
      fc.constantFrom(...operation.fields).chain((field) => invalidValues.get(`${operation.apiId} ${field.name}`)!.map((value) => ({ request, field: field.name, value }))),
    );
    fc.assert(
      fc.property(broken, ({ request, field, value }) => {
        expectRefusedNaming(() => adapter.validate({ ...request, input: { ...request.input, [field]: value } }), field);
      }),
      RUNS,
    );
  });

  it("B property: an operation listed but unavailable is refused naming the model, whatever the body", () => {
    fc.assert(
      fc.property(fc.constantFrom(...UNAVAILABLE).chain((operation) => validBody(operation).map((input) => ({ operation, input }))), ({ operation, input }) => {
        expectRefusedNaming(() => adapter.validate({ provider: "b", model: operation.apiId, input }), "model");
      }),
      { numRuns: 50 },
    );
  });
});
