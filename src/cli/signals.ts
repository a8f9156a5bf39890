/**
 * The signals that ask a command to stop: Ctrl-C (SIGINT), a service manager
 * (SIGTERM), and a closed terminal or SSH session (SIGHUP). Node's default
 * for SIGHUP is to exit at once, which would turn every submit in flight into
 * an unknown submission; each is handled like Ctrl-C instead.
 */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const satisfies readonly NodeJS.Signals[];

/** Calls `handler` on each stop signal until the returned function is called. */
export function onStopSignals(handler: (signal: NodeJS.Signals) => void): () => void {
  for (const signal of STOP_SIGNALS) process.on(signal, handler);
  return () => {
    for (const signal of STOP_SIGNALS) process.off(signal, handler);
  };
}

/**
 * Writes to stderr, if it is still there: after SIGHUP the terminal is gone
 * and a write fails (EIO, EPIPE). The message is lost, never the job.
 */
export function tellUser(text: string): void {
  try {
    process.stderr.write(text);
  } catch {
    // the terminal closed
  }
}

/**
 * For long-running commands (`worker`, `serve`): `first` on the first stop
 * signal (stop gracefully), `again` on any later one (exit at once).
 */
export function onStopRequests(first: (signal: NodeJS.Signals) => void, again: () => void): void {
  let received = 0;
  onStopSignals((signal) => {
    received++;
    if (received === 1) first(signal);
    else again();
  });
}
