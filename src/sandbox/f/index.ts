import type { FastifyInstance } from "fastify";
import type { ProviderEmulator, SandboxContext } from "../context.js";
import { countBy, peakConcurrency } from "../emulator-stats.js";
import type { FDeliveryAttempt, FDeliveryFault, FDeliveryPlan } from "./deliveries.js";
import type { FRenderingSpeed } from "./generate-request.js";
import { isReady, type FGenerationPayload, type FReadRecord } from "./generations.js";
import { resolveFOptions, type FDurationRange, type FEmulatorOptions } from "./options.js";
import { registerFRoutes } from "./routes.js";
import { FService, userIdOf } from "./service.js";
import type { FJwk } from "./signing-keys.js";

export type { FDurationRange, FEmulatorOptions } from "./options.js";
export { DEFAULT_F_MODELS } from "./options.js";
export type { FAttemptOutcome, FDeliveryAttempt, FDeliveryFault, FDeliveryPlan, FDeliveryState } from "./deliveries.js";
export type { FRenderingSpeed } from "./generate-request.js";
export { F_RENDERING_SPEEDS } from "./generate-request.js";
export type { FGenerationPayload, FImageItem, FReadRecord } from "./generations.js";
export type { FJwk } from "./signing-keys.js";
export { signDelivery, signedMessage, type FSignedFields } from "./signature.js";
export { addressCategory, checkWebhookUrl, type FHostCategory, type FWebhookCheck } from "./webhook-url.js";

/** What the sandbox knows about one generation, for tests to assert on (times are virtual ms). */
export interface FGenerationView {
  id: string;
  accountId: string;
  model: string;
  status: "pending" | "ready";
  promptKind: "text" | "json";
  prompt: string;
  resolution: string;
  renderingSpeed: FRenderingSpeed;
  seeds: number[];
  /** The form fields as received. */
  fields: Record<string, string>;
  webhookUrl?: string;
  createdAt: number;
  readyAt: number;
  /** The payload once ready. */
  payload?: FGenerationPayload;
  reads: FReadRecord[];
  downloads: { index: number; at: number }[];
  delivery?: FDeliveryPlan;
}

export interface FKeyView {
  kid: string;
  jwk: FJwk;
  current: boolean;
  listed: boolean;
  createdAt: number;
  retiredAt?: number;
}

export interface FEmulator extends ProviderEmulator {
  readonly id: "f";
  generations(): FGenerationView[];
  generation(id: string): FGenerationView | undefined;
  /** Every delivery attempt, in order, with the exact bytes and headers sent and the answer. */
  deliveries(): readonly FDeliveryAttempt[];
  /** Every key, current and retired, and whether the JWKS lists it now. */
  keys(): FKeyView[];
  /** A new signing key. The previous stays listed for `rotatedKeyListedMs`, or leaves the JWKS at once when keepOldListed is false. */
  rotateKey(options?: { keepOldListed?: boolean }): FKeyView;
  /** The deliveries of the next `count` generations that ask for one get this fault, one generation each. */
  injectDeliveryFault(fault: FDeliveryFault, count?: number): void;
  /** The next `count` generations report `is_image_safe: false`. */
  injectUnsafeImages(count?: number): void;
  setRenderMs(range: FDurationRange): void;
  /** X-Img-Webhook-User-Id of this sandbox's account. */
  readonly userId: string;
}

/** Emulator of image service F, under `/f` (client base `{sandbox}/f`). Choices where the spec is silent: README.md here. */
export function createFEmulator(options: FEmulatorOptions = {}): FEmulator {
  const resolved = resolveFOptions(options);
  let service: FService | undefined;
  let clockNow: () => number = () => Date.now();

  const registered = (): FService => {
    if (!service) throw new Error("the F emulator is not registered with a sandbox yet");
    return service;
  };

  const view = (id: string): FGenerationView | undefined => {
    const ready = registered();
    const generation = ready.generations.find(id);
    if (!generation) return undefined;
    const { request } = generation;
    const payload = ready.payload(generation);
    const delivery = ready.deliveries.allPlans().find((plan) => plan.generationId === id);
    return {
      id: generation.id,
      accountId: generation.accountId,
      model: generation.model,
      status: isReady(generation, clockNow()) ? "ready" : "pending",
      promptKind: request.promptKind,
      prompt: request.prompt,
      resolution: request.resolution.text,
      renderingSpeed: request.renderingSpeed,
      seeds: [...request.seeds],
      fields: { ...generation.fields },
      ...(generation.webhookUrl !== undefined ? { webhookUrl: generation.webhookUrl } : {}),
      createdAt: generation.createdAt,
      readyAt: generation.readyAt,
      ...(payload ? { payload } : {}),
      reads: [...generation.reads],
      downloads: [...generation.downloads],
      ...(delivery ? { delivery: { ...delivery } } : {}),
    };
  };

  const keys = (): FKeyView[] => {
    const ready = registered();
    const listed = new Set(ready.keys.jwks().keys.map((key) => key.kid));
    const current = ready.keys.current().kid;
    return ready.keys.all().map((key) => ({
      kid: key.kid,
      jwk: { ...key.jwk },
      current: key.kid === current,
      listed: listed.has(key.kid),
      createdAt: key.createdAt,
      ...(key.retiredAt !== undefined ? { retiredAt: key.retiredAt } : {}),
    }));
  };

  return {
    id: "f",
    userId: userIdOf(resolved.accountId),
    async register(app: FastifyInstance, context: SandboxContext) {
      const ready = new FService(context, resolved);
      service = ready;
      clockNow = () => context.clock.now();
      await app.register(async (scope) => registerFRoutes(scope, ready), { prefix: "/f" });
    },
    async close() {
      await service?.deliveries.close();
    },
    sandboxStats() {
      const now = clockNow();
      const generations = registered().generations.all();
      return {
        tasks: countBy(generations, (generation) => (isReady(generation, now) ? "ready" : "pending")),
        peakConcurrency: peakConcurrency(generations.map((generation) => ({ start: generation.createdAt, end: generation.readyAt }))),
        // F publishes no rate or concurrency limit, and the sandbox enforces none.
        limitRefusals: 0,
      };
    },
    reset: () => registered().reset(),
    generations: () => registered().generations.all().flatMap((generation) => view(generation.id) ?? []),
    generation: view,
    deliveries: () => registered().deliveries.allAttempts(),
    keys,
    rotateKey(rotation = {}) {
      const next = registered().keys.rotate(rotation.keepOldListed ?? true);
      return keys().find((key) => key.kid === next.kid)!;
    },
    injectDeliveryFault: (fault, count = 1) => registered().injectDeliveryFault(fault, count),
    injectUnsafeImages: (count = 1) => registered().injectUnsafeImages(count),
    setRenderMs(range) {
      registered().renderMs = range;
    },
  };
}
