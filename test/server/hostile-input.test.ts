import { afterEach, describe, expect, it } from "vitest";
import { serveSandbox, type Served } from "../helpers/dashboard.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(): Promise<Served> {
  const served = await serveSandbox({ engine: false });
  cleanups.push(() => served.close());
  return served;
}

/** POSTs `text` as it is (no re-encoding by a JSON library) and reads the JSON answer. */
async function post(served: Served, path: string, text: string | Buffer, contentType = "application/json"): Promise<{ status: number; body: any }> {
  const response = await fetch(`${served.url}${path}`, { method: "POST", headers: { "content-type": contentType }, body: text });
  return { status: response.status, body: await response.json() };
}

/** `{"a": {"a": … 1 …}}`, `depth` objects deep. */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/** A D request whose input holds `deep` as its `deep` field. */
function deepRequest(ref: string, deep: string): string {
  return `{"ref": "${ref}", "provider": "d", "model": "gen-2-pro", "input": {"prompt": "a lighthouse", "width": 512, "height": 512, "deep": ${deep}}}`;
}

describe("mediagate serve: hostile input is refused before anything is stored (real HTTP, SQLite)", () => {
  it("POST /v1/jobs: an input nested 5,000 (or 3,000) deep is 422 invalid_input naming input and the limit of 64 levels, not a 500; nothing is stored", async () => {
    const served = await serve();
    for (const depth of [5_000, 3_000, 63]) {
      const answer = await post(served, "/v1/jobs", deepRequest(`deep-${depth}`, nested(depth)));
      expect(answer.status, JSON.stringify(answer.body)).toBe(422);
      expect(answer.body.error).toEqual({ code: "invalid_input", field: "input", message: `input: is nested ${depth + 2} levels deep (allowed: at most 64 levels of objects and arrays, counted from the outermost)` });
    }
    expect((await post(served, "/v1/quote", deepRequest("q", nested(5_000)))).body.error.field).toBe("input");
    // 62 levels inside input, 64 in all: taken.
    expect((await post(served, "/v1/jobs", deepRequest("deep-62", nested(62)))).status).toBe(201);
    expect((await (await served.runtime.store()).listJobs({})).map((job) => job.ref)).toEqual(["deep-62"]);
  });

  it("POST /v1/batches: a request nested too deep, as a JSON array's element or a JSON line, or a line over 1 MiB, is 422 naming its line; nothing is stored", async () => {
    const served = await serve();
    const good = deepRequest("fine", nested(2));
    const array = await post(served, "/v1/batches", `[${good}, ${deepRequest("deep", nested(5_000))}]`);
    expect(array.status).toBe(422);
    expect(array.body.error.targets).toEqual([{ target: "line 2", reasons: ["input: is nested 5002 levels deep (below the array) (allowed: at most 64 levels of objects and arrays, counted from the outermost)"] }]);
    const huge = deepRequest("huge", JSON.stringify("x".repeat(1_100_000)));
    const lines = await post(served, "/v1/batches", [good, deepRequest("deep", nested(5_000)), huge].join("\n"), "application/x-ndjson");
    expect(lines.status).toBe(422);
    expect(lines.body.error.targets.map((target: { target: string }) => target.target)).toEqual(["line 2", "line 3"]);
    expect(lines.body.error.targets[0].reasons[0]).toMatch(/^input: is nested 5002 levels deep/);
    expect(lines.body.error.targets[1].reasons[0]).toMatch(/^line: is 1100\d+ bytes of JSON \(allowed: at most 1048576 bytes \(1 MiB\) of JSON\)$/);
    const arrayHuge = await post(served, "/v1/batches", `[${good}, ${huge}]`);
    expect(arrayHuge.body.error.targets).toEqual([{ target: "line 2", reasons: [expect.stringMatching(/^line: is 1100\d+ bytes of JSON/)] }]);
    expect((await post(served, "/v1/plan", `[${deepRequest("deep", nested(100))}]`)).status).toBe(422);
    expect(await (await served.runtime.store()).listJobs({})).toEqual([]);
  });

  it("POST /v1/jobs: a ref with a lone surrogate (a\\ud800b) is 422 naming ref, so two different refs never name one job; a prompt, a native field, a notify_url and a common request's model likewise, each naming its field", async () => {
    const served = await serve();
    const lighthouse = '"provider": "d", "model": "gen-2-pro", "input": {"prompt": "a lighthouse", "width": 512, "height": 512}';
    for (const [ref, unit] of [["a\\ud800b", "D800"], ["a\\udc00b", "DC00"]]) {
      const answer = await post(served, "/v1/jobs", `{"ref": "${ref}", ${lighthouse}}`);
      expect(answer.status).toBe(422);
      expect(answer.body.error).toMatchObject({ code: "invalid_input", field: "ref", message: expect.stringContaining(`ref: "${ref}" holds a lone surrogate U+${unit} at position 2, which is not a character`) });
    }
    const cases: Array<[string, string]> = [
      ['{"provider": "d", "model": "gen-2-pro", "input": {"prompt": "a light\\ud800house", "width": 512, "height": 512}}', "input.prompt"],
      ['{"provider": "d", "model": "gen-2-pro", "input": {"prompt": "x", "width": 512, "height": 512, "style": ["ok", "\\udfff"]}}', "input.style[1]"],
      ['{"provider": "d", "model": "gen-2-pro", "input": {"prompt": "x", "width": 512, "height": 512, "b\\ud800": 1}}', "input (a key)"],
      [`{"notify_url": "https://hooks.example/\\ud800", ${lighthouse}}`, "notify_url"],
      ['{"task": "image", "prompt": "a fox\\ud800", "size": "512x512", "model": "d/gen-2-pro"}', "prompt"],
      ['{"task": "image", "prompt": "a fox", "size": "512x512", "route": ["d/gen-2-pro\\ud800"]}', "route[0]"],
    ];
    for (const [body, field] of cases) {
      const answer = await post(served, "/v1/jobs", body);
      expect(answer.status, body).toBe(422);
      expect(answer.body.error, body).toMatchObject({ code: "invalid_input", field, message: expect.stringMatching(/holds a lone surrogate U\+D[8-F][0-9A-F]{2} at position \d+, which is not a character \(allowed: well-formed Unicode text/) });
    }
    const batch = await post(served, "/v1/batches", `{"ref": "fine", ${lighthouse}}\n{"ref": "b\\ud800", ${lighthouse}}`, "application/x-ndjson");
    expect(batch.status).toBe(422);
    expect(batch.body.error.targets).toEqual([{ target: "line 2", reasons: [expect.stringMatching(/^ref: "b\\ud800" holds a lone surrogate U\+D800 at position 2/)] }]);
    // Bytes that are not UTF-8 would be read as U+FFFD: refused, not changed.
    const bytes = Buffer.concat([Buffer.from(`{"ref": "c`), Buffer.from([0xff]), Buffer.from(`", ${lighthouse}}`)]);
    const notUtf8 = await post(served, "/v1/jobs", bytes);
    expect(notUtf8.status).toBe(400);
    expect(notUtf8.body.error).toEqual({ code: "invalid_json", message: "the body is not UTF-8 text (JSON is UTF-8, RFC 8259 §8.1)" });
    expect(await (await served.runtime.store()).listJobs({})).toEqual([]);
  });
});
