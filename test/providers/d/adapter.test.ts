import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/core/errors.js";
import { createDAdapter, D_ENDPOINTS, type DPriceView } from "../../../src/providers/d/index.js";

const adapter = createDAdapter({ baseUrl: "https://d.example", apiKey: "key" });
const validated = (model: string) => adapter.validate({ provider: "d", model, input: { prompt: "x", width: 512, height: 512 } });

describe("D: limits", () => {
  it("D: no request rate is published, so there is no rate window", () => {
    expect(adapter.limits(validated("gen-2-pro")).rateWindows).toEqual([]);
  });

  it("D: a job takes one of the account's 24 concurrent slots", () => {
    for (const model of D_ENDPOINTS.filter((endpoint) => endpoint !== "gen-ctx-max")) {
      expect(adapter.limits(validated(model)).slotPools).toEqual([{ key: "d:account", capacity: 24 }]);
    }
  });

  it("D: a gen-ctx-max job counts in its own 6-slot pool and in the account's 24", () => {
    expect(adapter.limits(validated("gen-ctx-max")).slotPools).toEqual([
      { key: "d:account", capacity: 24 },
      { key: "d:gen-ctx-max", capacity: 6 },
    ]);
  });

  it("D: polls are paced between 250 ms and 5 s", () => {
    expect(adapter.limits(validated("gen-2-pro")).poll).toEqual({ minIntervalMs: 250, maxIntervalMs: 5_000 });
  });

  it("D: tracking gives up after 30 minutes by default, configurable", () => {
    expect(adapter.limits(validated("gen-2-pro")).trackingDeadlineMs).toBe(30 * 60_000);
    const patient = createDAdapter({ baseUrl: "https://d.example", apiKey: "key", trackingDeadlineMs: 3_600_000 });
    expect(patient.limits(validated("gen-2-pro")).trackingDeadlineMs).toBe(3_600_000);
  });

  it("D: submit is not idempotent (a lost answer is never resent automatically)", () => {
    expect(adapter.limits(validated("gen-2-pro")).idempotentSubmit).toBe(false);
  });
});

describe("D: adapter configuration", () => {
  it("D: the adapter lists the hosted endpoints as its models", () => {
    expect(adapter.id).toBe("d");
    expect(adapter.models()).toEqual([...D_ENDPOINTS]);
  });

  it("D: works for validation and quotes without a base URL or key", async () => {
    const unconfigured = createDAdapter({ baseUrl: "", apiKey: "" });
    const request = unconfigured.validate({ provider: "d", model: "gen-2-pro", input: { prompt: "x", width: 1024, height: 768 } });
    expect((await unconfigured.estimate(request)).microUsd).toBe(30_000);
  });

  it("D: an unknown price view or a non-positive tracking deadline is a configuration error", () => {
    expect(() => createDAdapter({ baseUrl: "", apiKey: "", priceView: "cheapest" as DPriceView })).toThrow(ConfigError);
    expect(() => createDAdapter({ baseUrl: "", apiKey: "", trackingDeadlineMs: 0 })).toThrow(ConfigError);
  });
});
