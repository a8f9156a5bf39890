import type { FastifyReply } from "fastify";
import type { Job } from "../../core/job.js";
import type { EngineLogger } from "../../engine/logger.js";
import type { Caller } from "../../app/caller.js";
import type { JobFeed } from "./feed.js";

/** A comment line this often keeps proxies and the browser from taking a quiet stream for a dead one. */
const HEARTBEAT_MS = 15_000;
/** The browser reconnects after this long when the stream ends (a restart), sending the last event's id. */
const RETRY_MS = 3_000;
/** Panels (providers, spend) are drawn again at most this often, after a change. */
const PANELS_EVERY_MS = 2_000;
/** A view follows at most this many jobs: its rows, and the newest jobs added since. */
const FOLLOWED_MAX = 200;
/** A client that has not read this much of its stream is too slow to follow: it is let go (it reconnects). */
const UNREAD_MAX_BYTES = 1024 * 1024;

export interface EventMessage {
  event: string;
  data: unknown;
}

export interface StreamOptions {
  feed: JobFeed;
  log: EngineLogger;
  caller: Caller;
  /** The jobs the view shows. */
  ids: readonly string[];
  /** New jobs join the view when `shows` them (the table's first page). */
  wantsNew: boolean;
  shows(job: Job): boolean;
  /** What the view missed since: the time its page was read, or the last event id of a reconnecting stream. */
  since: number;
  /** The message for a job's change (a row, the job page's parts); null sends nothing. */
  render(job: Job): Promise<EventMessage | null>;
  /** Panels to draw again after changes (the dashboard's providers and spend; a batch page's counts). */
  panels?: () => Promise<Record<string, string>>;
  /** A message drawn again every `everyMs` whatever changes (a job page's queue position); null sends nothing. */
  tick?: { everyMs: number; message(): Promise<EventMessage | null> };
  /** A batch's page: any change of one of its jobs draws its panels again. */
  batchId?: string;
}

/** The open streams, ended when the server closes (a stream never ends by itself, and would hold the close). */
export class EventStreams {
  private readonly open = new Set<() => void>();

  get size(): number {
    return this.open.size;
  }

  /**
   * Answers the request with a stream of server-sent events for one view:
   * each change of a job it follows (in order, never an older state after a
   * newer one), panels after changes, and a heartbeat.
   */
  start(reply: FastifyReply, options: StreamOptions): void {
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    const followed = new Set(options.ids);
    const sent = new Map<string, number>();
    let chain = Promise.resolve();
    let panelsTimer: NodeJS.Timeout | null = null;
    let ended = false;

    const write = (text: string) => {
      if (ended) return;
      if (response.writableLength > UNREAD_MAX_BYTES) return end();
      response.write(text);
    };
    const send = (message: EventMessage) => write(`id: ${Date.now()}\nevent: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`);

    const subscriber = {
      caller: options.caller,
      ids: followed,
      wantsNew: options.wantsNew,
      shows: options.shows,
      deliver(job: Job) {
        if (ended || (sent.get(job.id) ?? -1) >= job.updatedAt) return;
        sent.set(job.id, job.updatedAt);
        if (!followed.has(job.id)) {
          followed.add(job.id);
          // The oldest followed job stops being followed (a Set keeps insertion order).
          if (followed.size > FOLLOWED_MAX) {
            const oldest = followed.values().next().value!;
            followed.delete(oldest);
            sent.delete(oldest);
          }
        }
        chain = chain
          .then(async () => {
            const message = await options.render(job);
            if (message) send(message);
          })
          .catch((error) => options.log.warn({ err: error instanceof Error ? error.message : String(error), job: job.id }, "dashboard: could not draw a job change"));
        drawPanelsSoon();
      },
      ...(options.batchId !== undefined ? { batchId: options.batchId, batchChanged: () => drawPanelsSoon() } : {}),
    };

    function drawPanelsSoon(): void {
      if (!options.panels || panelsTimer) return;
      panelsTimer = setTimeout(() => {
        chain = chain
          .then(async () => {
            panelsTimer = null;
            if (!ended) send({ event: "panels", data: await options.panels!() });
          })
          .catch((error) => options.log.warn({ err: error instanceof Error ? error.message : String(error) }, "dashboard: could not draw the panels"));
      }, PANELS_EVERY_MS);
    }

    const heartbeat = setInterval(() => write(": heartbeat\n\n"), HEARTBEAT_MS);
    const tick = options.tick;
    const ticker = tick
      ? setInterval(() => {
          chain = chain
            .then(async () => {
              const message = ended ? null : await tick.message();
              if (message) send(message);
            })
            .catch((error) => options.log.warn({ err: error instanceof Error ? error.message : String(error) }, "dashboard: could not draw a view's timed part"));
        }, tick.everyMs)
      : null;
    const unsubscribe = options.feed.subscribe(subscriber);
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      if (ticker) clearInterval(ticker);
      if (panelsTimer) clearTimeout(panelsTimer);
      unsubscribe();
      this.open.delete(end);
      response.end();
    };
    this.open.add(end);
    // The response closes when the client goes away (it never finishes by itself).
    response.on("close", end);
    response.on("error", end);

    write(`retry: ${RETRY_MS}\n\n`);
    options.feed.catchUp(subscriber, options.since).catch((error) => options.log.warn({ err: error instanceof Error ? error.message : String(error) }, "dashboard: could not read what a view missed"));
  }

  /** Ends every stream (the server is closing). */
  closeAll(): void {
    for (const end of [...this.open]) end();
  }
}
