import { afterEach, describe, expect, it } from "vitest";
import { pngSize } from "../../src/sandbox/media/png.js";
import { createFEmulator, type FEmulator } from "../../src/sandbox/f/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

/**
 * Where spec F shows no value set or default, the emulator accepts what a
 * client plausibly sends (README "Where the spec says 'not shown'").
 */

const API_KEY = "sandbox-f-key";

let sandbox: Sandbox | undefined;
let f: FEmulator;
afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
});

async function start(): Promise<void> {
  f = createFEmulator({ renderMs: 0 });
  sandbox = await startSandbox({ providers: ["f"], emulators: { f: f } });
}

async function generate(fields: Record<string, string>): Promise<Response> {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  return fetch(`${sandbox!.url}/f/v1/img-v3/async/generate`, { method: "POST", headers: { "Api-Key": API_KEY }, body });
}

async function payload(id: string): Promise<{ data: Array<{ url: string; resolution: string }> }> {
  const read = await fetch(`${sandbox!.url}/f/v1/generations/${id}`, { headers: { "Api-Key": API_KEY } });
  return (await read.json()) as { data: Array<{ url: string; resolution: string }> };
}

describe("F: where the spec says 'not shown'", () => {
  it("F: resolution values are not shown, so the sizes real clients send (multiples of 16, such as 1312x736 and 1536x640) are accepted and rendered", async () => {
    await start();
    for (const resolution of ["1312x736", "1536x640", "736x1312"]) {
      const answer = await generate({ text_prompt: "a kite over dunes", resolution });
      expect(answer.status).toBe(200);
      const { generation_id: id } = (await answer.json()) as { generation_id: string };
      const [image] = (await payload(id)).data;
      expect(image!.resolution).toBe(resolution);
      const png = Buffer.from(await (await fetch(image!.url)).arrayBuffer());
      const [width, height] = resolution.split("x").map(Number);
      expect(pngSize(png)).toEqual({ width, height });
    }
  });

  it("F: without resolution, rendering_speed or webhook_url the generation is 1024x1024 at DEFAULT speed, read by polling", async () => {
    await start();
    const answer = await generate({ text_prompt: "a kite over dunes" });
    expect(answer.status).toBe(200);
    const { generation_id: id } = (await answer.json()) as { generation_id: string };
    expect(f.generation(id)).toMatchObject({ renderingSpeed: "DEFAULT", resolution: "1024x1024" });
    expect(f.generation(id)?.webhookUrl).toBeUndefined();
    expect((await payload(id)).data[0]!.resolution).toBe("1024x1024");
  });

  it("F: fields the spec does not show (aspect_ratio, magic_prompt, style_type) are accepted, ignored and kept", async () => {
    await start();
    const answer = await generate({ text_prompt: "a kite", aspect_ratio: "16x9", magic_prompt: "AUTO", style_type: "GENERAL" });
    expect(answer.status).toBe(200);
    const { generation_id: id } = (await answer.json()) as { generation_id: string };
    expect(f.generation(id)?.fields).toMatchObject({ aspect_ratio: "16x9", magic_prompt: "AUTO", style_type: "GENERAL" });
  });
});
