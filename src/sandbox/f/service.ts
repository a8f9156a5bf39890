import { randomBytes } from "node:crypto";
import type { SandboxContext } from "../context.js";
import { FDeliveries, type FDeliveryFault } from "./deliveries.js";
import { FApiError, invalidRequest } from "./errors.js";
import { parseGenerateRequest } from "./generate-request.js";
import { FGenerationStore, isReady, type FGenerationPayload, type FGenerationRecord } from "./generations.js";
import { drawDuration, type FDurationRange, type ResolvedFOptions } from "./options.js";
import { FResults } from "./results.js";
import { FSigningKeys } from "./signing-keys.js";
import { checkWebhookUrl, type FWebhookCheck } from "./webhook-url.js";

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Everything service F does, independent of HTTP routing. */
export class FService {
  readonly generations = new FGenerationStore();
  readonly results: FResults;
  readonly keys: FSigningKeys;
  deliveries: FDeliveries;
  renderMs: FDurationRange;
  private injectedFaults: FDeliveryFault[];
  private injectedUnsafe = 0;

  constructor(
    private readonly context: SandboxContext,
    readonly options: ResolvedFOptions,
  ) {
    this.results = new FResults(context, this.generations, options.imageUrlTtlMs);
    this.keys = new FSigningKeys(context.clock, options.rotatedKeyListedMs);
    this.renderMs = options.renderMs;
    this.injectedFaults = [...options.deliveryFaults];
    this.deliveries = this.newDeliveries();
  }

  /** Forgets every generation, delivery and injected fault; the signing keys stay (a receiver's cached JWKS stays right). */
  async reset(): Promise<void> {
    await this.deliveries.close();
    this.generations.clear();
    this.deliveries = this.newDeliveries();
    this.renderMs = this.options.renderMs;
    this.injectedFaults = [...this.options.deliveryFaults];
    this.injectedUnsafe = 0;
  }

  private newDeliveries(): FDeliveries {
    return new FDeliveries({
      clock: this.context.clock,
      keys: this.keys,
      generations: this.generations,
      payloadBytes: (generation) => this.results.payloadBytes(generation),
      userId: (generation) => userIdOf(generation.accountId),
      checkUrl: (url) => this.checkWebhookUrl(url),
      settings: this.options,
    });
  }

  /** spec F Authentication: `Api-Key: <API_KEY>` on every API call; missing or wrong is 401. Returns the account. */
  authenticate(headers: Record<string, string | string[] | undefined>): string {
    const key = single(headers["api-key"]);
    if (key === undefined || key !== this.options.apiKey) throw new FApiError(401, "unauthorized", "missing or invalid Api-Key header");
    return this.options.accountId;
  }

  checkWebhookUrl(url: string): Promise<FWebhookCheck> {
    return checkWebhookUrl(url, {
      allowLoopback: this.options.allowLoopbackWebhooks,
      ...(this.options.resolveHost ? { resolve: this.options.resolveHost } : {}),
    });
  }

  /** spec F Versioning: the model slug carries the model version; an unknown slug is no such endpoint (404). */
  requireModel(model: string): void {
    if (!this.options.models.includes(model)) throw new FApiError(404, "unknown_model", `no model ${model}`);
  }

  async create(
    accountId: string,
    model: string,
    webhookUrl: string | string[] | undefined,
    fields: ReadonlyMap<string, string>,
  ): Promise<{ generation_id: string }> {
    // spec F request: webhook_url in the query, https only, no private, loopback or metadata host.
    // Leaving it out is accepted (the result can be polled by id): the sandbox's choice.
    if (Array.isArray(webhookUrl)) throw invalidRequest("webhook_url", "give it once");
    if (webhookUrl !== undefined) {
      const check = await this.checkWebhookUrl(webhookUrl);
      if (!check.ok) throw invalidRequest("webhook_url", check.reason);
    }
    const request = parseGenerateRequest(fields, {
      flashRefused: this.options.flashRefusedModels.includes(model),
      random: this.context.random,
    });
    const createdAt = this.context.clock.now();
    const generation: FGenerationRecord = {
      // spec F: the generation id is URL-safe base64.
      id: randomBytes(18).toString("base64url"),
      accountId,
      model,
      request,
      fields: Object.fromEntries(fields),
      ...(webhookUrl !== undefined ? { webhookUrl } : {}),
      createdAt,
      readyAt: createdAt + drawDuration(this.renderMs, this.context.random),
      imageSafe: this.injectedUnsafe === 0,
      reads: [],
      downloads: [],
    };
    if (this.injectedUnsafe > 0) this.injectedUnsafe -= 1;
    this.generations.add(generation);
    this.deliveries.track(generation, webhookUrl !== undefined ? this.injectedFaults.shift() : undefined);
    return { generation_id: generation.id };
  }

  /** spec F generation status: `pending` until ready, then the delivery payload (the same bytes a delivery carries). */
  read(accountId: string, id: string): { status: "pending" } | Buffer {
    const generation = this.generations.find(id);
    if (!generation || generation.accountId !== accountId) throw new FApiError(404, "not_found", `no generation ${id}`);
    const now = this.context.clock.now();
    const ready = isReady(generation, now);
    generation.reads.push({ at: now, status: ready ? "ready" : "pending" });
    return ready ? this.results.payloadBytes(generation) : { status: "pending" };
  }

  payload(generation: FGenerationRecord): FGenerationPayload | undefined {
    if (!isReady(generation, this.context.clock.now())) return undefined;
    return JSON.parse(this.results.payloadBytes(generation).toString("utf8")) as FGenerationPayload;
  }

  /** Faults for the deliveries of the next generations that ask for one, one each, in order. */
  injectDeliveryFault(fault: FDeliveryFault, count: number): void {
    for (let i = 0; i < count; i++) this.injectedFaults.push(fault);
  }

  injectUnsafeImages(count: number): void {
    this.injectedUnsafe += count;
  }
}

/** spec F Events 2: X-Img-Webhook-User-Id is the base64 id of the requesting account. */
export function userIdOf(accountId: string): string {
  return Buffer.from(accountId, "utf8").toString("base64");
}
