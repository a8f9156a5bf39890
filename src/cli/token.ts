import type { Command } from "commander";
import { InputError } from "../core/errors.js";
import { formatMicroUsd } from "../core/money.js";
import { createToken, MAX_TOKEN_WEIGHT } from "../app/tokens.js";
import { runtimeOf, usdFlag, type GlobalOptions } from "./globals.js";
import { wholeNumberFlag } from "./number-flags.js";

/**
 * `mediagate token create NAME [--budget-usd X] [--read-only] [--admin]`,
 * `token list`, `token revoke NAME|ID`: the API tokens of `mediagate serve`.
 * A secret is printed once, at creation; the store keeps only its sha256.
 */
export function registerToken(program: Command, globals: () => GlobalOptions): void {
  const token = program.command("token").description("API tokens of `mediagate serve` (create prints the secret once; the store keeps only its sha256)");

  token
    .command("create")
    .argument("<name>", "a name for the token (who or what uses it)")
    .option("--budget-usd <usd>", "a ceiling on what this token's jobs may spend (estimates held at each send, charges counted)")
    .option("--read-only", "may read jobs, outputs and spend, never submit or cancel")
    .option("--weight <n>", "its share of each provider's slots against the other tokens' when they compete (1 to 1000; default 1)")
    .option("--admin", "sees and changes every job, not only its own")
    .description("create a token and print its secret (shown once)")
    .action(async (name: string, flags: { budgetUsd?: string; readOnly?: boolean; admin?: boolean; weight?: string }) => {
      const options = globals();
      // The program's own --budget-usd takes the flag when it is given after `create` too: here it is the token's.
      const budgetUsd = flags.budgetUsd ?? options.budgetUsd;
      const budgetMicroUsd = budgetUsd === undefined ? null : usdFlag("--budget-usd", budgetUsd);
      let weight = 1;
      if (flags.weight !== undefined) {
        weight = wholeNumberFlag("--weight", flags.weight, { min: 1, max: MAX_TOKEN_WEIGHT });
      }
      const runtime = runtimeOf(options);
      try {
        const created = await createToken(await runtime.store(), { name, admin: Boolean(flags.admin), readOnly: Boolean(flags.readOnly), budgetMicroUsd, weight, now: Date.now() });
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ id: created.token.id, name, token: created.secret, admin: created.token.admin, read_only: created.token.readOnly, budget_micro_usd: budgetMicroUsd, weight })}\n`);
          return;
        }
        process.stdout.write(`${created.secret}\n`);
        process.stderr.write(
          `token ${name} (${created.token.id}) created${created.token.admin ? ", admin" : ""}${created.token.readOnly ? ", read-only" : ""}${budgetMicroUsd !== null ? `, budget ${formatMicroUsd(budgetMicroUsd)}` : ""}; ` +
            "this is the only time its secret is shown: the store keeps its sha256. Send it as `Authorization: Bearer <token>`.\n",
        );
      } finally {
        await runtime.close();
      }
    });

  token
    .command("list")
    .description("the tokens (never their secrets): name, rights, budget and what its jobs committed, created, revoked")
    .action(async () => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const store = await runtime.store();
        for (const item of await store.tokens()) {
          const budget = item.budgetId ? await store.budget(item.budgetId) : null;
          const row = {
            id: item.id,
            name: item.name,
            admin: item.admin,
            read_only: item.readOnly,
            budget_micro_usd: budget?.ceilingMicroUsd ?? null,
            committed_micro_usd: budget?.committedMicroUsd ?? null,
            weight: item.weight,
            created_at: new Date(item.createdAt).toISOString(),
            revoked_at: item.revokedAt === null ? null : new Date(item.revokedAt).toISOString(),
          };
          if (options.json) {
            process.stdout.write(`${JSON.stringify(row)}\n`);
            continue;
          }
          const rights = `${item.admin ? "admin" : item.readOnly ? "read-only" : "own jobs"}${item.weight !== 1 ? `, weight ${item.weight}` : ""}`;
          const spend = budget ? `budget ${formatMicroUsd(budget.ceilingMicroUsd)}, committed ${formatMicroUsd(budget.committedMicroUsd)}` : "no budget";
          process.stdout.write(`${item.name}  ${item.id}  ${rights}  ${spend}  created ${row.created_at}${row.revoked_at ? `  revoked ${row.revoked_at}` : ""}\n`);
        }
      } finally {
        await runtime.close();
      }
    });

  token
    .command("revoke")
    .argument("<name-or-id>", "the token's name or id")
    .description("revoke a token: its requests are refused from now on; its jobs go on")
    .action(async (nameOrId: string) => {
      const options = globals();
      const runtime = runtimeOf(options);
      try {
        const revoked = await (await runtime.store()).revokeToken(nameOrId, Date.now());
        if (!revoked) throw new InputError("NAME-OR-ID", `no token named or with id "${nameOrId}"`, "a name or id from `mediagate token list`");
        if (options.json) process.stdout.write(`${JSON.stringify({ id: revoked.id, name: revoked.name, revoked_at: new Date(revoked.revokedAt!).toISOString() })}\n`);
        else process.stderr.write(`token ${revoked.name} (${revoked.id}) revoked; its jobs go on\n`);
      } finally {
        await runtime.close();
      }
    });
}
