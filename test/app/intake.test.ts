import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerOf, LOCAL_CALLER, type Caller } from "../../src/app/caller.js";
import { ConflictError, IdempotencyKeyReusedError, LineProblemsError } from "../../src/app/errors.js";
import { checkNotifyUrl, IDEMPOTENCY_KEEP_MS, prepareLines, quoteOf, submitBatch, submitJob, validateIdempotencyKey } from "../../src/app/intake.js";
import { createRuntime, type Runtime } from "../../src/app/runtime.js";
import { createToken } from "../../src/app/tokens.js";
import { BudgetError, InputError } from "../../src/core/errors.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";
import { apiLineRequest } from "../../src/server/api/batches.js";
import { idempotencyOf, quotedRequestOfBody, submissionOfBody } from "../../src/server/api/requests.js";
import { tempDir } from "../helpers/stores.js";

/**
 * Intake called as a face calls it (the API's reading of bodies, a caller
 * per tenant) on a real SQLite store, with D and E configured from the
 * sandbox; nothing is sent (no engine runs).
 */

/** A D image of 512×512 on gen-2-pro: $0.03. */
const image = (ref?: string, prompt = `an image ${ref ?? ""}`) => ({ ...(ref !== undefined ? { ref } : {}), provider: "d", model: "gen-2-pro", input: { prompt, width: 512, height: 512 } });

const folder = tempDir();
let sandbox: Sandbox;
let runtime: Runtime;

async function tokenCaller(name: string, budgetMicroUsd?: number): Promise<Caller> {
  const { token } = await createToken(await runtime.store(), { name, ...(budgetMicroUsd !== undefined ? { budgetMicroUsd } : {}), now: Date.now() });
  return callerOf(token);
}

/** The error `promise` rejects with; fails when it resolves. */
async function refusedBy(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    (value) => {
      throw new Error(`not refused: ${JSON.stringify(value).slice(0, 200)}`);
    },
    (error: unknown) => error as Error,
  );
}

beforeAll(async () => {
  sandbox = await startSandbox({ providers: ["d", "e"] });
  runtime = createRuntime({ overrides: { ...sandbox.environment, MEDIAGATE_STORE: `sqlite:${join(folder.path, "mediagate.db")}`, MEDIAGATE_OUTPUT_DIR: join(folder.path, "out") } });
});

afterAll(async () => {
  await runtime.close();
  await sandbox.stop();
  folder.remove();
});

describe("checkNotifyUrl and validateIdempotencyKey", () => {
  it("a notify_url is a public https URL: absent is none; not text, or a private host, is refused naming the field, the URL shown without its path", async () => {
    expect(await checkNotifyUrl(runtime, undefined)).toBeNull();
    expect(await checkNotifyUrl(runtime, null)).toBeNull();
    expect(await checkNotifyUrl(runtime, "https://93.184.215.14/hook")).toBe("https://93.184.215.14/hook");
    await expect(checkNotifyUrl(runtime, 42)).rejects.toThrow(new InputError("notify_url", "must be a URL string"));
    const refused = await refusedBy(checkNotifyUrl(runtime, "https://10.0.0.7/hooks/secret-token"));
    expect(refused).toBeInstanceOf(InputError);
    expect(refused).toMatchObject({ field: "notify_url", allowed: "a public https URL" });
    expect(refused.message).toContain("refused URL https://10.0.0.7/[redacted]");
    expect(refused.message).not.toContain("secret-token");
    await expect(checkNotifyUrl(runtime, "https://a\ud800b.example/")).rejects.toMatchObject({ field: "notify_url" });
  });

  it("an Idempotency-Key is 1 to 255 printable ASCII characters; another is refused naming the header, quoting at most 40 characters", () => {
    expect(validateIdempotencyKey("k")).toBe("k");
    expect(validateIdempotencyKey("~".repeat(255))).toBe("~".repeat(255));
    for (const key of ["", "a b", "é", "x".repeat(256), "tab\t"]) expect(() => validateIdempotencyKey(key)).toThrow(expect.objectContaining({ field: "Idempotency-Key", allowed: "1 to 255 printable ASCII characters, no spaces" }));
    expect(() => validateIdempotencyKey("y".repeat(300))).toThrow(`"${"y".repeat(40)}" is not a key`);
    expect(IDEMPOTENCY_KEEP_MS).toBeGreaterThanOrEqual(24 * 3_600_000);
  });
});

