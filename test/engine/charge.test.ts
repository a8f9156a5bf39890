import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config.js";
import { chargeAtEnd } from "../../src/engine/charge.js";
import type { ProviderAdapter, ProviderId, ProviderStatus, ValidatedRequest } from "../../src/providers/adapter.js";
import { createProviderRegistry } from "../../src/providers/registry.js";

// Unconfigured adapters still price and validate; no request is sent here.
const folder = mkdtempSync(join(tmpdir(), "mediagate-charge-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const registry = createProviderRegistry(loadConfig({ env: {}, cwd: folder }));
const adapterOf = (id: ProviderId): ProviderAdapter => registry.get(id)!.adapter!;

const NOW = Date.parse("2026-11-25T12:00:00Z");
const succeeded: ProviderStatus = { kind: "succeeded", providerStatus: "Ready", outputs: [{ url: "https://d.example/sample.png" }], raw: {} };
const failed = (code: string): ProviderStatus => ({ kind: "failed", providerStatus: "Error", code, message: "refused", raw: {} });

describe("what a job's end means for its charge", () => {
  const d = adapterOf("d");
  const request = d.validate({ provider: "d", model: "gen-2-pro", input: { prompt: "a lighthouse at dawn", width: 1024, height: 768 } });

  it("a provider that reports no charge: a succeeded job is charged by formula, and the ledger gets it in the same transition", () => {
    const expected = d.charge(request, succeeded);
    expect(expected.microUsd).toBeGreaterThan(0);
    expect(chargeAtEnd(d, request, succeeded, { providerJobId: "d-123" }, NOW)).toEqual({
      patch: { chargeMicroUsd: expected.microUsd, chargeSource: expected.source, chargeState: "computed" },
      extras: { ledger: { microUsd: expected.microUsd, source: expected.source } },
    });
  });

  it("an unknown charge (D does not say whether failed jobs are charged) is recorded as none, with no ledger entry", () => {
    expect(chargeAtEnd(d, request, failed("content_moderated"), { providerJobId: "d-123" }, NOW)).toEqual({
      patch: { chargeMicroUsd: null, chargeSource: "D does not publish whether failed jobs are charged", chargeState: "none" },
      extras: {},
    });
  });

  it("a charge known to be zero (C refunds a moderation failure) is computed and written to the ledger as zero", () => {
    const c = adapterOf("c");
    const cRequest = c.validate({ provider: "c", model: "v6", input: { prompt: "a lighthouse at dawn" } });
    const { patch, extras } = chargeAtEnd(c, cRequest, failed("moderation_failed"), { providerJobId: "c-1" }, NOW);
    expect(patch).toEqual({ chargeMicroUsd: 0, chargeSource: "C refunds the credits of a moderation failure (status 7)", chargeState: "computed" });
    expect(extras).toEqual({ ledger: { microUsd: 0, source: "C refunds the credits of a moderation failure (status 7)" } });
  });

  it("a provider that settles later (B) leaves the charge pending and due for a settlement read now", () => {
    const b = adapterOf("b");
    const bRequest: ValidatedRequest = { provider: "b", model: "acme/sdxl", operation: null, body: {}, warnings: [], facts: {} };
    expect(chargeAtEnd(b, bRequest, succeeded, { providerJobId: "b-job-7" }, NOW)).toEqual({
      patch: { chargeMicroUsd: null, chargeSource: "awaiting the provider's settlement", chargeState: "pending", nextAttemptAt: NOW },
      extras: {},
    });
  });

  it("a job B never created (no provider job id) has nothing to settle: its charge is B's own answer, unknown", () => {
    const b = adapterOf("b");
    const bRequest: ValidatedRequest = { provider: "b", model: "acme/sdxl", operation: null, body: {}, warnings: [], facts: {} };
    const { patch, extras } = chargeAtEnd(b, bRequest, failed("submit_refused"), { providerJobId: null }, NOW);
    expect(patch).toEqual({ chargeMicroUsd: null, chargeSource: b.charge(bRequest, failed("submit_refused")).source, chargeState: "none" });
    expect(extras).toEqual({});
  });
});
