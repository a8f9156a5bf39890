import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { isDeadOwner, newOwnerName } from "../../src/engine/owner.js";

/** The id of a process that has ended: a child that ran and exited. */
function endedPid(): number {
  const child = spawnSync(process.execPath, ["-e", ""]);
  return child.pid!;
}

describe("lease owners", () => {
  it("an owner name is mg:host:pid:tag, with a random six-hex-digit tag", () => {
    const name = newOwnerName();
    expect(name).toMatch(new RegExp(`^mg:${hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:${process.pid}:[0-9a-f]{6}$`));
    expect(newOwnerName()).not.toBe(name);
  });

  it("this process is alive, whatever its tag", () => {
    expect(isDeadOwner(newOwnerName())).toBe(false);
    expect(isDeadOwner(`mg:${hostname()}:${process.pid}:ffffff`)).toBe(false);
  });

  it("another live process on this host is not dead", () => {
    expect(isDeadOwner(`mg:${hostname()}:${process.ppid}:abc123`)).toBe(false);
  });

  it("a process on this host that has ended is dead, so its leases are taken over at once", () => {
    expect(isDeadOwner(`mg:${hostname()}:${endedPid()}:abc123`)).toBe(true);
  });

  it("an owner on another host, or a name not made by newOwnerName, is never judged dead", () => {
    const pid = endedPid();
    for (const owner of [`mg:another-host-${hostname()}:${pid}:abc123`, `mg:${hostname()}:${pid}:ABC123`, `mg:${hostname()}:${pid}:`, `mg:${hostname()}:${pid}`, `xmg:${hostname()}:${pid}:abc123`, `mg:${hostname()}:${pid}:abc123x`, `mg:${hostname()}:p${pid}:abc123`, "", "engine-1"]) {
      expect(isDeadOwner(owner), owner).toBe(false);
    }
  });

  it("a process that exists but may not be signalled (another user's) is not dead", () => {
    // pid 1 always exists; signalling it fails with EPERM unless running as root, and is alive either way.
    expect(isDeadOwner(`mg:${hostname()}:1:abc123`)).toBe(false);
  });
});
