import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

describe("mediagate models", () => {
  it("lists each provider's models (or how they are named) and what is missing to configure it, with no network", async () => {
    const result = await runCli(["models", "--json"], { env: { MEDIAGATE_D_BASE_URL: "http://127.0.0.1:65530/d", MEDIAGATE_D_API_KEY: "k-not-sent" } });
    expect(result.code, result.stderr).toBe(0);
    const rows = result.stdout.trim().split("\n").map((line) => JSON.parse(line) as { provider: string; models: string[]; naming: string | null; configured: boolean; missing: string[] });
    expect(rows.map((row) => row.provider)).toEqual(["a", "b", "c", "d", "e", "f"]);
    const d = rows.find((row) => row.provider === "d")!;
    expect(d.configured).toBe(true);
    expect(d.models).toContain("gen-2-pro");
    const e = rows.find((row) => row.provider === "e")!;
    expect(e.configured).toBe(false);
    expect(e.missing).toContain("MEDIAGATE_E_CLIENT_SECRET");
    // Providers whose spec publishes no list say how their identifiers are formed instead of printing nothing.
    for (const row of rows) expect(row.models.length > 0 || (row.naming ?? "").length > 0).toBe(true);
  });

  it("an unknown --provider is refused naming the flag (exit 2)", async () => {
    const result = await runCli(["models", "--provider", "z"], { env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--provider: unknown provider "z" \(allowed: a, b, c, d, e, f\)/);
  });
});

describe("mediagate models --task", () => {
  it("lists every target of a common request of that task, with what it honours and refuses and its price basis, with no network", async () => {
    const image = await runCli(["models", "--task", "image", "--json"], { env: {} });
    expect(image.code, image.stderr).toBe(0);
    const rows = image.stdout.trim().split("\n").map((line) => JSON.parse(line) as { target: string; task: string; honours: Record<string, string>; refuses: Record<string, string>; price_basis: string });
    expect(rows.every((row) => row.task === "image")).toBe(true);
    expect(rows.map((row) => row.target)).toEqual(expect.arrayContaining(["d/gen-2-pro", "d/gen-2-compact-4b", "e/v3", "e/v4", "f/<model>"]));
    const pro = rows.find((row) => row.target === "d/gen-2-pro")!;
    expect(pro.honours.size).toMatch(/multiple of 16/);
    expect(pro.honours.images).toMatch(/up to 8 reference images/);
    expect(rows.find((row) => row.target === "d/gen-2-compact-4b")!.honours.images).toMatch(/up to 4 reference images/);
    expect(pro.price_basis).toMatch(/per megapixel/);
    expect(rows.find((row) => row.target === "f/<model>")!.refuses.seed).toMatch(/no seed field/);
    const video = await runCli(["models", "--task", "video"], { env: {} });
    expect(video.code, video.stderr).toBe(0);
    expect(video.stdout).toMatch(/^c\/v6 \(video; not configured\)$/m);
    expect(video.stdout).toMatch(/^ {2}duration_s: 5 s only/m);
    expect(video.stdout).toMatch(/^b\/<vendor>\/<model>\/<function> \(video/m);
    expect(video.stdout).not.toMatch(/^d\//m);
  });

  it("an unknown --task is refused naming the flag (exit 2)", async () => {
    const result = await runCli(["models", "--task", "audio"], { env: {} });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--task: unknown task "audio" \(allowed: image, video\)/);
  });
});
