import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { InputError } from "../../src/core/errors.js";
import { firstUnprintable } from "../../src/core/printable.js";
import { Mediagate } from "../../src/index.js";
import { renderPng } from "../../src/sandbox/media/png.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { runCli } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";

let world: DWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const generateArgs = ["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a lighthouse", "--width", "256", "--height", "256"];
const RETITLE = "\u001b]0;pwned\u0007";

function dRequests(world: DWorld): number {
  return world.sandbox.requests().filter((request) => request.provider === "d").length;
}

async function storedJobs(world: DWorld): Promise<number> {
  const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
  try {
    return (await store.listJobs({})).length;
  } finally {
    await store.close();
  }
}

describe("bad input is never sent (CLI and library against the D sandbox)", () => {
  it("generate: a --ref holding an ESC sequence is refused with exit 2 naming --ref; nothing is stored or sent, and the message is printable", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const result = await runCli([...generateArgs, "--ref", `night${RETITLE}`], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--ref: "night\\u001b\]0;pwned\\u0007" holds the unprintable character U\+001B at position 6/);
    expect(firstUnprintable(result.stderr.replace(/\n/g, ""))).toBeNull();
    expect(dRequests(world)).toBe(0);
    expect(await storedJobs(world)).toBe(0);
  });

  it("batch: a line whose ref holds a newline or ESC is refused naming its line and the ref; nothing is sent", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const file = join(world.folder, "jobs.jsonl");
    const line = (ref: string) => JSON.stringify({ ref, provider: "d", model: "gen-2-pro", input: { prompt: "x", width: 256, height: 256 } });
    writeFileSync(file, [line("good"), line("two\nlines"), line(`title${RETITLE}`)].join("\n"));
    const result = await runCli(["batch", file], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/line 2: ref: "two\\u000alines" holds the unprintable character U\+000A/);
    expect(result.stderr).toMatch(/line 3: ref: "title\\u001b\]0;pwned\\u0007" holds the unprintable character U\+001B/);
    expect(result.stderr).not.toContain("\u001b");
    expect(dRequests(world)).toBe(0);
    expect(await storedJobs(world)).toBe(0);
  });

  it("generate: --image of a file that is not a PNG, JPEG or WebP image by its first bytes is refused with exit 2, even when named .png; nothing is sent", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const passwords = join(world.folder, "passwd");
    writeFileSync(passwords, "root:x:0:0:root:/root:/bin/bash\n");
    const disguised = join(world.folder, "photo.png");
    writeFileSync(disguised, "not really a picture");
    for (const file of [passwords, disguised]) {
      const result = await runCli([...generateArgs, "--image", file], { env: world.env });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--image: file .* is not a PNG, JPEG or WebP image \(judged by its first bytes, not its name\)/);
    }
    expect(dRequests(world)).toBe(0);
    expect(await storedJobs(world)).toBe(0);
  });

  it("generate: --width contradicting --input's width is refused with exit 2 naming both; nothing is sent", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const result = await runCli([...generateArgs, "--input", '{"width":512}'], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--width: says 256 but --input sets width to 512/);
    expect(dRequests(world)).toBe(0);
  });

  it("an input nested past 64 levels is refused with exit 2 before anything is stored: a batch line naming its line and field, --input and --provider-options naming the flag, a --config file with exit 3 naming --config", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const deep = `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`;
    const file = join(world.folder, "deep.jsonl");
    const line = (ref: string, input: string) => `{"ref": "${ref}", "provider": "d", "model": "gen-2-pro", "input": ${input}}`;
    writeFileSync(file, [line("good", '{"prompt": "x", "width": 256, "height": 256}'), line("deep", deep), line("huge", JSON.stringify({ prompt: "x".repeat(1_100_000) }))].join("\n"));
    const batch = await runCli(["batch", file], { env: world.env });
    expect(batch.code, batch.stderr).toBe(2);
    expect(batch.stderr).toContain("line 2: input: is nested 5001 levels deep (allowed: at most 64 levels of objects and arrays, counted from the outermost)");
    expect(batch.stderr).toMatch(/line 3: is 1100\d+ bytes of JSON \(allowed: at most 1048576 bytes \(1 MiB\) of JSON\)/);
    const input = await runCli([...generateArgs, "--input", `{"deep": ${deep}}`], { env: world.env });
    expect(input.code).toBe(2);
    expect(input.stderr).toContain("--input: is nested 5001 levels deep (at deep.a.a.a…)");
    const options = await runCli(["generate", "--task", "image", "--prompt", "x", "--model", "d/gen-2-pro", "--provider-options", `{"d": ${deep}}`], { env: world.env });
    expect(options.code).toBe(2);
    expect(options.stderr).toContain("--provider-options: is nested 5001 levels deep");
    const config = join(world.folder, "deep.config.json");
    writeFileSync(config, `{"MEDIAGATE_LOG_LEVEL": ${deep}}`);
    const configured = await runCli(["--config", config, "jobs"], { env: world.env });
    expect(configured.code).toBe(3);
    expect(configured.stderr).toContain(`${config}: is nested 5001 levels deep (at MEDIAGATE_LOG_LEVEL.a.a.a…)`);
    expect(dRequests(world)).toBe(0);
    expect(await storedJobs(world)).toBe(0);
  });

  it("--budget-usd that is not an amount names the flag with exit 2 (not MEDIAGATE_BUDGET_USD with exit 3); the variable itself names the variable with exit 3; the same for --log-level (a worker crashed on pino's own message)", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const env = world.env;
    for (const args of [["--budget-usd", "abc", "jobs"], ["jobs", "--budget-usd", "abc"], ["--budget-usd", "", "jobs"], ["token", "create", "x", "--budget-usd", "abc"]]) {
      const flag = await runCli(args, { env });
      expect(flag.code, args.join(" ")).toBe(2);
      expect(flag.stderr).toMatch(/^mediagate: invalid input: --budget-usd: "(abc)?" is not an amount of US dollars \(allowed: an amount of US dollars from 0 to 1000000000/);
    }
    const variable = await runCli(["jobs"], { env: { ...env, MEDIAGATE_BUDGET_USD: "9300000000000" } });
    expect(variable.code).toBe(3);
    expect(variable.stderr).toBe("mediagate: MEDIAGATE_BUDGET_USD: 9300000000000 is more than $1000000000 (allowed: an amount of US dollars from 0 to 1000000000 with at most 6 decimals, like 25 or 2.50)\n");
    const level = await runCli(["--log-level", "loud", "worker"], { env });
    expect(level.code).toBe(2);
    expect(level.stderr).toBe('mediagate: invalid input: --log-level: "loud" is not a log level (allowed: silent, fatal, error, warn, info, debug, trace)\n');
    const levelVariable = await runCli(["worker"], { env: { ...env, MEDIAGATE_LOG_LEVEL: "loud" } });
    expect(levelVariable.code).toBe(3);
    expect(levelVariable.stderr).toBe('mediagate: MEDIAGATE_LOG_LEVEL must be one of silent, fatal, error, warn, info, debug, trace, got "loud"\n');
    expect(dRequests(world)).toBe(0);
  });

  it("batch: refs with lone surrogates (a\\ud800b, a\\udc00b) are refused rather than stored as one changed ref; a prompt likewise, and a line whose bytes are not UTF-8; exit 2 naming each line, nothing stored", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const file = join(world.folder, "lone.jsonl");
    const line = (ref: string, prompt = "x") => `{"ref": "${ref}", "provider": "d", "model": "gen-2-pro", "input": {"prompt": "${prompt}", "width": 256, "height": 256}}`;
    const badBytes = Buffer.concat([Buffer.from(line("bytes", "caf")), Buffer.from([0xe9])]);
    writeFileSync(file, Buffer.concat([Buffer.from([line("good"), line("a\\ud800b"), line("a\\udc00b"), line("prompt", "a fox\\ud800"), ""].join("\n")), badBytes, Buffer.from(`\n{"ref": "common\\ud800", "task": "image", "prompt": "x", "size": "256x256", "model": "d/gen-2-pro"}`)]));
    const result = await runCli(["batch", file], { env: world.env });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('line 2: ref: "a\\ud800b" holds a lone surrogate U+D800 at position 2, which is not a character');
    expect(result.stderr).toContain('line 3: ref: "a\\udc00b" holds a lone surrogate U+DC00 at position 2, which is not a character');
    expect(result.stderr).toContain("line 4: input.prompt: holds a lone surrogate U+D800 at position 6, which is not a character");
    expect(result.stderr).toContain("line 5: is not UTF-8 text (JSON lines are UTF-8)");
    expect(result.stderr).toContain('line 6: ref: "common\\ud800" holds a lone surrogate U+D800 at position 7');
    // Printed escaped: a lone surrogate on a terminal would show as U+FFFD.
    expect(result.stderr).not.toContain("\ufffd");
    expect(dRequests(world)).toBe(0);
    expect(await storedJobs(world)).toBe(0);
  });

  it("library: Mediagate.submit refuses a ref, a prompt or an outDir with a lone surrogate (InputError naming it): nothing stored", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const gate = await Mediagate.open({ env: world.env, runEngine: false });
    try {
      const request = { provider: "d" as const, model: "gen-2-pro", input: { prompt: "x", width: 256, height: 256 } };
      const refusals = [
        await gate.submit(request, { ref: "a\ud800b" }).catch((caught: unknown) => caught),
        await gate.submit({ ...request, input: { ...request.input, prompt: "a fox\udc00" } }).catch((caught: unknown) => caught),
        await gate.submit({ task: "image", prompt: "\ud800", size: "256x256", model: "d/gen-2-pro" }).catch((caught: unknown) => caught),
        await gate.submit(request, { outDir: join(world.folder, "out\ud800") }).catch((caught: unknown) => caught),
      ];
      expect(refusals.map((error) => (error as InputError).field)).toEqual(["ref", "input.prompt", "prompt", "outDir"]);
      for (const error of refusals) expect(error).toBeInstanceOf(InputError);
      expect(await gate.list()).toEqual([]);
    } finally {
      await gate.close();
    }
  });

  it("library: Mediagate.submit refuses an input nested past 64 levels, or cyclic, as InputError naming input (not a stack overflow); nothing stored", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const gate = await Mediagate.open({ env: world.env, runEngine: false });
    try {
      let deep: Record<string, unknown> = { leaf: 1 };
      for (let level = 0; level < 5_000; level++) deep = { a: deep };
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      for (const extra of [deep, cyclic]) {
        const error = await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: "x", width: 256, height: 256, extra } }).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(InputError);
        expect((error as InputError).message).toBe("input: is nested more than 64 levels deep (allowed: at most 64 levels of objects and arrays, counted from the outermost)");
      }
      const routed = await gate.submit({ task: "image", prompt: "x", model: "d/gen-2-pro", provider_options: { d: deep } }).catch((caught: unknown) => caught);
      expect((routed as InputError).field).toBe("provider_options");
      expect(await gate.list()).toEqual([]);
    } finally {
      await gate.close();
    }
  });

  it("a refusal quoting what the user gave (a model holding ESC) is printed escaped, so it cannot act on the terminal", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const result = await runCli(["generate", "--provider", "d", "--model", `gen${RETITLE}`, "--prompt", "x", "--width", "256", "--height", "256"], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("gen\\u001b]0;pwned\\u0007");
    expect(result.stderr).not.toContain("\u001b");
    expect(dRequests(world)).toBe(0);
  });

  it("jobs: a ref stored with control characters (before the ref rule) is printed escaped, one row per job", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
    await store.insertJobs(
      [
        {
          id: "job_old",
          ref: `old${RETITLE}\nrow`,
          batchId: null,
          provider: "d",
          model: "gen-2-pro",
          operation: null,
          body: { prompt: "x", width: 256, height: 256 },
          facts: {},
          warnings: [],
          estimateMicroUsd: 30_000,
          estimateSource: "test",
          outDir: world.env.MEDIAGATE_OUTPUT_DIR!,
        },
      ],
      Date.now(),
    );
    await store.close();
    const result = await runCli(["jobs"], { env: world.env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("old\\u001b]0;pwned\\u0007\\u000arow");
    expect(result.stdout).not.toContain("\u001b");
    expect(result.stdout.trim().split("\n")).toHaveLength(2);
  });

  it("library: Mediagate.submit refuses a ref with control characters (InputError naming ref): nothing stored, nothing sent", async () => {
    world = await startDWorld({ renderTimeMs: 100 });
    const gate = await Mediagate.open({ env: world.env, runEngine: false });
    try {
      const request = { provider: "d" as const, model: "gen-2-pro", input: { prompt: "x", width: 256, height: 256 }, images: [{ fileName: "a.png", bytes: renderPng(64, 64, "x", 1) }] };
      const error = await gate.submit(request, { ref: `lib${RETITLE}` }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).field).toBe("ref");
      expect(await gate.list()).toEqual([]);
      const accepted = await gate.submit(request, { ref: "lib-ok" });
      expect(accepted.ref).toBe("lib-ok");
    } finally {
      await gate.close();
    }
    expect(dRequests(world)).toBe(0);
  });
});