describe("quoteOf", () => {
  it("a native request: its provider, model, estimate and source; a routed one also its target and the route's candidates", async () => {
    expect(await quoteOf(runtime, quotedRequestOfBody(image()))).toMatchObject({ provider: "d", model: "gen-2-pro", estimate_micro_usd: 30_000, warnings: [] });
    const routed = await quoteOf(runtime, quotedRequestOfBody({ task: "image", prompt: "a fox", size: "512x512", route: ["d/gen-2-pro", "e/v3"] }));
    expect(routed.target).toBeDefined();
    expect(routed.route?.map((entry) => entry.target)).toEqual(expect.arrayContaining(["d/gen-2-pro"]));
  });
});

describe("submitJob", () => {
  it("without a ref the job gets one of its own; with one, the same ref and request again answer the stored job (200), another request under it is a conflict naming the ref and the job", async () => {
    const caller = await tokenCaller("jobs-a");
    const unnamed = await submitJob(runtime, caller, submissionOfBody(image()));
    expect(unnamed.status).toBe(201);
    expect(unnamed.job.ref).toMatch(/^api_/);
    expect(unnamed.job.tenant).toBe(caller.tenant);
    expect(unnamed.job.tokenId).toBe(caller.token!.id);
    const first = await submitJob(runtime, caller, submissionOfBody(image("r1")));
    expect(first.status).toBe(201);
    const again = await submitJob(runtime, caller, submissionOfBody(image("r1")));
    expect(again).toMatchObject({ status: 200, job: { id: first.job.id } });
    const other = await refusedBy(submitJob(runtime, caller, submissionOfBody(image("r1", "another prompt"))));
    expect(other).toBeInstanceOf(ConflictError);
    expect(other).toMatchObject({ code: "ref_conflict", field: "ref", message: `ref "r1" is already used by job ${first.job.id} with a different request` });
    // Another tenant's r1 is its own job.
    const bob = await tokenCaller("jobs-b");
    expect((await submitJob(runtime, bob, submissionOfBody(image("r1", "another prompt")))).status).toBe(201);
  });

  it("a notify_url is stored with the job; a bad ref or notify_url is refused before anything is stored", async () => {
    const caller = await tokenCaller("jobs-n");
    const created = await submitJob(runtime, caller, submissionOfBody({ ...image("n1"), notify_url: "https://93.184.215.14/hook" }));
    expect(created.job.notifyUrl).toBe("https://93.184.215.14/hook");
    await expect(submitJob(runtime, caller, submissionOfBody({ ...image("n2"), notify_url: "http://127.0.0.1/x" }))).rejects.toMatchObject({ field: "notify_url" });
    await expect(submitJob(runtime, caller, submissionOfBody(image("bad\u0007ref")))).rejects.toMatchObject({ field: "ref" });
    await expect(submitJob(runtime, caller, submissionOfBody(image("   ")))).rejects.toMatchObject({ field: "ref" });
    const store = await runtime.store();
    expect(await store.jobsByRefs(caller.tenant, ["n2", "bad\u0007ref", "   "])).toEqual([]);
  });

  it("under a token's budget: jobs are admitted while it has room; then one is refused in the API's words, naming the token, its budget, what is left and what holds it", async () => {
    const caller = await tokenCaller("thrifty", 70_000);
    expect((await submitJob(runtime, caller, submissionOfBody(image("b1")))).status).toBe(201);
    expect((await submitJob(runtime, caller, submissionOfBody(image("b2")))).status).toBe(201);
    const refused = await refusedBy(submitJob(runtime, caller, submissionOfBody(image("b3"))));
    expect(refused).toBeInstanceOf(BudgetError);
    expect(refused).toMatchObject({ estimateMicroUsd: 90_000, budgetMicroUsd: 70_000 });
    expect(refused.message).toBe("estimated cost $0.0300 is more than token thrifty's budget of $0.0700 has left ($0.0100: $0.0600 is held by its jobs queued, running and charged); nothing was queued");
    // A retry of a job admitted before is answered with it, though the budget has no room for another.
    expect((await submitJob(runtime, caller, submissionOfBody(image("b1")))).status).toBe(200);
  });

  it("under a token's budget, a job dearer than the whole budget, or one with no price, is refused before the admission, in the token's words", async () => {
    const caller = await tokenCaller("tiny", 20_000);
    const dear = await refusedBy(submitJob(runtime, caller, submissionOfBody(image("t1"))));
    expect(dear).toBeInstanceOf(BudgetError);
    expect(dear.message).toBe("estimated cost $0.0300 exceeds token tiny's budget of $0.0200; nothing was sent");
    const unpriced = await refusedBy(submitJob(runtime, caller, submissionOfBody({ ref: "t2", provider: "e", model: "v3", input: { prompt: "a fox" } })));
    expect(unpriced).toBeInstanceOf(BudgetError);
    expect(unpriced.message).toContain("1 job(s) have no price (t2), so token tiny's budget of $0.0200 cannot be guaranteed; a token with a budget runs priced jobs only");
    expect(await (await runtime.store()).jobsByRefs(caller.tenant, ["t1", "t2"])).toEqual([]);
  });

  it("a common request under a budget is routed among the targets the budget can still pay", async () => {
    const caller = await tokenCaller("router", 30_000);
    const routed = await submitJob(runtime, caller, submissionOfBody({ ref: "route-1", task: "image", prompt: "a fox", size: "512x512", route: ["d/gen-2-pro"] }));
    expect(routed.status).toBe(201);
    expect(routed.job.provider).toBe("d");
    // Nothing is left for a second: no target is eligible.
    await expect(submitJob(runtime, caller, submissionOfBody({ ref: "route-2", task: "image", prompt: "a fox", size: "512x512", route: ["d/gen-2-pro"] }))).rejects.toThrow();
    expect(await (await runtime.store()).jobsByRefs(caller.tenant, ["route-2"])).toEqual([]);
  });

  it("Idempotency-Key: the same key and body answer the first job with the first status; another body under the key is refused naming it", async () => {
    const caller = await tokenCaller("keys");
    const body = image();
    const first = await submitJob(runtime, caller, submissionOfBody(body), idempotencyOf("key-1", "POST /v1/jobs", body));
    expect(first.status).toBe(201);
    const again = await submitJob(runtime, caller, submissionOfBody(body), idempotencyOf("key-1", "POST /v1/jobs", body));
    expect(again).toMatchObject({ status: 201, job: { id: first.job.id } });
    const other = image(undefined, "another");
    const reused = await refusedBy(submitJob(runtime, caller, submissionOfBody(other), idempotencyOf("key-1", "POST /v1/jobs", other)));
    expect(reused).toBeInstanceOf(IdempotencyKeyReusedError);
    expect(reused).toMatchObject({ key: "key-1" });
    // The key is the caller's: another tenant's key-1 is its own.
    const bob = await tokenCaller("keys-b");
    const bobs = await submitJob(runtime, bob, submissionOfBody(other), idempotencyOf("key-1", "POST /v1/jobs", other));
    expect(bobs.status).toBe(201);
    expect(bobs.job.id).not.toBe(first.job.id);
  });
});

