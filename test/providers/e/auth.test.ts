import { afterEach, describe, expect, it } from "vitest";
import { ProviderError } from "../../../src/core/errors.js";
import { eScopeList } from "../../../src/providers/e/index.js";
import { TransportError } from "../../../src/providers/http.js";
import { E_REQUIRED_SCOPES, type EEmulatorOptions } from "../../../src/sandbox/e/index.js";
import { providerError } from "../../helpers/errors.js";
import { CLIENT_ID, CLIENT_SECRET, generate, MINUTE, SANDBOX_SCOPE_NAMES, startE, thrown, type EWorld } from "./world.js";

let world: EWorld | undefined;

afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function start(options: EEmulatorOptions = {}): Promise<EWorld> {
  world = await startE(options);
  return world;
}

/** A token straight from the sandbox's token endpoint, for answers the tests forge. */
async function sandboxToken(w: EWorld): Promise<string> {
  const response = await fetch(`${w.sandbox.url}/e-auth/ims/token/v3`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, scope: E_REQUIRED_SCOPES.join(",") }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

describe("E client: token", () => {
  it("E: the token is a form-encoded client-credentials POST to {authUrl}/ims/token/v3 with the spec's six scopes, comma-separated", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    await adapter.submit(adapter.validate(generate()), context);
    const [tokenRequest] = w.tokenRequests();
    expect(tokenRequest).toMatchObject({ method: "POST", url: "/e-auth/ims/token/v3", statusCode: 200 });
    expect(tokenRequest!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    // Credentials travel in the form only, never in a header.
    expect(tokenRequest!.headers.authorization).toBeUndefined();
    // The sandbox issued it, so grant_type, client_id and client_secret were right; it records the scopes received.
    const [issued] = w.e.tokens();
    expect(issued!.scopes).toEqual(eScopeList(SANDBOX_SCOPE_NAMES));
    expect(eScopeList(SANDBOX_SCOPE_NAMES)).toEqual([...E_REQUIRED_SCOPES]);
    expect(eScopeList({ vendor: "V", service: "svc", serviceShort: "s" })).toEqual(["openid", "VID", "read_organizations", "svc_enterprise", "svc_api", "s_apis"]);
  });

  it("E: the scope list is configurable in full", async () => {
    const scopes = [...E_REQUIRED_SCOPES, "custom_scope"];
    const w = await start({ requiredScopes: scopes });
    const { adapter, context } = w.client({ scopes, scopeNames: undefined });
    await adapter.submit(adapter.validate(generate()), context);
    expect(w.e.tokens()[0]!.scopes).toEqual(scopes);
  });

  it("E: without a configured scope list no token is requested (the spec's vendor and service names are placeholders)", async () => {
    const w = await start();
    const { adapter, context } = w.client({ scopeNames: undefined });
    const error = await providerError(() => adapter.submit(adapter.validate(generate()), context));
    expect(error.code).toBe("not_configured");
    expect(error.message).toContain("MEDIAGATE_E_SCOPES");
    expect(error.detail).toMatchObject({ retryable: false, haltsProvider: true });
    expect(w.requests()).toHaveLength(0);
  });

  it("E: one token serves many calls: it is cached per adapter", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const job = await adapter.submit(adapter.validate(generate()), context);
    await adapter.submit(adapter.validate(generate({ prompt: "second" })), context);
    for (let poll = 0; poll < 3; poll++) await adapter.poll(job, context);
    expect(w.tokenRequests()).toHaveLength(1);
    expect(w.e.tokens()).toHaveLength(1);
    const token = w.e.tokens()[0]!.accessToken;
    for (const entry of w.requests().filter((request) => !request.url.startsWith("/e-auth/"))) {
      expect(entry.headers.authorization).toBe(`Bearer ${token}`);
    }
    // A second adapter is a second cache.
    const other = w.client();
    await other.adapter.poll(job, other.context);
    expect(w.tokenRequests()).toHaveLength(2);
  });

  it("E: concurrent callers share one token request", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const jobs = await Promise.all([1, 2, 3, 4].map((index) => adapter.submit(adapter.validate(generate({ prompt: `boat ${index}` })), context)));
    expect(new Set(jobs.map((job) => job.providerJobId)).size).toBe(4);
    expect(w.tokenRequests()).toHaveLength(1);
  });

  it("E: the token is refreshed before it expires (expires_in, less a margin), never after a 401", async () => {
    const w = await start({ tokenLifetimeSeconds: 3_600 });
    const { adapter, context } = w.client();
    const job = await adapter.submit(adapter.validate(generate()), context);
    w.advance(50 * MINUTE);
    await adapter.poll(job, context);
    expect(w.tokenRequests()).toHaveLength(1);
    // Four minutes before expiry: inside the five-minute margin, so a fresh token is fetched first.
    w.advance(6 * MINUTE);
    await adapter.poll(job, context);
    expect(w.tokenRequests()).toHaveLength(2);
    expect(w.requests().filter((entry) => entry.statusCode === 401)).toHaveLength(0);
    expect(w.statusReads().at(-1)!.headers.authorization).toBe(`Bearer ${w.e.tokens()[1]!.accessToken}`);
  });

  it("E: a token answer without expires_in (lifetime not shown) is assumed to last one hour", async () => {
    const w = await start();
    const token = await sandboxToken(w);
    w.sandbox.injectFault({ provider: "e", method: "POST", path: /^\/e-auth\//, fault: { kind: "status", status: 200, body: { access_token: token } }, times: 1 });
    const { adapter, context } = w.client();
    // The forged answer is the adapter's first token request (the sandbox's own fetch above is one more in the log).
    const job = await adapter.submit(adapter.validate(generate()), context);
    w.advance(50 * MINUTE);
    await adapter.poll(job, context);
    expect(w.tokenRequests()).toHaveLength(2);
    w.advance(6 * MINUTE);
    await adapter.poll(job, context);
    expect(w.tokenRequests()).toHaveLength(3);
  });

  it("E: a 401 replaces the token once and repeats the call once", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const job = await adapter.submit(adapter.validate(generate()), context);
    w.e.expireTokens();
    expect(await adapter.poll(job, context)).toMatchObject({ kind: "pending", providerStatus: "running" });
    expect(w.statusReads().map((entry) => entry.statusCode)).toEqual([401, 200]);
    expect(w.tokenRequests()).toHaveLength(2);
    expect(w.statusReads()[1]!.headers.authorization).toBe(`Bearer ${w.e.tokens()[1]!.accessToken}`);
  });

  it("E: concurrent calls answered 401 share one replacement token", async () => {
    const w = await start();
    const { adapter, context } = w.client();
    const first = await adapter.submit(adapter.validate(generate()), context);
    const second = await adapter.submit(adapter.validate(generate({ prompt: "two" })), context);
    w.e.expireTokens();
    await Promise.all([adapter.poll(first, context), adapter.poll(second, context)]);
    expect(w.tokenRequests()).toHaveLength(2);
  });

  it("E: a second 401 after a fresh token fails unauthorized instead of looping", async () => {
    const w = await start();
    w.e.injectV4Error(401, 2);
    const { adapter, context } = w.client();
    const error = await providerError(() => adapter.submit(adapter.validate(generate({}, { model: "v4" })), context));
    expect(error.code).toBe("unauthorized");
    expect(error.detail).toMatchObject({ httpStatus: 401, retryable: false });
    expect(error.detail.rawBody).toContain("unauthorized");
    expect(w.submits()).toHaveLength(2);
    expect(w.tokenRequests()).toHaveLength(2);
  });

  it("E: a refused client secret fails auth_failed, halts E, and the secret is never in the error", async () => {
    const w = await start();
    // E echoing the secret back is not shown, but must not leak it; the HTTP layer here redacts nothing, so the adapter must.
    const body = { error: "invalid_client", error_description: `client_secret ${CLIENT_SECRET} is not valid` };
    w.sandbox.injectFault({ provider: "e", path: /^\/e-auth\//, fault: { kind: "status", status: 401, body }, times: 1 });
    const { adapter, context } = w.client({}, { secrets: () => [] });
    const error = await providerError(() => adapter.submit(adapter.validate(generate()), context));
    expect(error.code).toBe("auth_failed");
    expect(error.detail).toMatchObject({ httpStatus: 401, haltsProvider: true, retryable: false });
    expect(`${error.message} ${error.detail.rawBody}`).not.toContain(CLIENT_SECRET);
    expect(error.detail.rawBody).toContain("[redacted]");
    expect(w.submits()).toHaveLength(0);

    const wrong = w.client({ clientSecret: "not-the-secret" }, { secrets: () => [] });
    const refused = await providerError(() => wrong.adapter.submit(wrong.adapter.validate(generate()), wrong.context));
    expect(refused.code).toBe("auth_failed");
    expect(`${refused.message} ${refused.detail.rawBody}`).not.toContain("not-the-secret");
  });

  it("E: the access token is never in an error, even when E echoes it; adapter.secrets() holds it for the engine's redaction", async () => {
    const w = await start();
    const { adapter, context } = w.client({}, { secrets: () => [] });
    const job = await adapter.submit(adapter.validate(generate()), context);
    const token = w.e.tokens()[0]!.accessToken;
    expect(adapter.secrets()).toEqual(expect.arrayContaining([CLIENT_SECRET, token]));
    w.sandbox.injectFault({ provider: "e", method: "GET", fault: { kind: "status", status: 400, body: { message: `Bearer ${token} may not read this` } }, times: 1 });
    const error = await providerError(() => adapter.poll(job, context));
    expect(error.code).toBe("provider_rejected");
    expect(`${error.message} ${error.detail.rawBody}`).not.toContain(token);
    expect(error.message).toContain("[redacted]");
  });

  it("E: a token request lost on the network means the submit was not sent", async () => {
    const w = await start();
    w.sandbox.injectFault({ provider: "e", path: /^\/e-auth\//, fault: { kind: "drop" } });
    const { adapter, context } = w.client({}, { maxAttempts: 1 });
    const error = await thrown(() => adapter.submit(adapter.validate(generate()), context));
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).maybeSent).toBe(false);
    expect(w.submits()).toHaveLength(0);
    expect(error).not.toBeInstanceOf(ProviderError);
  });
});
