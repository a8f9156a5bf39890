import { randomBytes } from "node:crypto";
import pg from "pg";
import { fullJitterBackoffMs } from "../core/backoff.js";

/**
 * Tells the engines of other processes sharing a store that there is work
 * for them (jobs queued, a webhook for a job they own), so an idle worker
 * starts it at once instead of at its next look at the store.
 */
export interface WorkSignals {
  /** Calls `listener` whenever another store object on the same database announces work. Returns the unsubscriber. */
  subscribe(listener: () => void): () => void;
  /** Where work is announced (`pg_notify(channel, sender)`, sent at the commit of the transaction that made it). */
  readonly channel: string;
  /** This store object's own mark, so that it does not wake itself. */
  readonly sender: string;
  close(): Promise<void>;
}

/** How long closing waits for the listening connection to end before cutting it. */
const CLOSE_WAIT_MS = 1_000;
/** The longest wait before listening again after the connection was lost. */
const RELISTEN_CAP_MS = 10_000;

/**
 * PostgreSQL's LISTEN/NOTIFY on one dedicated connection, opened when the
 * first engine subscribes. The channel is per schema (stores in different
 * schemas share nothing). A lost connection is opened again with backoff,
 * and the listeners are called once it is back: work announced meanwhile
 * was not heard.
 */
export function postgresWorkSignals(connectionString: string, schema: string | undefined, connectTimeoutMs: number): WorkSignals {
  const channel = `mediagate_work${schema ? `_${schema}` : ""}`;
  const sender = randomBytes(8).toString("hex");
  const listeners = new Set<() => void>();
  let client: pg.Client | null = null;
  let closed = false;
  let failures = 0;
  let retry: NodeJS.Timeout | null = null;

  const notifyAll = () => {
    for (const listener of [...listeners]) listener();
  };
  const listen = async (): Promise<void> => {
    if (closed || client || listeners.size === 0) return;
    const connection = new pg.Client({ connectionString, connectionTimeoutMillis: connectTimeoutMs, keepAlive: true });
    client = connection;
    const lost = () => {
      if (client !== connection) return;
      client = null;
      connection.end().catch(() => undefined);
      if (closed) return;
      failures++;
      retry = setTimeout(() => {
        retry = null;
        void listen();
      }, fullJitterBackoffMs(failures, { baseMs: 200, capMs: RELISTEN_CAP_MS }));
      retry.unref();
    };
    connection.on("error", lost);
    connection.on("end", lost);
    connection.on("notification", (message) => {
      if (message.channel === channel && message.payload !== sender) notifyAll();
    });
    try {
      await connection.connect();
      await connection.query(`LISTEN ${channel}`);
      if (failures > 0) notifyAll();
      failures = 0;
    } catch {
      lost();
    }
  };

  return {
    channel,
    sender,
    subscribe(listener) {
      listeners.add(listener);
      void listen();
      return () => {
        listeners.delete(listener);
      };
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const connection = client;
      client = null;
      if (!connection) return;
      // Bounded: a connection still being opened (a slow or vanished server) must not hold the store's close.
      let timer: NodeJS.Timeout | undefined;
      const ended = await Promise.race([
        connection.end().then(() => true, () => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), CLOSE_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
      if (!ended) (connection as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    },
  };
}
