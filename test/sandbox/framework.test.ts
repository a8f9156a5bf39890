import { afterEach, describe, expect, it } from "vitest";
import { pngSize, renderPng } from "../../src/sandbox/media/png.js";
import { startSandbox, type RunningSandbox } from "../../src/sandbox/server.js";

let sandbox: RunningSandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

describe("sandbox framework", () => {
  it("renders a real PNG of the requested size, the same bytes for the same prompt and seed", () => {
    const first = renderPng(96, 64, "a red fox", 7);
    expect(pngSize(first)).toEqual({ width: 96, height: 64 });
    expect(renderPng(96, 64, "a red fox", 7).equals(first)).toBe(true);
    expect(renderPng(96, 64, "a red fox", 8).equals(first)).toBe(false);
  });

  it("listens on loopback only and logs every request", async () => {
    sandbox = await startSandbox({ emulators: [] });
    expect(sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await fetch(`${sandbox.url}/_sandbox/health`);
    expect(response.status).toBe(200);
    expect(sandbox.context.requests.count((r) => r.url === "/_sandbox/health")).toBe(1);
  });

  it("injects a status fault a limited number of times", async () => {
    sandbox = await startSandbox({ emulators: [] });
    sandbox.context.faults.add({ path: /^\/_sandbox\/health$/, fault: { kind: "status", status: 503 }, times: 1 });
    expect((await fetch(`${sandbox.url}/_sandbox/health`)).status).toBe(503);
    expect((await fetch(`${sandbox.url}/_sandbox/health`)).status).toBe(200);
  });

  it("signed URLs stop working after their lifetime in virtual time", async () => {
    sandbox = await startSandbox({ emulators: [], timeScale: 1 });
    const { signedUrls, clock } = sandbox.context;
    const url = new URL(signedUrls.sign("http://x", "/d/results/1.png", 600_000));
    const query = Object.fromEntries(url.searchParams);
    expect(signedUrls.check("/d/results/1.png", query)).toBe("ok");
    expect(signedUrls.check("/d/results/2.png", query)).toBe("bad_signature");
    clock.advance(600_001);
    expect(signedUrls.check("/d/results/1.png", query)).toBe("expired");
  });
});
