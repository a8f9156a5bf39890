import type { Clock } from "../core/clock.js";
import type { JobScope, Notification, Store } from "../store/store.js";
import type { EngineLogger } from "./logger.js";
import type { Naps } from "./naps.js";
import { deliverNotification, NOTIFY_LEASE_MS, type NotifierOptions, type NotifyContext } from "./notify.js";

/** Notifications due are looked for at most this often while the loop is busy (and after each nap), and so many are sent at once. */
const NOTIFICATION_READ_EVERY_MS = 500;
const MAX_DELIVERIES = 32;

/** What an engine's deliveries work with. */
export interface DeliveryParts {
  store: Store;
  clock: Clock;
  log: EngineLogger;
  /** How to deliver (see `EngineOptions.notifications`); none, and this engine delivers nothing. */
  notifications: NotifierOptions | undefined;
  allowPrivateUrls: boolean;
  /** Aborted when the engine stops or gives up: an attempt failing then is not logged. */
  signal: AbortSignal;
  naps: Naps;
  scope(): JobScope | null;
}

/**
 * The notifications jobs owe, as this engine delivers them: claimed from the
 * store a few at a time, each attempt in the background, and read again when
 * one ends if more were due than there was room for.
 */
export class Deliveries {
  private readonly notifyContext: NotifyContext | null;
  /** Notification attempts in flight; and whether the last read found more due than there was room for. */
  private readonly attempts = new Set<Promise<void>>();
  private notificationsLeft = false;
  private lastReadAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly parts: DeliveryParts) {
    this.notifyContext = parts.notifications
      ? { store: parts.store, clock: parts.clock, log: parts.log, notifier: parts.notifications, allowPrivateUrls: parts.allowPrivateUrls, signal: parts.signal }
      : null;
  }

  /** Notification attempts in flight. */
  get size(): number {
    return this.attempts.size;
  }

  all(): Array<Promise<void>> {
    return [...this.attempts];
  }

  /**
   * Whether this engine delivers notifications: it was given how. A command's engine delivers its own jobs' only, and
   * only under MEDIAGATE_NOTIFY_URL (a command's jobs have no notify_url of their own: only the API takes one).
   */
  delivers(): boolean {
    return this.notifyContext !== null && (this.parts.scope() === null || Boolean(this.notifyContext.notifier.defaultUrl));
  }

  /** The next tick looks for notifications due, however soon (a nap ended, or an attempt made room for more). */
  readSoon(): void {
    this.lastReadAt = Number.NEGATIVE_INFINITY;
  }

  /** Whether the tick at `now` looks for notifications due: this engine delivers, has room, and has not looked lately. */
  readDue(now: number): boolean {
    return this.delivers() && now - this.lastReadAt >= NOTIFICATION_READ_EVERY_MS && this.attempts.size < MAX_DELIVERIES;
  }

  /** Claims the notifications due at `now`, as many as there is room for, and starts an attempt at each. */
  async claimDue(now: number): Promise<void> {
    this.lastReadAt = now;
    const room = MAX_DELIVERIES - this.attempts.size;
    const due = await this.parts.store.claimDueNotifications(now, room, NOTIFY_LEASE_MS, this.parts.scope());
    if (due.length > 0) this.parts.naps.othersMoved();
    this.notificationsLeft = due.length === room;
    for (const notification of due) this.deliver(notification);
  }

  /** One attempt at a claimed notification, in the background; a read follows its end when more were due than room. */
  private deliver(notification: Notification): void {
    const task: Promise<void> = deliverNotification(this.notifyContext!, notification)
      .catch((error: unknown) => {
        // Unrecorded (the store failed): the claim lapses and the attempt is made again after it.
        if (this.parts.signal.aborted) return;
        this.parts.log.error({ jobId: notification.jobId, notification: notification.id, err: error instanceof Error ? error.message : String(error) }, "notification attempt failed unexpectedly");
      })
      .finally(() => {
        this.attempts.delete(task);
        this.parts.naps.othersMoved();
        if (this.notificationsLeft) {
          this.notificationsLeft = false;
          this.readSoon();
          this.parts.naps.wakeLoop();
        }
      });
    this.attempts.add(task);
  }
}
