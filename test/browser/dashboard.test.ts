import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createToken } from "../../src/app/tokens.js";
import { serveSandbox, servedStores, type Served } from "../helpers/dashboard.js";

/** Debian's chromium: `.ci/run` installs it (apt-get install -y chromium) when missing. Never downloaded by a test. */
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"];
const RESULTS = fileURLToPath(new URL("../../test-results/", import.meta.url));

// What the functions run in the page read of its DOM: the project compiles without the DOM library.
declare const document: { activeElement: { id: string; textContent: string | null } | null; documentElement: { scrollWidth: number } };
declare const window: { sameDocument?: boolean };
declare function getComputedStyle(element: unknown): { outlineStyle: string };
interface ImageElement {
  complete: boolean;
  naturalWidth: number;
}
interface VideoElement {
  muted: boolean;
  ended: boolean;
  duration: number;
  currentTime: number;
  videoWidth: number;
  readyState: number;
  error: { code: number; message: string } | null;
  play(): Promise<void>;
  addEventListener(event: string, listener: () => void): void;
}

let browser: Browser;
let served: Served | undefined;
let context: BrowserContext | undefined;

/**
 * Like the PostgreSQL tests without DATABASE_URL: on a machine without the browser (a fresh one running
 * `npm ci && npm test`), these are skipped with a line saying so; `.ci/run` installs chromium and sets
 * MEDIAGATE_REQUIRE_BROWSER_TESTS=1, under which a missing browser fails instead.
 */
const browserPresent = existsSync(CHROMIUM);
if (!browserPresent && process.env.MEDIAGATE_REQUIRE_BROWSER_TESTS !== "1") {
  console.warn(`${CHROMIUM} is not installed: the dashboard's browser tests are skipped (apt-get install -y chromium; .ci/run does it)`);
}

