import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

/** An engine's lease-owner name: host, process id and a random tag (`mg:host:1234:ab12cd`). */
export function newOwnerName(): string {
  return `mg:${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

/**
 * True when `owner` names an engine process on this host that no longer
 * exists, so its leases can be taken over at once instead of waiting for
 * them to expire (after a kill -9 the next start resumes immediately).
 */
export function isDeadOwner(owner: string): boolean {
  const match = owner.match(/^mg:(.+):(\d+):[0-9a-f]+$/);
  if (!match || match[1] !== hostname()) return false;
  const pid = Number(match[2]);
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
