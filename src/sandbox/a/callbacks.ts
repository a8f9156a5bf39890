import type { Clock } from "../../core/clock.js";
import type { ATaskObject } from "./task-object.js";
import { isTerminal, statusAt, type ATaskRecord, type ATaskStore } from "./tasks.js";

/**
 * spec A Events: `callback_url` can replace polling; payload, signature and
 * retries are not shown. The sandbox POSTs the task object (the same JSON a
 * read returns) once, unsigned, with `Content-Type: application/json`, when
 * the task reaches any status other than queued or running (cancelled
 * included); a failed or non-2xx delivery is recorded and not retried.
 * It only ever calls loopback addresses: any other callback URL is accepted
 * but never called (recorded as "skipped"), so the sandbox makes no outside
 * requests.
 */
export interface ACallbackDelivery {
  taskId: string;
  url: string;
  state: "pending" | "sending" | "sent" | "failed" | "skipped";
  /** The status carried by the payload. */
  taskStatus?: string;
  /** Virtual time of the attempt. */
  at?: number;
  statusCode?: number;
  error?: string;
}

/** Status is computed lazily, so a real-time sweep notices completions, clock.advance() jumps included. */
const SWEEP_INTERVAL_MS = 20;
const DELIVERY_TIMEOUT_MS = 5_000;

function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export class ACallbacks {
  private readonly deliveries: ACallbackDelivery[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly tasks: ATaskStore,
    private readonly clock: Clock,
    private readonly render: (task: ATaskRecord) => ATaskObject,
  ) {}

  track(task: ATaskRecord): void {
    const url = task.request.callbackUrl;
    if (url === undefined) return;
    if (!isLoopback(url)) {
      this.deliveries.push({ taskId: task.id, url, state: "skipped", error: "not a loopback address" });
      return;
    }
    this.deliveries.push({ taskId: task.id, url, state: "pending" });
    this.timer ??= setInterval(() => this.sweep(), SWEEP_INTERVAL_MS).unref();
  }

  all(): readonly ACallbackDelivery[] {
    return this.deliveries;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  private sweep(): void {
    const now = this.clock.now();
    const pending = this.deliveries.filter((delivery) => delivery.state === "pending");
    for (const delivery of pending) {
      const task = this.tasks.find(delivery.taskId);
      if (!task) {
        delivery.state = "failed";
        delivery.error = "the task no longer exists";
      } else if (isTerminal(statusAt(task, now))) {
        const sending = this.send(delivery, this.render(task)).finally(() => this.inFlight.delete(sending));
        this.inFlight.add(sending);
      }
    }
    if (pending.length === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async send(delivery: ACallbackDelivery, payload: ATaskObject): Promise<void> {
    delivery.state = "sending";
    delivery.taskStatus = payload.status;
    delivery.at = this.clock.now();
    try {
      const response = await fetch(delivery.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      await response.arrayBuffer();
      delivery.statusCode = response.status;
      delivery.state = response.ok ? "sent" : "failed";
    } catch (error) {
      delivery.state = "failed";
      delivery.error = error instanceof Error ? error.message : String(error);
    }
  }
}
