import { createServer, type IncomingMessage, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { redactUrl } from "../../src/core/redact.js";
import { notifyUrlRedactor, shownEvents } from "../../src/app/notify-urls.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { newDJob, tempDir } from "../helpers/stores.js";
import { serveSandbox, servedStores, type Served } from "../helpers/dashboard.js";
import { until } from "../helpers/until.js";

/**
 * A notify URL often carries the receiver's token in its path or query
 * (https://hooks.example/T0123/secret-token): it is delivered to whole, and
 * shown nowhere but as scheme and host, in events, API answers and pages.
 */

const SECRET = `whsec_${Buffer.from("notify-urls-test-secret-32-bytes").toString("base64")}`;
const lighthouse = { provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse", width: 512, height: 512 } };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A receiver on loopback that records the path and query of every POST and answers 200. */
async function receiver(): Promise<{ port: number; paths: string[] }> {
  const paths: string[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    paths.push(request.url ?? "");
    request.resume().on("end", () => response.writeHead(200).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { port: (server.address() as { port: number }).port, paths };
}

async function get(served: Served, path: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${served.url}${path}`);
  return { status: response.status, text: await response.text() };
}

describe("redactUrl and the notify URL redactor", () => {
  it("redactUrl keeps scheme, host and port; a path, query, fragment or user part becomes [redacted]; text that is not a URL is redacted whole", () => {
    expect(redactUrl("https://hooks.example/T0123/secret-token")).toBe("https://hooks.example/[redacted]");
    expect(redactUrl("https://hooks.example:8443/?token=abc")).toBe("https://hooks.example:8443/[redacted]");
    expect(redactUrl("https://user:pass@hooks.example/x#frag")).toBe("https://[redacted]@hooks.example/[redacted]");
    expect(redactUrl("https://hooks.example/")).toBe("https://hooks.example/");
    expect(redactUrl("https://hooks.example")).toBe("https://hooks.example/");
    expect(redactUrl("not a url /secret")).toBe("[redacted]");
    // A user alone or a password alone is a user part too; a URL without a host shows its scheme only.
    expect(redactUrl("https://user@hooks.example/")).toBe("https://[redacted]@hooks.example/");
    expect(redactUrl("https://:pass@hooks.example/")).toBe("https://[redacted]@hooks.example/");
    expect(redactUrl("mailto:ops@hooks.example")).toBe("mailto:[redacted]");
  });

  it("the redactor replaces a URL written whole and as events written before it showed it (origin and path, query cut to ?…), once, and leaves other text and text already redacted alone", () => {
    const redact = notifyUrlRedactor(["https://hooks.example/T0123/secret-token?key=abc", null, "https://other.example/?k=1"]);
    expect(redact("to https://hooks.example/T0123/secret-token?key=abc now")).toBe("to https://hooks.example/[redacted] now");
    expect(redact("delivered to https://hooks.example/T0123/secret-token?… (attempt 1)")).toBe("delivered to https://hooks.example/[redacted] (attempt 1)");
    expect(redact("url: https://hooks.example/T0123/secret-token")).toBe("url: https://hooks.example/[redacted]");
    expect(redact("https://other.example/?… and https://other.example/[redacted]")).toBe("https://other.example/[redacted] and https://other.example/[redacted]");
    expect(redact("https://hooks.example/[redacted] and https://hooks.example/ stay")).toBe("https://hooks.example/[redacted] and https://hooks.example/ stay");
    expect(notifyUrlRedactor([])("nothing https://x.example/a")).toBe("nothing https://x.example/a");
    // One URL's path a prefix of another's: the longer is matched first, so no part of it is left showing; every
    // occurrence is replaced.
    const nested = notifyUrlRedactor(["https://h.example/a", "https://h.example/a/b?t=s3cr3t"]);
    expect(nested("to https://h.example/a/b?t=s3cr3t, then https://h.example/a/b?t=s3cr3t and https://h.example/a")).toBe(
      "to https://h.example/[redacted], then https://h.example/[redacted] and https://h.example/[redacted]",
    );
  });
});

describe("shownEvents", () => {
  it("hides a URL the job was notified at under an earlier MEDIAGATE_NOTIFY_URL, known only from its notification now that the variable changed", async () => {
    const folder = tempDir();
    const store = await openSqliteStore(`${folder.path}/events.db`);
    try {
      const earlier = "https://hooks.example/T0123/earlier-token";
      store.setNotificationPolicy({ defaultUrl: earlier, events: "terminal" });
      await store.insertJobs([newDJob("told")], 1_000);
      const job = (await store.transition("job_told", { state: "queued" }, "cancelled", { reason: "cancelled by the user" }, "cancelled by the user", 2_000))!;
      const [owed] = await store.claimDueNotifications(3_000, 1, 60_000);
      await store.recordNotificationAttempt({ id: owed!.id, attempt: 1, at: 3_100, status: 200, error: null, outcome: { kind: "delivered" }, event: { reason: `delivered to ${earlier}`, detail: null } });
      const events = await shownEvents(store, job, "https://hooks.example/now/current-token");
      expect(events.at(-1)!.reason).toBe("delivered to https://hooks.example/[redacted]");
      expect(JSON.stringify(events)).not.toContain("earlier-token");
    } finally {
      await store.close();
      folder.remove();
    }
  });
});

for (const kind of servedStores) {
  describe(`mediagate serve: a notify URL's token is shown nowhere (${kind.name})`, () => {
    it("a job's notify_url (and MEDIAGATE_NOTIFY_URL) is delivered to whole, path and query; its events, the API's job and the dashboard's page show scheme and host only", async () => {
      const hooks = await receiver();
      const own = `http://127.0.0.1:${hooks.port}/T0123/secret-token?key=q-secret`;
      const fallback = `http://127.0.0.1:${hooks.port}/default/fallback-token`;
      const served = await serveSandbox({ store: kind, env: { MEDIAGATE_NOTIFY_SECRET: SECRET, MEDIAGATE_NOTIFY_URL: fallback, MEDIAGATE_ALLOW_PRIVATE_URLS: "1" } });
      cleanups.push(() => served.close());
      const shown = `http://127.0.0.1:${hooks.port}/[redacted]`;

      const created = await fetch(`${served.url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ref: "hooked", notify_url: own, ...lighthouse }) });
      expect(created.status).toBe(201);
      const job = (await created.json()) as { id: string; notify_url: string };
      expect(job.notify_url).toBe(shown);
      const plain = (await (await fetch(`${served.url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ref: "by-default", ...lighthouse }) })).json()) as { id: string; notify_url: string | null };
      expect(plain.notify_url).toBeNull();

      const store = await served.runtime.store();
      await until(async () => {
        const notifications = [...(await store.notifications(job.id)), ...(await store.notifications(plain.id))];
        return notifications.length === 2 && notifications.every((notification) => notification.deliveredAt !== null);
      }, "both notifications to be delivered", 20_000);
      // Delivered whole: the receiver's path and query, as given.
      expect(hooks.paths.sort()).toEqual(["/T0123/secret-token?key=q-secret", "/default/fallback-token"]);
      expect((await store.notifications(job.id))[0]!.url).toBe(own);
      expect((await store.getJob(job.id))!.notifyUrl).toBe(own);

      const secrets = ["T0123", "secret-token", "q-secret", "fallback-token"];
      const answers = [
        await get(served, `/v1/jobs/${job.id}`),
        await get(served, `/v1/jobs/${job.id}/events`),
        await get(served, `/v1/jobs/${plain.id}/events`),
        await get(served, "/v1/jobs"),
        await get(served, `/jobs/${job.id}`),
        await get(served, `/jobs/${plain.id}`),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        for (const secret of secrets) expect(answer.text).not.toContain(secret);
      }
      const events = JSON.parse(answers[1]!.text) as { events: Array<{ reason: string; detail: { url?: string } | null }> };
      const delivered = events.events.find((event) => event.reason.includes("delivered"))!;
      expect(delivered.reason).toContain(`delivered to ${shown} (attempt 1`);
      expect(delivered.detail!.url).toBe(shown);
      expect(answers[4]!.text).toContain(`delivered to ${shown} (attempt 1`);
      for (const secret of secrets) expect(served.logLines.join("")).not.toContain(secret);
    });

    it("events recorded before the redaction (the URL's path shown, its query cut) are shown redacted by the API and the dashboard", async () => {
      // No name is looked up here (the machine may have no resolver): the URL rule is relaxed, as for a local set-up.
      const served = await serveSandbox({ store: kind, engine: false, env: { MEDIAGATE_ALLOW_PRIVATE_URLS: "1" } });
      cleanups.push(() => served.close());
      const own = "https://hooks.example/T0123/secret-token?key=q-secret";
      const created = await fetch(`${served.url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ref: "older", notify_url: own, ...lighthouse }) });
      expect(created.status).toBe(201);
      const job = (await created.json()) as { id: string };
      const store = await served.runtime.store();
      // Cancelled: the job owes its notification; one attempt is recorded as the engine wrote it before.
      await store.transition(job.id, { state: "queued" }, "cancelled", {}, "cancelled", Date.now());
      const [claimed] = await store.claimDueNotifications(Date.now() + 1, 1, 60_000);
      const before = "https://hooks.example/T0123/secret-token?…";
      const recorded = await store.recordNotificationAttempt({
        id: claimed!.id,
        attempt: 1,
        at: Date.now(),
        status: 500,
        error: "http_500",
        outcome: { kind: "retry", nextAttemptAt: Date.now() + 30_000 },
        event: { reason: `notification job.cancelled (${claimed!.id}) attempt 1 to ${before} failed (HTTP 500, 12 ms); next attempt in 30 s`, detail: { notification: claimed!.id, url: before, attempt: 1 } },
      });
      expect(recorded).toBe(true);
      for (const path of [`/v1/jobs/${job.id}/events`, `/jobs/${job.id}`]) {
        const answer = await get(served, path);
        expect(answer.status).toBe(200);
        expect(answer.text).not.toContain("secret-token");
        expect(answer.text).not.toContain("T0123");
        expect(answer.text).toContain("attempt 1 to https://hooks.example/[redacted] failed (HTTP 500");
      }
    });

    it("a notify_url the URL rule refuses is 422 naming the field, its message quoting the URL without its path, query or user part", async () => {
      const served = await serveSandbox({ store: kind, engine: false });
      cleanups.push(() => served.close());
      for (const notifyUrl of ["https://169.254.169.254/T0123/secret-token?key=q-secret", "https://user:pa55word@hooks.example/T0123", "ftp://hooks.example/T0123/secret-token"]) {
        const answer = await fetch(`${served.url}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ notify_url: notifyUrl, ...lighthouse }) });
        expect(answer.status).toBe(422);
        const body = (await answer.json()) as { error: { code: string; field: string; message: string } };
        expect(body.error).toMatchObject({ code: "invalid_input", field: "notify_url" });
        expect(body.error.message).toContain(redactUrl(notifyUrl));
        for (const secret of ["T0123", "secret-token", "q-secret", "pa55word"]) expect(body.error.message).not.toContain(secret);
      }
    });
  });
}
