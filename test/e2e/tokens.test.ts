import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/open.js";
import { runCli } from "../helpers/cli.js";
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

  it("serve refuses to listen beyond loopback while no API token exists (the API would answer anyone), exit 2, naming --host", async () => {
    folder = tempDir();
    const result = await runCli(["serve", "--host", "0.0.0.0", "--port", "0"], { env: { MEDIAGATE_STORE: `sqlite:${join(folder.path, "m.db")}` } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--host: no API token exists, so serve listens on loopback only, not 0\.0\.0\.0/);
  });
});
