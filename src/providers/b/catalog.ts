import { ProviderError } from "../../core/errors.js";
import type { Clock } from "../../core/clock.js";
import type { ProviderHttp } from "../http.js";
import type { BEndpoints } from "./endpoints.js";
import { invalidAnswer, readErrorFrom } from "./errors.js";
import { compileInputSchema, type InputSchemaCheck } from "./input-schema.js";

/** What a catalog read needs: the HTTP client and, optionally, the caller's abort signal. */
export interface BReader {
  http: ProviderHttp;
  signal?: AbortSignal;
}

/** One entry of `GET /catalog/apis`, kept whole: only its api_id is read. */
export interface BCatalogEntry {
  apiId: string;
  raw: Record<string, unknown>;
}

export interface BCatalogList {
  entries: BCatalogEntry[];
  /** False when the answer's shape was not one mediagate can read (it is kept in `raw`). */
  recognized: boolean;
  raw: unknown;
}

/**
 * Whether the catalog offers the operation now. spec B names "availability"
 * among the record's contents but not its field name or values: a string
 * `availability` of "available" or "unavailable" (or a boolean
 * `availability`/`available`) is read; any other value is `unknown`, kept
 * raw, and left to B to decide on submit.
 */
export interface BAvailability {
  kind: "available" | "unavailable" | "unknown";
  raw: unknown;
}