describe("prepareLines", () => {
  it("every line is checked before any is kept, each problem naming its line and field", async () => {
    const problems = await refusedBy(prepareLines(
      runtime,
      [image("ok-1"), "text", image(), { ...image("bad\u0007ref") }, image("ok-1"), { ...image("n"), notify_url: 7 }, [], null, { ...image("bad-model"), model: "gen-9" }],
      apiLineRequest,
    ));
    expect(problems).toBeInstanceOf(LineProblemsError);
    const byLine = Object.fromEntries((problems as LineProblemsError).problems.map((problem) => [problem.origin, problem.error]));
    expect(Object.keys(byLine)).toEqual(["line 2", "line 3", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9"]);
    expect(byLine["line 2"]).toMatchObject({ field: "line", reason: "must be a JSON object (a request)" });
    expect(byLine["line 3"]).toMatchObject({ field: "ref", reason: "is required on every line of a batch, unique in it" });
    expect(byLine["line 4"]).toMatchObject({ field: "ref" });
    expect(byLine["line 5"]).toMatchObject({ field: "ref", reason: '"ok-1" repeats line 1; refs are unique' });
    expect(byLine["line 6"]).toMatchObject({ field: "notify_url" });
    expect(byLine["line 7"]).toMatchObject({ field: "line" });
    expect(byLine["line 8"]).toMatchObject({ field: "line" });
    expect(byLine["line 9"]!.field).toBe("model");
  });

  it("an empty batch is refused naming the body", async () => {
    await expect(prepareLines(runtime, [], apiLineRequest)).rejects.toThrow(new InputError("body", "holds no requests"));
  });
});

describe("submitBatch", () => {
  it("a batch's id is the caller's and its refs': the same lines again are the same batch (200, nothing created), another tenant's the same lines another batch", async () => {
    const caller = await tokenCaller("batches-a");
    const lines = [image("x-1"), image("x-2")];
    const first = await submitBatch(runtime, caller, lines, apiLineRequest);
    expect(first).toMatchObject({ status: 201, created: 2 });
    expect(first.batchId).toMatch(/^api_batch_[0-9a-f]{16}$/);
    expect(first.jobs.map((job) => [job.ref, job.batchId])).toEqual([
      ["x-1", first.batchId],
      ["x-2", first.batchId],
    ]);
    const again = await submitBatch(runtime, caller, lines, apiLineRequest);
    expect(again).toMatchObject({ status: 200, created: 0, batchId: first.batchId });
    expect(again.jobs.map((job) => job.id)).toEqual(first.jobs.map((job) => job.id));
    const bob = await tokenCaller("batches-b");
    const bobs = await submitBatch(runtime, bob, lines, apiLineRequest);
    expect(bobs.status).toBe(201);
    expect(bobs.batchId).not.toBe(first.batchId);
  });

  it("a batch of stored refs in another order is answered under the batch that stored them; one adding a line is a new batch holding the stored job as it is", async () => {
    const caller = await tokenCaller("batches-c");
    const first = await submitBatch(runtime, caller, [image("y-1"), image("y-2")], apiLineRequest);
    const reordered = await submitBatch(runtime, caller, [image("y-2"), image("y-1")], apiLineRequest);
    expect(reordered).toMatchObject({ status: 200, created: 0, batchId: first.batchId });
    expect(reordered.jobs.map((job) => job.ref)).toEqual(["y-2", "y-1"]);
    const grown = await submitBatch(runtime, caller, [image("y-1"), image("y-3")], apiLineRequest);
    expect(grown).toMatchObject({ status: 201, created: 1 });
    expect(grown.batchId).not.toBe(first.batchId);
    expect(grown.jobs.map((job) => [job.ref, job.batchId])).toEqual([
      ["y-1", first.batchId],
      ["y-3", grown.batchId],
    ]);
  });

  it("under a token's budget a batch is admitted whole or refused whole; once the budget is spent, the batch stored before is answered (200) under its own id", async () => {
    const caller = await tokenCaller("batches-budget", 60_000);
    const first = await submitBatch(runtime, caller, [image("z-1"), image("z-2")], apiLineRequest);
    expect(first).toMatchObject({ status: 201, created: 2 });
    const over = await refusedBy(submitBatch(runtime, caller, [image("z-3")], apiLineRequest));
    expect(over).toBeInstanceOf(BudgetError);
    expect(over.message).toContain("token batches-budget's budget of $0.0600 has left ($0.0000");
    const whole = await refusedBy(submitBatch(runtime, caller, [image("z-4"), image("z-5"), image("z-6")], apiLineRequest));
    // Dearer than the whole budget: refused before the admission.
    expect(whole.message).toBe("estimated cost $0.0900 exceeds token batches-budget's budget of $0.0600; nothing was sent");
    const stored = await submitBatch(runtime, caller, [image("z-2"), image("z-1")], apiLineRequest);
    expect(stored).toMatchObject({ status: 200, created: 0, batchId: first.batchId });
    expect(await (await runtime.store()).jobsByRefs(caller.tenant, ["z-3", "z-4", "z-5", "z-6"])).toEqual([]);
  });

  it("Idempotency-Key on a batch: the same body answers the first batch under its id; another body is refused naming the key", async () => {
    const caller = await tokenCaller("batches-key");
    const lines = [image("k-1")];
    const first = await submitBatch(runtime, caller, lines, apiLineRequest, idempotencyOf("bk", "POST /v1/batches", lines));
    const again = await submitBatch(runtime, caller, lines, apiLineRequest, idempotencyOf("bk", "POST /v1/batches", lines));
    expect(again).toMatchObject({ status: 201, batchId: first.batchId });
    expect(again.jobs.map((job) => job.id)).toEqual(first.jobs.map((job) => job.id));
    const other = [image("k-2")];
    await expect(submitBatch(runtime, caller, other, apiLineRequest, idempotencyOf("bk", "POST /v1/batches", other))).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
  });

  it("the local operator's batch is its own tenant's, with no token", async () => {
    const batch = await submitBatch(runtime, LOCAL_CALLER, [image("local-1")], apiLineRequest);
    expect(batch.jobs[0]).toMatchObject({ tenant: LOCAL_CALLER.tenant, tokenId: null });
  });
});
