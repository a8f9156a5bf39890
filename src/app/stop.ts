/** Default of `--stop-timeout`: inside the 30 s that container platforms give before SIGKILL. */
export const DEFAULT_STOP_TIMEOUT_S = 20;

export type StopOutcome = { kind: "stopped" } | { kind: "failed"; message: string } | { kind: "timed_out" };

/**
 * Runs `stop` (the engine's stop and the store's close) for at most
 * `timeoutMs`. While the store is unreachable, a stop can wait for it
 * (submits recording their answer) or fail (releasing leases): neither may
 * keep a process that was told to stop alive, or crash it. What could not be
 * done is safe to leave: leases expire and another engine resumes the jobs.
 */
export async function stopWithin(stop: () => Promise<void>, timeoutMs: number): Promise<StopOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<StopOutcome>((resolve) => {
    timer = setTimeout(() => resolve({ kind: "timed_out" }), timeoutMs);
  });
  const stopped = stop().then(
    (): StopOutcome => ({ kind: "stopped" }),
    (error: unknown): StopOutcome => ({ kind: "failed", message: error instanceof Error ? error.message : String(error) }),
  );
  try {
    return await Promise.race([stopped, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