beforeAll(async () => {
  if (!browserPresent) {
    if (process.env.MEDIAGATE_REQUIRE_BROWSER_TESTS === "1") throw new Error(`the dashboard's browser tests need Debian's chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does this when it is missing)`);
    return;
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
  mkdirSync(RESULTS, { recursive: true });
});

afterEach(async () => {
  await context?.close();
  context = undefined;
  await served?.close();
  served = undefined;
});

afterAll(async () => {
  await browser?.close();
});

/** A server on the sandbox, a token named alice, and a fresh browser context at `width` px. */
async function start(width = 1280): Promise<{ served: Served; secret: string; page: Page }> {
  served = await serveSandbox();
  const { secret } = await createToken(await served.runtime.store(), { name: "alice", now: Date.now() });
  context = await browser.newContext({ viewport: { width, height: 900 } });
  context.setDefaultTimeout(15_000);
  return { served, secret, page: await context.newPage() };
}

/** Logs in through the form with the keyboard only: Tab to the token field, type, Enter. */
async function logIn(page: Page, url: string, secret: string): Promise<void> {
  await page.goto(`${url}/`);
  await page.waitForURL(`${url}/login?next=%2F`);
  for (let presses = 0; presses < 6; presses++) {
    if ((await page.evaluate(() => document.activeElement?.id)) === "token") break;
    await page.keyboard.press("Tab");
  }
  expect(await page.evaluate(() => document.activeElement?.id)).toBe("token");
  await page.keyboard.type(secret);
  await page.keyboard.press("Enter");
  await page.waitForURL(`${url}/`);
}

/** Queues a job through the API as alice. */
async function queueByApi(url: string, secret: string, body: unknown): Promise<string> {
  const response = await fetch(`${url}/v1/jobs`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

describe.skipIf(!browserPresent && process.env.MEDIAGATE_REQUIRE_BROWSER_TESTS !== "1")("the dashboard in Debian's chromium (real server, sandbox)", () => {
  it("Browser: log in with the keyboard, quote and send a D job from the form, watch its row turn succeeded live (no reload), open it and see the image; screenshots of the dashboard and the job page", async () => {
    const { served, secret, page } = await start();
    await logIn(page, served.url, secret);
    await page.getByRole("link", { name: "New job" }).click();
    const native = page.getByRole("region", { name: "Native request" });
    await native.getByLabel("Provider", { exact: true }).selectOption("d");
    await native.getByLabel("Model", { exact: true }).fill("gen-2-pro");
    await native.getByLabel("Input (JSON: the provider's own fields)").fill(JSON.stringify({ prompt: "a lighthouse at dusk", width: 512, height: 512 }));
    await native.getByLabel("Ref (optional)").fill("lighthouse");
    await native.getByRole("button", { name: "Quote" }).click();
    // The quote comes before the send button.
    const quoted = page.getByRole("region", { name: "Native request" });
    await expect.poll(() => quoted.locator(".quote").innerText()).toContain("$0.0300");
    await quoted.getByRole("button", { name: /^Send/ }).click();
    await page.waitForURL(/\/\?created=/);
    const id = new URL(page.url()).searchParams.get("created")!;

    // A mark on this document: a reload would lose it.
    await page.evaluate(() => (window.sameDocument = true));
    await page.waitForSelector(`tr[data-job="${id}"][data-state="succeeded"]`, { timeout: 20_000 });
    expect(await page.evaluate(() => window.sameDocument)).toBe(true);
    expect(await page.locator(`tr[data-job="${id}"] .state`).innerText()).toBe("succeeded");
    expect(await page.locator("#live").innerText()).toMatch(/^Live/);
    // The panels follow too: the job's charge reaches the spend panel without a reload.
    await expect.poll(() => page.locator('[data-panel="spend"]').innerText(), { timeout: 10_000 }).toContain("settled $0.0300");
    await page.screenshot({ path: `${RESULTS}dashboard.png`, fullPage: true });

    await page.getByRole("link", { name: "lighthouse", exact: true }).first().click();
    await page.waitForURL(`${served.url}/jobs/${id}`);
    const image = page.locator('[data-part="outputs"] img');
    await expect.poll(() => image.evaluate((element: ImageElement) => element.complete && element.naturalWidth)).toBe(512);
    expect(await page.locator('[data-part="timeline"]').innerText()).toContain("succeeded");
    // What was asked (issue 37, part 4): the target and each field sent.
    const asked = page.getByRole("region", { name: "Request" });
    expect(await asked.innerText()).toContain("d/gen-2-pro");
    expect(await asked.innerText()).toContain("a lighthouse at dusk");
    await page.screenshot({ path: `${RESULTS}job.png`, fullPage: true });
  });

  it("Browser (issue 37, part 4): a job's page runs its request again, quoted before anything is sent, and gives it as a curl command that works as copied", async () => {
    const { served, secret, page } = await start();
    const first = await queueByApi(served.url, secret, { ref: "original", provider: "d", model: "gen-2-pro", input: { prompt: "a harbour at 'dawn'", width: 512, height: 512 } });
    await logIn(page, served.url, secret);
    await page.goto(`${served.url}/jobs/${first}`);
    const asked = page.getByRole("region", { name: "Request" });
    // Copy as curl: the clipboard, or (headless, no permission) the text selected; said either way.
    await asked.getByRole("button", { name: "Copy as curl" }).click();
    await expect.poll(() => asked.locator(".copied").innerText()).toMatch(/^(Copied\.|Selected: copy it with your keyboard\.)$/);
    const curl = await asked.getByLabel("As curl (your token in MEDIAGATE_TOKEN)").inputValue();
    expect(curl).not.toContain(secret);
    // The command as copied, run by a shell with the token in the environment: a new job with the same request.
    // Run apart from this process's event loop, which serves the API it calls.
    const { execFile } = await import("node:child_process");
    const { promisify } = await import("node:util");
    const { stdout } = await promisify(execFile)("sh", ["-c", curl], { env: { PATH: process.env.PATH, MEDIAGATE_TOKEN: secret }, encoding: "utf8" });
    const answer = JSON.parse(stdout) as { id: string; provider: string; model: string };
    expect(answer.id).not.toBe(first);
    expect(answer).toMatchObject({ provider: "d", model: "gen-2-pro" });
    const store = await served.runtime.store();
    expect((await store.getJob(answer.id))!.body).toEqual((await store.getJob(first))!.body);

    // Run again: the form's page with the request filled in and quoted; nothing is queued until Send.
    const before = (await store.listJobs({})).length;
    await asked.getByRole("button", { name: "Run again" }).click();
    await page.waitForURL(`${served.url}/new`);
    const quoted = page.getByRole("region", { name: "Native request" });
    await expect.poll(() => quoted.locator(".quote").innerText()).toContain("$0.0300");
    expect(JSON.parse(await quoted.getByLabel("Input (JSON: the provider's own fields)").inputValue())).toMatchObject({ prompt: "a harbour at 'dawn'" });
    expect((await store.listJobs({})).length).toBe(before);
    await quoted.getByRole("button", { name: /^Send/ }).click();
    await page.waitForURL(/\/\?created=/);
    expect((await store.listJobs({})).length).toBe(before + 1);
  });

  for (const kind of servedStores) {
    it(`Browser (issue 37, part 4): a batch's page cancels its unsent jobs; a batch's page follows its jobs live (progress, counts, spend, failures) and the list's rows get their thumbnail and durations live; the search by prompt narrows the list; at 375 px too; screenshots (${kind.name})`, async () => {
      served = await serveSandbox({ engine: false, store: kind });
      const shot = (name: string) => `${RESULTS}${name}${kind.name === "sqlite" ? "" : `-${kind.name}`}.png`;
      const { secret } = await createToken(await served.runtime.store(), { name: "alice", now: Date.now() });
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      context.setDefaultTimeout(15_000);
      const page = await context.newPage();
      const store = await served.runtime.store();
      const postBatch = async (lines: unknown[]) => {
        const response = await fetch(`${served!.url}/v1/batches`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify(lines) });
        expect(response.status).toBe(201);
        const body = (await response.json()) as { batch_id: string; jobs: Array<{ id: string }> };
        return { batchId: body.batch_id, jobIds: body.jobs.map((job) => job.id) };
      };
      const line = (ref: string, prompt: string) => ({ ref, provider: "d", model: "gen-2-pro", input: { prompt, width: 512, height: 384 } });
      const shots = await postBatch([line("lighthouse", "a lighthouse at dusk"), line("harbour", "a harbour at dawn"), line("kite", "a kite over dunes"), line("boat", "a boat")]);
      const unwanted = await postBatch([line("spare-1", "a spare"), line("spare-2", "a spare"), line("spare-3", "a spare")]);
      // One job of the first batch fails before it is sent, with its message (no engine runs yet).
      await store.transition(shots.jobIds[3]!, { state: "queued" }, "failed", { error: { code: "budget_exhausted", message: "the token's budget has nothing left for it" } }, "failed", Date.now());

      await logIn(page, served.url, secret);
      await page.goto(`${served.url}/batches/${unwanted.batchId}`);
      await page.getByRole("button", { name: "Cancel 3 unsent jobs" }).click();
      await page.waitForURL(`${served.url}/batches/${unwanted.batchId}?cancelled=3`);
      expect(await page.locator(".notice").innerText()).toContain("Cancelled 3 unsent jobs of this batch");
      expect((await store.batchSummary(unwanted.batchId)).byState).toEqual({ cancelled: 3 });
      await page.screenshot({ path: shot("batch-cancelled"), fullPage: true });

      // Two views open before the engine starts, each following its own stream: the batch's page, and the list.
      await page.goto(`${served.url}/batches/${shots.batchId}`);
      expect(await page.locator("#batch-progress").getAttribute("value")).toBe("1");
      expect(await page.getByText("1 of 4 jobs ended (25%)").isVisible()).toBe(true);
      expect(await page.getByRole("button", { name: "Cancel 3 unsent jobs" }).isVisible()).toBe(true);
      await expect.poll(() => page.locator("#live").innerText()).toMatch(/^Live/);
      await page.evaluate(() => (window.sameDocument = true));
      const batchPage = page;
      const list = await context.newPage();
      await list.goto(`${served.url}/`);
      await expect.poll(() => list.locator("#live").innerText()).toMatch(/^Live/);
      (await served.runtime.engine()).start();
      // The batch page, without a reload: every job ended, what they were charged, nothing left to cancel.
      await batchPage.waitForSelector('#batch-progress[value="4"]', { timeout: 30_000 });
      expect(await batchPage.evaluate(() => window.sameDocument)).toBe(true);
      expect(await batchPage.getByText("4 of 4 jobs ended (100%)").isVisible()).toBe(true);
      await expect.poll(() => batchPage.locator('[data-spend="charged"]').innerText()).toBe("$0.0900");
      expect(await batchPage.locator('[data-count="succeeded"] .num').innerText()).toBe("3");
      expect(await batchPage.getByRole("region", { name: "Cancel" }).innerText()).toContain("nothing is left to cancel here");
      await batchPage.close();
      // Rows follow their jobs live: each succeeded row gets its thumbnail, served from the saved file, and its durations.
      for (const id of shots.jobIds.slice(0, 3)) {
        const thumb = list.locator(`tr[data-job="${id}"][data-state="succeeded"] img.thumb`);
        await thumb.waitFor({ timeout: 30_000 });
        expect(await thumb.getAttribute("src")).toBe(`/jobs/${id}/outputs/0`);
        expect(await thumb.getAttribute("loading")).toBe("lazy");
        expect([await thumb.getAttribute("width"), await thumb.getAttribute("height")]).toEqual(["64", "48"]);
        await expect.poll(() => thumb.evaluate((element: ImageElement) => element.complete && element.naturalWidth)).toBe(512);
        expect(await list.locator(`tr[data-job="${id}"] .durations`).innerText()).toMatch(/^\S.* · \S.* · \S.*$/);
        expect(await list.locator(`tr[data-job="${id}"] .durations`).innerText()).not.toContain("—");
      }
      await list.screenshot({ path: shot("jobs-thumbnails"), fullPage: true });

      await list.getByLabel("Prompt contains").fill("LIGHTHOUSE");
      await list.getByRole("button", { name: "Filter" }).click();
      await list.waitForURL(/q=LIGHTHOUSE/);
      await expect.poll(() => list.locator("table.jobs tbody tr[data-job]").count()).toBe(1);
      expect(await list.locator("table.jobs tbody tr[data-job]").getAttribute("data-job")).toBe(shots.jobIds[0]);
      expect(await list.locator("#search-bound").innerText()).toContain("newest 2,000 jobs");
      await list.screenshot({ path: shot("jobs-search"), fullPage: true });

      // The job page: its durations, and its batch linked.
      await list.goto(`${served.url}/jobs/${shots.jobIds[0]}`);
      expect(await list.locator('[data-duration="rendering"]').innerText()).not.toBe("—");
      await list.getByRole("link", { name: shots.batchId }).click();
      await list.waitForURL(`${served.url}/batches/${shots.batchId}`);
      expect(await list.locator("#batch-progress").getAttribute("value")).toBe("4");
      expect(await list.getByText("4 of 4 jobs ended (100%)").isVisible()).toBe(true);
      expect(await list.locator('[data-spend="charged"]').innerText()).toBe("$0.0900");
      expect(await list.getByRole("region", { name: "Failures" }).innerText()).toContain("budget_exhausted: the token's budget has nothing left for it");
      await list.screenshot({ path: shot("batch"), fullPage: true });
      await list.setViewportSize({ width: 375, height: 900 });
      expect(await list.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      await list.screenshot({ path: shot("batch-375"), fullPage: true });
      await list.goto(`${served.url}/`);
      expect(await list.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      await list.screenshot({ path: shot("jobs-thumbnails-375"), fullPage: true });
    }, 90_000);
  }

  it("Browser: right after a quote the 'Changed since the quote' hint is not shown; changing the request shows it and disables Send", async () => {
    const { served, secret, page } = await start();
    await logIn(page, served.url, secret);
    await page.goto(`${served.url}/new`);
    const native = page.getByRole("region", { name: "Native request" });
    await native.getByLabel("Provider", { exact: true }).selectOption("d");
    await native.getByLabel("Model", { exact: true }).fill("gen-2-pro");
    await native.getByLabel("Input (JSON: the provider's own fields)").fill(JSON.stringify({ prompt: "a lighthouse at dusk", width: 512, height: 512 }));
    await native.getByRole("button", { name: "Quote" }).click();
    const quoted = page.getByRole("region", { name: "Native request" });
    await expect.poll(() => quoted.locator(".quote").innerText()).toContain("$0.0300");
    const hint = quoted.getByText("Changed since the quote");
    const send = quoted.getByRole("button", { name: /^Send/ });
    expect(await hint.isVisible()).toBe(false);
    expect(await send.isEnabled()).toBe(true);

    await quoted.getByLabel("Model", { exact: true }).fill("gen-2-flex");
    await expect.poll(() => hint.isVisible()).toBe(true);
    expect(await send.isDisabled()).toBe(true);
  });

  it("Browser: a video job's page shows the video once it is captured (live) and plays its first second, fetched by byte ranges", async () => {
    const { served, secret, page } = await start();
    const id = await queueByApi(served.url, secret, { provider: "c", model: "v6", input: { prompt: "a kite over dunes" } });
    const ranges: number[] = [];
    page.on("response", (response) => {
      if (response.url().endsWith(`/jobs/${id}/outputs/0`)) ranges.push(response.status());
    });
    await logIn(page, served.url, secret);
    await page.goto(`${served.url}/jobs/${id}`);
    // The page is drawn before the job ends; the video arrives through /events.
    await page.waitForSelector('[data-part="outputs"] video', { timeout: 30_000 });
    const played = await page.locator('[data-part="outputs"] video').evaluate(
      (video: VideoElement) =>
        new Promise<{ duration: number; currentTime: number; width: number; error: number | null }>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`the video did not play its first second (readyState ${video.readyState}, currentTime ${video.currentTime}, error ${video.error?.code ?? "none"})`)), 10_000);
          video.muted = true;
          const check = () => {
            if (video.currentTime >= 0.9 || video.ended) {
              clearTimeout(timer);
              resolve({ duration: video.duration, currentTime: video.currentTime, width: video.videoWidth, error: video.error?.code ?? null });
            }
          };
          video.addEventListener("timeupdate", check);
          video.addEventListener("ended", check);
          video.addEventListener("error", () => reject(new Error(`media error ${video.error?.code}: ${video.error?.message}`)));
          video.play().catch(reject);
        }),
    );
    expect(played.error).toBeNull();
    expect(played.duration).toBeCloseTo(1, 1);
    expect(played.currentTime).toBeGreaterThanOrEqual(0.9);
    expect(played.width).toBeGreaterThan(0);
    // A <video> asks for its bytes by range: the dashboard's output route answers 206.
    expect(ranges).toContain(206);
    // In the list, its thumbnail is the saved video itself, only its metadata fetched (no poster is made).
    await page.goto(`${served.url}/`);
    const thumb = page.locator(`tr[data-job="${id}"] video.thumb`);
    expect(await thumb.getAttribute("preload")).toBe("metadata");
    expect(await thumb.getAttribute("src")).toBe(`/jobs/${id}/outputs/0`);
    expect(await thumb.getAttribute("poster")).toBeNull();
    await expect.poll(() => thumb.evaluate((video: VideoElement) => video.readyState)).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it("Browser: at 375 px wide nothing overflows sideways (jobs, a job, the form), and the keyboard focus is visible", async () => {
    const { served, secret, page } = await start(375);
    await queueByApi(served.url, secret, { ref: "a-long-reference-without-any-space-that-must-wrap-rather-than-widen-the-page-0123456789", provider: "d", model: "gen-2-pro", input: { prompt: "a harbour", width: 512, height: 512 } });
    const id = await queueByApi(served.url, secret, { ref: "small", provider: "d", model: "gen-2-pro", input: { prompt: "a boat", width: 512, height: 512 } });
    await logIn(page, served.url, secret);
    await page.waitForSelector(`tr[data-job="${id}"][data-state="succeeded"]`, { timeout: 20_000 });
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth);
    expect(await overflow()).toBeLessThanOrEqual(375);
    await page.screenshot({ path: `${RESULTS}dashboard-375.png`, fullPage: true });
    await page.keyboard.press("Tab");
    const focused = await page.evaluate(() => ({ text: document.activeElement?.textContent, outline: getComputedStyle(document.activeElement!).outlineStyle }));
    expect(focused).toEqual({ text: "Skip to content", outline: "solid" });

    await page.goto(`${served.url}/jobs/${id}`);
    await expect.poll(() => page.locator('[data-part="outputs"] img').evaluate((element: ImageElement) => element.naturalWidth)).toBe(512);
    expect(await overflow()).toBeLessThanOrEqual(375);
    await page.screenshot({ path: `${RESULTS}job-375.png`, fullPage: true });
    await page.goto(`${served.url}/new`);
    expect(await overflow()).toBeLessThanOrEqual(375);
  });
});
