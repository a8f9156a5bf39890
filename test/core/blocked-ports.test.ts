import { describe, expect, it } from "vitest";
import { isBlockedPort } from "../../src/core/blocked-ports.js";

/** The Fetch standard's bad ports (https://fetch.spec.whatwg.org/#port-blocking) that fetch refuses over http(s). */
const FETCH_BAD_PORTS = [
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135,
  137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720,
  1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
];

describe("ports fetch never connects to", () => {
  it("every bad port of the Fetch standard is blocked, over http and https", () => {
    for (const port of FETCH_BAD_PORTS) {
      expect(isBlockedPort(new URL(`http://127.0.0.1:${port}/`)), `http port ${port}`).toBe(true);
      expect(isBlockedPort(new URL(`https://provider.example:${port}/v1`)), `https port ${port}`).toBe(true);
    }
  });

  it("Node's own fetch refuses every one of them without connecting, so a job sent there is provably not sent", async () => {
    const causes = await Promise.all(
      FETCH_BAD_PORTS.map((port) =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => "connected",
          (error: Error) => (error.cause as Error | undefined)?.message,
        ),
      ),
    );
    expect(new Set(causes)).toEqual(new Set(["bad port"]));
  });

  it("ordinary ports, and the default port (written as none), are not blocked", () => {
    for (const address of ["http://127.0.0.1:8080/", "https://api.provider.example/", "http://127.0.0.1/", "http://h:2/", "http://h:24/", "http://h:5999/", "http://h:6001/", "https://h:10081/", "http://h:65535/"]) {
      expect(isBlockedPort(new URL(address)), address).toBe(false);
    }
  });

  it("a blocked port number on a scheme other than http(s) is not fetch's concern", () => {
    expect(isBlockedPort(new URL("ftp://files.example:21/"))).toBe(false);
    expect(isBlockedPort(new URL("ws://127.0.0.1:6000/"))).toBe(false);
    expect(isBlockedPort(new URL("postgres://db:25/jobs"))).toBe(false);
  });
});