export interface BCatalogRecord {
  apiId: string;
  availability: BAvailability;
  /** spec B: the record's `input_schema` is authoritative for the body (it wins over any prose example). */
  inputSchema: Record<string, unknown>;
  check: InputSchemaCheck;
  raw: Record<string, unknown>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * spec B rule 4: "the response shapes of the catalog list … not shown". A
 * top-level array, or the one array an object holds, is read as the list;
 * an entry is kept when it has a string `api_id` (the name the spec's paths use).
 */
function listEntries(body: unknown): BCatalogEntry[] | null {
  let items: unknown[] | null = Array.isArray(body) ? body : null;
  if (items === null && isRecord(body)) {
    const arrays = Object.values(body).filter(Array.isArray);
    if (arrays.length === 1) items = arrays[0]!;
  }
  if (items === null) return null;
  const entries: BCatalogEntry[] = [];
  for (const item of items) {
    if (isRecord(item) && typeof item.api_id === "string" && item.api_id !== "") entries.push({ apiId: item.api_id, raw: item });
  }
  return entries;
}

function availabilityOf(record: Record<string, unknown>): BAvailability {
  const value = record.availability ?? record.available;
  if (value === "available" || value === true) return { kind: "available", raw: value };
  if (value === "unavailable" || value === false) return { kind: "unavailable", raw: value };
  return { kind: "unknown", raw: value };
}

/** `GET /catalog/apis`: no key needed (spec B Authentication 4), so none is sent. Never charged. */
export async function readCatalogList(endpoints: BEndpoints, reader: BReader): Promise<BCatalogList> {
  const response = await reader.http.request({ method: "GET", url: endpoints.catalogList(), retry: "idempotent" }, reader.signal);
  if (response.status !== 200) throw readErrorFrom(reader.http, response, "the catalog list read");
  const body = response.json();
  const entries = listEntries(body);
  return { entries: entries ?? [], recognized: entries !== null, raw: body };
}

/**
 * `GET /catalog/apis/{api_id}?expand=inputs`: no key needed. Null when B
 * answers 404 (no such operation). Throws when the record has no usable
 * `input_schema`, since nothing could then be checked or sent safely.
 */
export async function readCatalogRecord(endpoints: BEndpoints, apiId: string, reader: BReader): Promise<BCatalogRecord | null> {
  const response = await reader.http.request({ method: "GET", url: endpoints.catalogRecord(apiId), retry: "idempotent" }, reader.signal);
  if (response.status === 404) return null;
  if (response.status !== 200) throw readErrorFrom(reader.http, response, `the catalog read of ${apiId}`);
  const body = response.json();
  if (!isRecord(body) || !isRecord(body.input_schema)) {
    throw invalidAnswer(reader.http, response, `a catalog record of ${apiId} without an input_schema object`);
  }
  let check: InputSchemaCheck;
  try {
    check = compileInputSchema(body.input_schema);
  } catch (error) {
    throw new ProviderError("invalid_catalog_record", `B's input_schema of ${apiId} cannot be compiled as JSON Schema 2020-12: ${(error as Error).message}`, {
      provider: "b",
      retryable: false,
    });
  }
  return { apiId, availability: availabilityOf(body), inputSchema: body.input_schema, check, raw: body };
}

/** What the cache holds for one api_id: its record, or the fact that B has no such operation. */
export type BCachedOperation =
  | { kind: "record"; record: BCatalogRecord; fetchedAt: number }
  | { kind: "missing"; apiId: string; alternatives: string[]; fetchedAt: number };

/** At most this many other api_ids are named when one is not in the catalog. */
const MAX_ALTERNATIVES = 20;

/**
 * The catalog as one adapter knows it: records (with inputs) and the list,
 * each kept `ttlMs` after it was read. spec B Versioning: the catalog is the
 * source of current availability, so nothing is kept forever.
 */
export class BCatalogCache {
  private readonly operations = new Map<string, BCachedOperation>();
  private readonly inFlight = new Map<string, Promise<BCachedOperation>>();
  private list: { value: BCatalogList; fetchedAt: number } | undefined;
  private listInFlight: Promise<BCatalogList> | undefined;

  constructor(
    private readonly endpoints: BEndpoints,
    readonly ttlMs: number,
  ) {}

  /** What was last read for this api_id, however old (validate is pure; prefetch refreshes). */
  cached(apiId: string): BCachedOperation | undefined {
    return this.operations.get(apiId);
  }

  /** Every api_id seen in the list or loaded, sorted. */
  knownApiIds(): string[] {
    const ids = new Set<string>(this.list?.value.entries.map((entry) => entry.apiId) ?? []);
    for (const [apiId, cached] of this.operations) if (cached.kind === "record") ids.add(apiId);
    return [...ids].sort();
  }

  /** Reads the record of `apiId` unless a fresh one is cached; concurrent loads of one api_id share one request. */
  async load(apiId: string, reader: BReader & { clock: Clock }): Promise<BCachedOperation> {
    const cached = this.operations.get(apiId);
    if (cached && reader.clock.now() - cached.fetchedAt < this.ttlMs) return cached;
    const running = this.inFlight.get(apiId);
    if (running) return running;
    const loading = this.fetchOperation(apiId, reader).finally(() => this.inFlight.delete(apiId));
    this.inFlight.set(apiId, loading);
    return loading;
  }

  /** The catalog list, read again once older than the TTL. */
  async listing(reader: BReader & { clock: Clock }): Promise<BCatalogList> {
    if (this.list && reader.clock.now() - this.list.fetchedAt < this.ttlMs) return this.list.value;
    this.listInFlight ??= readCatalogList(this.endpoints, reader)
      .then((value) => {
        this.list = { value, fetchedAt: reader.clock.now() };
        return value;
      })
      .finally(() => {
        this.listInFlight = undefined;
      });
    return this.listInFlight;
  }

  private async fetchOperation(apiId: string, reader: BReader & { clock: Clock }): Promise<BCachedOperation> {
    const record = await readCatalogRecord(this.endpoints, apiId, reader);
    const fetchedAt = reader.clock.now();
    let entry: BCachedOperation;
    if (record) {
      entry = { kind: "record", record, fetchedAt };
    } else {
      const list = await this.listing(reader);
      entry = { kind: "missing", apiId, alternatives: alternativesTo(apiId, list.entries.map((item) => item.apiId)), fetchedAt };
    }
    this.operations.set(apiId, entry);
    return entry;
  }
}

/**
 * Operations to suggest for an api_id B does not have: those of the same
 * model (other functions), or those under it when only a model was given.
 * Matched on the literal api_id prefix, never on words in a name.
 */
function alternativesTo(apiId: string, known: string[]): string[] {
  const parent = apiId.includes("/") ? apiId.slice(0, apiId.lastIndexOf("/") + 1) : null;
  return known.filter((other) => other.startsWith(`${apiId}/`) || (parent !== null && other.startsWith(parent) && !other.slice(parent.length).includes("/"))).slice(0, MAX_ALTERNATIVES);
}
