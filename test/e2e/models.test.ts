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
