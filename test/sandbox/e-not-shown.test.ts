import { afterEach, describe, expect, it } from "vitest";
import { pngSize } from "../../src/sandbox/media/png.js";
import { createEEmulator, DEFAULT_E_CLIENT, E_REQUIRED_SCOPES, type EEmulator } from "../../src/sandbox/e/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

/**
 * spec E: "Other options … Their names, the fields of the fill, composite
 * and similar-image operations, and the custom-model field: not shown".
 * What a client sends beside the prompt is accepted (README "Where the spec
 * says 'not shown'").
 */

let sandbox: Sandbox | undefined;
let e: EEmulator;
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

const CLIENT_ID = DEFAULT_E_CLIENT.clientId;

async function start(): Promise<string> {
  e = createEEmulator({ requestsPerMinute: 100, renderMs: 5_000 });
  sandbox = await startSandbox({ providers: ["e"], emulators: { e: e } });
  const response = await fetch(`${sandbox.url}/e-auth/ims/token/v3`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: DEFAULT_E_CLIENT.clientSecret, scope: E_REQUIRED_SCOPES.join(",") }).toString(),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

describe("E: where the spec says 'not shown'", () => {
  it("E: a generate body with only a prompt and option names the spec does not show (style, structure, visualIntensity, negativePrompt) is accepted; it makes one 1024x1024 photo with a drawn seed", async () => {
    const accessToken = await start();
    const headers = { "x-api-key": CLIENT_ID, authorization: `Bearer ${accessToken}` };
    const body = {
      prompt: "a watercolour of a harbour",
      negativePrompt: "people",
      visualIntensity: 6,
      style: { presets: ["watercolor"], strength: 60 },
      structure: { strength: 40 },
      promptBiasingLocaleCode: "en-GB",
    };
    const answer = await fetch(`${sandbox!.url}/e/v3/images/generate-async`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(202);
    const { jobId, statusUrl } = (await answer.json()) as { jobId: string; statusUrl: string };
    expect(e.job(jobId)?.body).toEqual(body);

    sandbox!.clock.advance(5_000);
    const done = (await (await fetch(statusUrl, { headers })).json()) as {
      status: string;
      result: { size: { width: number; height: number }; contentClass: string; outputs: { seed: number; image: { url: string } }[] };
    };
    expect(done.status).toBe("succeeded");
    expect(done.result).toMatchObject({ size: { width: 1024, height: 1024 }, contentClass: "photo" });
    expect(done.result.outputs).toHaveLength(1);
    expect(Number.isInteger(done.result.outputs[0]!.seed)).toBe(true);
    const png = Buffer.from(await (await fetch(done.result.outputs[0]!.image.url)).arrayBuffer());
    expect(pngSize(png)).toEqual({ width: 1024, height: 1024 });
  });
});
