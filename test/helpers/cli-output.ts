import type { ChildProcess } from "node:child_process";

/**
 * Resolves with the first match of `pattern` in what a running CLI process
 * writes (stdout and stderr together); rejects when it exits first or after
 * `timeoutMs`. Attach it right after starting the process.
 */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  let seen = "";
  return new Promise((resolve, reject) => {
    const finish = (outcome: () => void) => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("close", onClose);
      outcome();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const match = seen.match(pattern);
      if (match) finish(() => resolve(match));
    };
    const onClose = () => finish(() => reject(new Error(`the process ended before writing ${pattern}:\n${seen}`)));
    const timer = setTimeout(() => finish(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${seen}`))), timeoutMs);
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("close", onClose);
  });
}
