import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { openStore } from "../../src/store/open.js";
import { runCli } from "../helpers/cli.js";
import { cliPostgresStore } from "../helpers/pg-cli-store.js";
import { tempDir } from "../helpers/stores.js";

let folder: { path: string; remove(): void } | undefined;
afterEach(() => folder?.remove());

describe("mediagate token and serve's binding", () => {
  it("token create prints the secret once (the store keeps its sha256 only); list never shows it; revoke ends it; a name is unique", async () => {
    folder = tempDir();
    const env = { MEDIAGATE_STORE: `sqlite:${join(folder.path, "m.db")}` };
    const created = await runCli(["token", "create", "alice", "--budget-usd", "2.50"], { env });
    expect(created.code, created.stderr).toBe(0);
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^mg_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/token alice \(tok_\S+\) created, budget \$2\.5000; this is the only time its secret is shown/);
    const list = await runCli(["token", "list", "--json"], { env });
    expect(list.stdout).not.toContain(secret);
    expect(JSON.parse(list.stdout.trim())).toMatchObject({ name: "alice", admin: false, read_only: false, budget_micro_usd: 2_500_000, committed_micro_usd: 0, revoked_at: null });
    const store = await openStore(env.MEDIAGATE_STORE);
    try {
      const [token] = await store.tokens();
      expect(token!.secretSha256).toBe(createHash("sha256").update(secret).digest("hex"));
    } finally {
      await store.close();
    }
    const twice = await runCli(["token", "create", "alice"], { env });
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/a token named "alice" exists already/);
    expect((await runCli(["token", "create", "x", "--admin", "--read-only"], { env })).code).toBe(2);
    const revoked = await runCli(["token", "revoke", "alice"], { env });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse((await runCli(["token", "list", "--json"], { env })).stdout.trim()).revoked_at).not.toBeNull();
    expect((await runCli(["token", "revoke", "nobody"], { env })).code).toBe(2);
  });

  const stores: Array<{ name: string; open(): Promise<{ address: string; cleanup(): Promise<void> }> }> = [
    { name: "SQLite", open: async () => ({ address: `sqlite:${join(folder!.path, "m.db")}`, cleanup: async () => undefined }) },
    ...(process.env.DATABASE_URL ? [{ name: "PostgreSQL", open: () => cliPostgresStore(process.env.DATABASE_URL!) }] : []),
  ];
  for (const kind of stores) {
    it(`token create --budget-usd past $1,000,000,000 is refused with exit 2 naming --budget-usd before anything is stored (${kind.name}: was a float budget, or bigint out of range)`, async () => {
      folder = tempDir();
      const database = await kind.open();
      try {
        const env = { MEDIAGATE_STORE: database.address };
        for (const amount of ["9300000000000", "99999999999999999", "1000000000.000001"]) {
          const refused = await runCli(["token", "create", `rich-${amount.length}`, "--budget-usd", amount], { env });
          expect(refused.code, refused.stderr).toBe(2);
          expect(refused.stderr).toBe(`mediagate: invalid input: --budget-usd: ${amount} is more than $1000000000 (allowed: an amount of US dollars from 0 to 1000000000 with at most 6 decimals, like 25 or 2.50)\n`);
        }
        const most = await runCli(["token", "create", "most", "--budget-usd", "1000000000", "--json"], { env });
        expect(most.code, most.stderr).toBe(0);
        expect(JSON.parse(most.stdout)).toMatchObject({ budget_micro_usd: 1e15 });
        const listed = (await runCli(["token", "list", "--json"], { env })).stdout.trim().split("\n").map((line) => JSON.parse(line) as { name: string; budget_micro_usd: number });
        expect(listed.map((token) => [token.name, token.budget_micro_usd])).toEqual([["most", 1e15]]);
      } finally {
        await database.cleanup();
      }
    });
  }

  it("createToken (what token create calls) refuses a budget that is not whole micro-USD from 0 to 1e15: nothing is stored", async () => {
    folder = tempDir();
    const store = await openStore(`sqlite:${join(folder.path, "m.db")}`);
    try {
      for (const budgetMicroUsd of [1e23, 2.5, -1, 1e15 + 1]) {
        await expect(createToken(store, { name: "rich", budgetMicroUsd, now: Date.now() })).rejects.toMatchObject({ field: "--budget-usd" });
      }
      expect(await store.tokens()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("serve refuses to listen beyond loopback while no API token exists (the API would answer anyone), exit 2, naming --host", async () => {
    folder = tempDir();
    const result = await runCli(["serve", "--host", "0.0.0.0", "--port", "0"], { env: { MEDIAGATE_STORE: `sqlite:${join(folder.path, "m.db")}` } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--host: no API token exists, so serve listens on loopback only, not 0\.0\.0\.0/);
  });
});
