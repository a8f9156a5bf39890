import type { ChildProcess } from "node:child_process";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { collect, startCli, type CliResult } from "../helpers/cli.js";
import { type DWorld, startDWorld } from "../helpers/d-sandbox.js";
import { until } from "../helpers/until.js";

let world: DWorld | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await world?.close();
  world = undefined;
});

interface Running {
  url: string;
  /** serve's start line: its engine's owner name, or null with --no-engine. */
  engine: string | null;
  port: number;
  done: Promise<CliResult>;
  /** What it wrote to stderr so far. */
  stderr(): string;
  child: ChildProcess;
}

/** Starts `mediagate ARGS --json` and waits for its first stdout line (serve's address). */
async function startServe(args: string[], env: Record<string, string>): Promise<Running> {
  const child = startCli([...args, "--json"], { env });
  children.push(child);
  const done = collect(child, 60_000);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  await until(() => stdout.includes("\n") || child.exitCode !== null, "serve to print its address", 30_000);
  if (!stdout.includes("\n")) throw new Error(`serve did not start: ${stderr}`);
  const { url, engine } = JSON.parse(stdout.split("\n")[0]!) as { url: string; engine: string | null };
  return { url, engine, port: Number(new URL(url).port), done, stderr: () => stderr, child };
}

async function api(url: string, method: string, path: string, options: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...(options.body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (response.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text };
}

function connectable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

const lighthouse = { provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 256, height: 256 } };

describe("mediagate serve as a process: --no-engine and SIGTERM", { timeout: 90_000 }, () => {
  it("serve --no-engine answers the API while a job it queued stays queued and unsent; a worker on the same store runs it, and the API then shows it succeeded", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const serve = await startServe(["serve", "--port", "0", "--no-engine"], world.env);
    expect(serve.engine).toBeNull();
    const created = await api(serve.url, "POST", "/v1/jobs", { body: { ref: "api-only", ...lighthouse } });
    expect(created.status).toBe(201);
    expect(created.body.state).toBe("queued");
    expect((await api(serve.url, "GET", "/readyz")).body).toEqual({ ready: true, store: "ok", engine: "none", reasons: [] });
    for (let request = 0; request < 5; request++) {
      expect((await api(serve.url, "GET", `/v1/jobs/${created.body.id}`)).body).toMatchObject({ state: "queued", provider_job_id: null });
      expect((await api(serve.url, "GET", "/v1/jobs")).status).toBe(200);
    }
    const scrape = (await api(serve.url, "GET", "/metrics")).body as string;
    expect(scrape).toContain('mediagate_jobs{provider="d",state="queued"} 1');
    expect(scrape).not.toMatch(/mediagate_provider_step_duration_seconds_count\{/);
    expect(world.submits()).toBe(0);

    const worker = startCli(["worker"], { env: world.env });
    children.push(worker);
    const workerDone = collect(worker, 60_000);
    await until(async () => (await api(serve.url, "GET", `/v1/jobs/${created.body.id}`)).body.state === "succeeded", "the worker to run the job", 30_000);
    expect(world.submits()).toBe(1);
    worker.kill("SIGTERM");
    expect((await workerDone).code).toBe(0);
    serve.child.kill("SIGTERM");
    const result = await serve.done;
    expect(result.code, result.stderr).toBe(0);
  });

  it("SIGTERM with a request in flight: serve stops accepting connections, the request (its body still arriving) is answered, it exits 0 within its stop timeout; the request's log line names the token, never its secret", async () => {
    world = await startDWorld({ renderTimeMs: 200 });
    const store = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
    const { secret } = await createToken(store, { name: "deployer", now: Date.now() });
    await store.close();
    const serve = await startServe(["serve", "--port", "0", "--log-level", "info", "--stop-timeout", "15"], world.env);
    expect(serve.engine).toMatch(/^mg:/);

    // A client on a slow link: the headers, with Expect: 100-continue so the server says when it holds the request, then the body later.
    const body = Buffer.from(JSON.stringify({ ref: "in-flight", ...lighthouse }));
    const socket: Socket = connect(serve.port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(
      [`POST /v1/jobs HTTP/1.1`, `host: 127.0.0.1:${serve.port}`, `authorization: Bearer ${secret}`, "content-type: application/json", `content-length: ${body.length}`, "expect: 100-continue", "", ""].join("\r\n"),
    );
    await until(() => received.startsWith("HTTP/1.1 100 Continue"), "the server to take the request");

    serve.child.kill("SIGTERM");
    await until(() => serve.stderr().includes("mediagate serve: stopping"), "serve to start stopping");
    await until(async () => !(await connectable(serve.port)), "serve to stop accepting connections");
    // Written, not ended: a client that half-closes its side is aborted by Node's HTTP server, shutdown or not.
    socket.write(body);
    // Answered with Connection: close, so the connection ends with the answer instead of holding the close.
    await closed;
    const answer = received.slice(received.indexOf("\r\n\r\n") + 4);
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    expect(answer.toLowerCase()).toContain("connection: close");
    const json = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { ref: string; state: string };
    expect(json).toMatchObject({ ref: "in-flight", state: "queued" });

    const result = await serve.done;
    expect(result.signal).toBeNull();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/mediagate serve: stopped; leases released/);
    const line = result.stderr
      .split("\n")
      .filter((text) => text.startsWith("{"))
      .map((text) => JSON.parse(text) as Record<string, unknown>)
      .find((entry) => entry.msg === "api request");
    expect(line).toMatchObject({ method: "POST", path: "/v1/jobs", status: 201, caller: "deployer" });
    expect(result.stderr).not.toContain(secret.slice("mg_".length));
    expect(result.stderr.toLowerCase()).not.toContain("authorization");
    // Nothing was sent: the engine stopped claiming when the signal came, so the job waits for the next engine.
    const after = await openSqliteStore(world.env.MEDIAGATE_STORE!.slice("sqlite:".length));
    const [job] = await after.listJobs();
    await after.close();
    expect(job).toMatchObject({ ref: "in-flight", state: "queued", leaseOwner: null });
  });
});
