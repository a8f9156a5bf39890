import { createHash } from "node:crypto";
import { once } from "node:events";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ScaledClock } from "../../src/core/clock.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { pngSize, renderPng, renderPngAsync } from "../../src/sandbox/media/png.js";
import { SignedUrls } from "../../src/sandbox/signed-url.js";

let sandbox: Sandbox | undefined;
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

describe("sandbox framework", () => {
  it("renders a real PNG of the requested size, the same bytes for the same prompt and seed", () => {
    const first = renderPng(96, 64, "a red fox", 7);
    expect(pngSize(first)).toEqual({ width: 96, height: 64 });
    expect(renderPng(96, 64, "a red fox", 7).equals(first)).toBe(true);
    expect(renderPng(96, 64, "a red fox", 8).equals(first)).toBe(false);
  });

  it("draws the same images as earlier versions (a user's fixtures may hold their hashes), and the result hosts' off-thread render gives the same bytes", async () => {
    // sha256 of the bytes the first implementation drew (every pixel tested against every disc), kept when its drawing
    // was made cheaper: a disc is drawn over its span only, the gradient computed once per diagonal.
    const earlier: Array<[number, number, string, number, string]> = [
      [96, 64, "a red fox", 7, "cdcdb3d3ab05337de0853e67749c1203818f81d7f19fda3a58b95031c23c583a"],
      [256, 256, "scale image 1", 1, "b7cbfff7ed87925379a06d74c6c4fbd0d6daf83bf49abf62a3c8fc9374eef026"],
      [1, 1, "x", 1, "d53c8e93fe7aa58e41daee1b6009e136c3b09ecd3387afefb5ca120a3c0c3bd1"],
    ];
    for (const [width, height, prompt, seed, sha256] of earlier) {
      expect(createHash("sha256").update(renderPng(width, height, prompt, seed)).digest("hex"), `${width}x${height}`).toBe(sha256);
    }
    for (const [width, height] of [[96, 64], [1, 1], [7, 300], [513, 17]] as const) {
      expect((await renderPngAsync(width, height, "async", 3)).equals(renderPng(width, height, "async", 3)), `${width}x${height}`).toBe(true);
    }
  });

  it("listens on loopback only and logs every request", async () => {
    sandbox = await startSandbox({ providers: ["d"] });
    expect(sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await fetch(`${sandbox.url}/_sandbox/health`);
    expect(response.status).toBe(200);
    expect(sandbox.requests().filter((r) => r.url === "/_sandbox/health")).toHaveLength(1);
  });

  it("closing ends a connection that was opened but never sent a request (a client that gave up while connecting), instead of waiting a minute for it", async () => {
    sandbox = await startSandbox({ providers: ["d"] });
    const silent = connect(sandbox.port, "127.0.0.1");
    await once(silent, "connect");
    const ended = once(silent, "close");
    await sandbox.stop();
    sandbox = undefined;
    await ended;
    expect(silent.destroyed).toBe(true);
  });

  it("injects a status fault a limited number of times", async () => {
    sandbox = await startSandbox({ providers: ["d"] });
    sandbox.injectFault({ path: /^\/_sandbox\/health$/, fault: { kind: "status", status: 503 }, times: 1 });
    expect((await fetch(`${sandbox.url}/_sandbox/health`)).status).toBe(503);
    expect((await fetch(`${sandbox.url}/_sandbox/health`)).status).toBe(200);
  });

  it("the request log keeps each JSON body as received and names the fault injected, so a test can tell which job a submit was for", async () => {
    sandbox = await startSandbox({ providers: ["d"] });
    sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "drop" }, times: 1 });
    sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "drop_after_handling" }, times: 1 });
    const submit = (prompt: string) =>
      fetch(`${sandbox!.url}/d/v1/gen-2-pro`, { method: "POST", headers: { "x-key": "sandbox-d-key", "content-type": "application/json" }, body: JSON.stringify({ prompt }) });
    await expect(submit("dropped")).rejects.toThrow();
    await expect(submit("handled, then cut")).rejects.toThrow();
    expect((await submit("answered")).status).toBe(200);
    const logged = sandbox.requests().filter((entry) => entry.method === "POST");
    expect(logged.map((entry) => [entry.fault ?? null, entry.statusCode ?? null, entry.body?.prompt ?? null])).toEqual([
      ["drop", null, null],
      ["drop_after_handling", 200, "handled, then cut"],
      [null, 200, "answered"],
    ]);
  });

  it("a held answer: the request is handled at once (the job exists), its answer is released later and logged then", async () => {
    sandbox = await startSandbox({ providers: ["d"] });
    const d = sandbox.emulators.d!;
    sandbox.injectFault({ provider: "d", method: "POST", fault: { kind: "delay_answer", ms: 300 }, times: 1 });
    const answer = fetch(`${sandbox.url}/d/v1/gen-2-pro`, { method: "POST", headers: { "x-key": "sandbox-d-key", "content-type": "application/json" }, body: JSON.stringify({ prompt: "held" }) });
    for (let tries = 0; tries < 100 && d.jobs.length === 0; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    const [entry] = sandbox.requests().filter((logged) => logged.method === "POST");
    expect([d.jobs.length, entry!.fault, entry!.statusCode]).toEqual([1, "delay_answer", undefined]);
    expect((await answer).status).toBe(200);
    expect(entry!.statusCode).toBe(200);
  });

  it("a held request whose client gives up is handled at once, not after the whole hold", async () => {
    sandbox = await startSandbox({ providers: ["d"] });
    sandbox.injectFault({ path: /^\/_sandbox\/health$/, fault: { kind: "delay", ms: 60_000 }, times: 1 });
    await expect(fetch(`${sandbox.url}/_sandbox/health`, { signal: AbortSignal.timeout(200) })).rejects.toThrow();
    const [entry] = sandbox.requests().filter((logged) => logged.url === "/_sandbox/health");
    for (let tries = 0; tries < 200 && entry!.statusCode === undefined; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect([entry!.fault, entry!.statusCode]).toEqual(["delay", 200]);
  });

  it("signed URLs stop working after their lifetime in virtual time", () => {
    const clock = new ScaledClock(1);
    const signedUrls = new SignedUrls(clock);
    const url = new URL(signedUrls.sign("http://x", "/d/results/1.png", 600_000));
    const query = Object.fromEntries(url.searchParams);
    expect(signedUrls.check("/d/results/1.png", query)).toBe("ok");
    expect(signedUrls.check("/d/results/2.png", query)).toBe("bad_signature");
    clock.advance(600_001);
    expect(signedUrls.check("/d/results/1.png", query)).toBe("expired");
  });
});
