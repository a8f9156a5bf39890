import { createDEmulator, type DEmulator, type DEmulatorOptions, type DErrorBody } from "../../src/sandbox/d/index.js";
import { startSandbox, type Sandbox } from "../../src/sandbox/index.js";

/** Plain HTTP helpers for the D emulator's tests: what a client sends over loopback, nothing of our client. */

export const D_KEY = "sandbox-d-key";

export interface DSandbox {
  sandbox: Sandbox;
  d: DEmulator;
  /** The client's base URL, `{sandbox}/d`. */
  baseUrl: string;
}

export async function startD(options: DEmulatorOptions = {}, timeScale = 1): Promise<DSandbox> {
  const d = createDEmulator({ renderTimeMs: 10_000, ...options });
  const sandbox = await startSandbox({ providers: ["d"], emulators: { d: d }, timeScale });
  return { sandbox, d, baseUrl: `${sandbox.url}/d` };
}

export interface Answer<T> {
  status: number;
  body: T;
}

export interface SubmitBody {
  id: string;
  polling_url: string;
}

export interface PollBody {
  id: string;
  status: string;
  result?: { sample: string };
}

async function answer<T>(response: Response): Promise<Answer<T>> {
  return { status: response.status, body: (await response.json()) as T };
}

export async function submit(
  world: DSandbox,
  endpoint: string,
  body: unknown,
  headers: Record<string, string> = { "x-key": D_KEY },
): Promise<Answer<SubmitBody & DErrorBody>> {
  const response = await fetch(`${world.baseUrl}/v1/${endpoint}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return answer(response);
}

/** Submits and expects acceptance. */
export async function submitOk(world: DSandbox, endpoint: string, body: Record<string, unknown>): Promise<SubmitBody> {
  const { status, body: accepted } = await submit(world, endpoint, body);
  if (status !== 200) throw new Error(`submit answered ${status}: ${JSON.stringify(accepted)}`);
  return accepted;
}

export async function poll(pollingUrl: string, headers: Record<string, string> = { "x-key": D_KEY }): Promise<Answer<PollBody & DErrorBody>> {
  return answer(await fetch(pollingUrl, { headers }));
}

export const PROMPT = { prompt: "a lighthouse at dusk" };
