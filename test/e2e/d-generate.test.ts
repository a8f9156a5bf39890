import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pngSize, renderPng } from "../../src/sandbox/media/png.js";
import { runCli } from "../helpers/cli.js";
import { type DWorld, sha256File, startDWorld } from "../helpers/d-sandbox.js";
import { newDJob } from "../helpers/stores.js";
import { openSqliteStore } from "../../src/store/sqlite.js";

let world: DWorld;
beforeEach(async () => {
  world = await startDWorld({ renderTimeMs: 300 });
});
afterEach(async () => {
  await world.close();
});

const generateArgs = ["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "a lighthouse at dawn", "--width", "1024", "--height", "768", "--seed", "7"];

describe("mediagate generate on D (CLI against the sandbox over loopback)", () => {
  it("saves a real PNG, prints its path and cost", async () => {
    const result = await runCli(generateArgs, { env: world.env });
    expect(result.code, result.stderr).toBe(0);
    const path = result.stdout.trim();
    expect(existsSync(path)).toBe(true);
    expect(pngSize(readFileSync(path))).toEqual({ width: 1024, height: 768 });
    expect(result.stderr).toMatch(/cost \$0\.03/);
    expect(world.submits()).toBe(1);
  });

  it("--json prints the documented job shape with the file's sha256", async () => {
    const result = await runCli([...generateArgs, "--json", "--ref", "lighthouse"], { env: world.env });
    expect(result.code, result.stderr).toBe(0);
    const job = JSON.parse(result.stdout.trim()) as Record<string, unknown>;
    expect(Object.keys(job)).toEqual(["id", "ref", "provider", "model", "state", "provider_job_id", "outputs", "error", "cost"]);
    expect(job).toMatchObject({ ref: "lighthouse", provider: "d", model: "gen-2-pro", state: "succeeded", error: null });
    const outputs = job.outputs as Array<{ path: string; sha256: string; content_type: string; bytes: number; url: string }>;
    expect(outputs).toHaveLength(1);
    expect(Object.keys(outputs[0]!)).toEqual(["path", "url", "content_type", "bytes", "sha256", "width", "height", "seed"]);
    // The size read from the saved file, and the seed that was sent.
    expect(outputs[0]).toMatchObject({ content_type: "image/png", width: 1024, height: 768, seed: 7 });
    expect(sha256File(outputs[0]!.path)).toBe(outputs[0]!.sha256);
    expect(job.cost).toMatchObject({ estimate_micro_usd: 30_000, charge_micro_usd: 30_000 });
  });

  it("--cancel-after: a job expected to finish after its deadline is warned of at admission (issue 37); sent, it runs to its end at D and show says the deadline was missed", async () => {
    world.d.setRenderTimeMs(1_500);
    // A first job teaches the model's pace (1.5 s and more).
    expect((await runCli([...generateArgs, "--ref", "pace"], { env: world.env })).code).toBe(0);
    const late = await runCli([...generateArgs, "--ref", "late", "--cancel-after", "1"], { env: world.env });
    expect(late.code, late.stderr).toBe(0);
    expect(late.stderr).toMatch(/^mediagate: warning: expected to finish at \d{4}-\d\d-\d\dT[\d:.]+Z, after its deadline \d{4}-\d\d-\d\dT[\d:.]+Z \(cancel_after_s\): not sent by then it is cancelled, and sent it may run past it$/m);
    const shown = JSON.parse((await runCli(["show", "late", "--json"], { env: world.env })).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ state: "succeeded", deadline_missed: true, queue_position: null, expected_start_at: null, expected_finish_at: null });
    // A job left queued (no engine runs it): `jobs --json` gives its place in line and when it is expected to start and finish.
    const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.replace(/^sqlite:/, ""));
    await store.insertJobs([newDJob("waiting", { outDir: join(world.folder, "out") })], Date.now());
    await store.close();
    const listed = (await runCli(["jobs", "--json"], { env: world.env })).stdout.trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(listed.find((job) => job.ref === "waiting")).toMatchObject({ state: "queued", queue_position: 1, expected_start_at: expect.stringMatching(/Z$/), expected_finish_at: expect.stringMatching(/Z$/) });
    expect(listed.find((job) => job.ref === "late")).toMatchObject({ queue_position: null, expected_start_at: null, expected_finish_at: null });
    // A deadline it can meet: no warning.
    const easy = await runCli([...generateArgs, "--ref", "easy", "--cancel-after", "600"], { env: world.env });
    expect(easy.code, easy.stderr).toBe(0);
    expect(easy.stderr).not.toMatch(/warning: expected to finish/);
  });

  it("bad input is refused before anything is sent, naming the field and what is allowed", async () => {
    const result = await runCli(["generate", "--provider", "d", "--model", "gen-2-pro", "--prompt", "x", "--width", "1000", "--height", "768"], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/width/);
    expect(result.stderr).toMatch(/16/);
    expect(world.sandbox.requests().filter((request) => request.provider === "d")).toHaveLength(0);
  });

  it("an unknown model is refused, listing the hosted endpoints", async () => {
    const result = await runCli(["generate", "--provider", "d", "--model", "gen-2-dev", "--prompt", "x", "--width", "512", "--height", "512"], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/model/);
    expect(world.sandbox.requests().filter((request) => request.provider === "d")).toHaveLength(0);
  });

  it("a provider that is not configured is refused naming the variable to set", async () => {
    const { MEDIAGATE_D_BASE_URL: _unused, ...env } = world.env;
    const result = await runCli(generateArgs, { env });
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/MEDIAGATE_D_BASE_URL/);
  });

  it("--image FILE and --image URL become input_image and input_image_2: the file's bytes as base64, the URL as given", async () => {
    const file = join(world.folder, "reference.png");
    const reference = renderPng(64, 64, "a red square", 1);
    writeFileSync(file, reference);
    const url = "https://images.example.com/style.png";
    const result = await runCli([...generateArgs, "--image", file, "--image", url, "--json"], { env: world.env });
    expect(result.code, result.stderr).toBe(0);
    const [job] = world.d.jobs;
    expect(job!.body.input_image).toBe(reference.toString("base64"));
    expect(job!.body.input_image_2).toBe(url);
    expect(job!.referenceCount).toBe(2);
    // What was asked, as show says it (issue 37, part 4): the file by name, type, size and sha256, never its bytes.
    const id = (JSON.parse(result.stdout) as { id: string }).id;
    const sha256 = createHash("sha256").update(reference).digest("hex");
    const shownJson = await runCli(["show", id, "--json"], { env: world.env });
    const request = (JSON.parse(shownJson.stdout) as { request: { input: Record<string, unknown>; files: unknown[] } }).request;
    expect(request.files).toEqual([{ field: "images[0]", name: "reference.png", type: "image/png", bytes: reference.length, sha256 }]);
    expect(request.input.input_image).toEqual({ file: { name: "reference.png", type: "image/png", bytes: reference.length, sha256 } });
    expect(request.input.input_image_2).toBe(url);
    expect(request.input.prompt).toBeDefined();
    const shownText = await runCli(["show", id], { env: world.env });
    expect(shownText.stdout).toContain(`  file images[0]: reference.png (image/png, ${reference.length} bytes, sha256 ${sha256})`);
    expect(shownText.stdout + shownJson.stdout).not.toContain(reference.toString("base64").slice(0, 40));
  });

  it("--image with a missing file is refused naming the flag, before anything is sent", async () => {
    const result = await runCli([...generateArgs, "--image", join(world.folder, "nope.png")], { env: world.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--image: file .*nope\.png does not exist \(allowed: a local file path or an http\(s\) URL\)/);
    expect(world.submits()).toBe(0);
  });

  it("--budget-usd below the estimate refuses before anything is sent", async () => {
    const result = await runCli([...generateArgs, "--budget-usd", "0.01"], { env: world.env });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/exceeds the budget/);
    expect(world.submits()).toBe(0);
  });

  it("keys never appear in output, even at debug log level or on an auth failure", async () => {
    const secretKey = "sk-very-secret-d-key-123456";
    const ok = await runCli(["--log-level", "debug", ...generateArgs], { env: { ...world.env, MEDIAGATE_D_API_KEY: secretKey } });
    // The sandbox refuses this key (it only knows its own): the job fails with an auth error.
    expect(`${ok.stdout}${ok.stderr}`).not.toContain(secretKey);
    expect(ok.code).toBe(1);
    const show = await runCli(["jobs", "--json"], { env: world.env });
    expect(show.stdout).not.toContain(secretKey);
  });

  it("quote prints the estimate and its price view without sending anything", async () => {
    const result = await runCli(["quote", "--provider", "d", "--model", "gen-2-pro", "--prompt", "x", "--width", "2048", "--height", "2048"], { env: {} });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/\$0\.075/);
    expect(result.stdout.toLowerCase()).toMatch(/pricing page/);
  });
});
