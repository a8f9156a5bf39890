import type { FGenerateRequest } from "./generate-request.js";

/** spec F delivery body: one item of `data`. */
export interface FImageItem {
  url: string;
  prompt: string;
  resolution: string;
  seed: number;
  is_image_safe: boolean;
}

/**
 * spec F delivery body, also the read payload once ready. `created` is an ISO
 * 8601 UTC timestamp of readiness (its format is not shown). The webhook page
 * names the correlation field `generation_id`, the endpoint page `request_id`;
 * the sandbox carries `generation_id` only, and the delivery header is the
 * reference.
 */
export interface FGenerationPayload {
  created: string;
  data: FImageItem[];
  generation_id: string;
}

export interface FReadRecord {
  /** Virtual ms. */
  at: number;
  status: "pending" | "ready";
}

export interface FGenerationRecord {
  /** spec F: URL-safe base64. */
  id: string;
  accountId: string;
  model: string;
  request: FGenerateRequest;
  /** The form fields as received (file parts as UTF-8 text). */
  fields: Record<string, string>;
  webhookUrl?: string;
  /** Virtual ms. */
  createdAt: number;
  readyAt: number;
  imageSafe: boolean;
  /** The payload's exact bytes, made once at first need after readiness: reads and deliveries carry the same bytes. */
  payloadBytes?: Buffer;
  reads: FReadRecord[];
  downloads: { index: number; at: number }[];
}

export function isReady(generation: FGenerationRecord, now: number): boolean {
  return now >= generation.readyAt;
}

export class FGenerationStore {
  private readonly byId = new Map<string, FGenerationRecord>();

  add(generation: FGenerationRecord): void {
    this.byId.set(generation.id, generation);
  }

  find(id: string): FGenerationRecord | undefined {
    return this.byId.get(id);
  }

  all(): FGenerationRecord[] {
    return [...this.byId.values()];
  }

  clear(): void {
    this.byId.clear();
  }
}
