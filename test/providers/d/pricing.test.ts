import { describe, expect, it } from "vitest";
import type { JobRequest, ProviderStatus } from "../../../src/providers/adapter.js";
import { chargeD, createDAdapter, estimateD, priceD, validateDRequest, type DPriceInput } from "../../../src/providers/d/index.js";
import { jpegHeader, pngHeader } from "./images.js";

const MP = 1_048_576;

function price(input: Partial<DPriceInput> & { endpoint: string }, view: "pricing-page" | "docs-from" = "pricing-page") {
  return priceD({ outputPixels: MP, referencePixels: [], imageCount: 1, ...input }, view);
}

function validated(model: string, width: number, height: number, extra: Partial<JobRequest> = {}) {
  return validateDRequest({ provider: "d", model, input: { prompt: "x", width, height }, ...extra });
}

const urls = (count: number) => Array.from({ length: count }, (_, index) => `https://images.example/${index}.png`);

const succeeded: ProviderStatus = { kind: "succeeded", providerStatus: "Ready", outputs: [{ url: "https://d.example/sample.png" }], raw: {} };
const failed: ProviderStatus = { kind: "failed", providerStatus: "Error", code: "provider_failed", message: "D reported Error", raw: {} };

describe("D pricing: the pricing page's cost rules", () => {
  it("D: gen-2-pro 1024x768 costs $0.03 (one whole megapixel at the first-MP rate)", () => {
    expect(estimateD(validated("gen-2-pro", 1024, 768)).microUsd).toBe(30_000);
  });

  it("D: gen-2-pro 2048x2048 costs $0.03 + 3 × $0.015 = $0.075 (further MP at the next-MP rate)", () => {
    expect(estimateD(validated("gen-2-pro", 2048, 2048)).microUsd).toBe(75_000);
  });

  it("D: gen-2-max 1500x1000 (1.43 MP) is rounded up to 2 MP: $0.07 + $0.03 = $0.10", () => {
    expect(price({ endpoint: "gen-2-max", outputPixels: 1500 * 1000 }).microUsd).toBe(100_000);
    expect(estimateD(validated("gen-2-max", 1504, 1008)).microUsd).toBe(100_000);
  });

  it("D: output is capped at 4 MP before rounding (8 MP is billed as 4 MP)", () => {
    expect(estimateD(validated("gen-2-pro", 4096, 2048)).microUsd).toBe(75_000);
    expect(estimateD(validated("gen-2-pro", 4096, 2048)).source).toMatch(/output 8 MP priced at 4 MP/);
  });

  it("D: one megapixel is 1,048,576 pixels: 1024x1024 is 1 MP, one row more is 2 MP", () => {
    expect(price({ endpoint: "gen-2-pro", outputPixels: 1024 * 1024 }).microUsd).toBe(30_000);
    expect(price({ endpoint: "gen-2-pro", outputPixels: 1024 * 1024 + 1 }).microUsd).toBe(45_000);
  });

  it("D: gen-2-pro 1024x1024 with two references costs 30000 + 2 × 15000 = 60000 (several references each billed 1 MP)", () => {
    expect(estimateD(validated("gen-2-pro", 1024, 1024, { images: urls(2) })).microUsd).toBe(60_000);
    // Several references are billed 1 MP each whatever their size.
    expect(price({ endpoint: "gen-2-pro", referencePixels: [4 * MP, 3 * MP] }).microUsd).toBe(60_000);
  });

  it("D: a single reference keeps its resolution and is billed by its own megapixels, rounded up", () => {
    const single = validated("gen-2-pro", 1024, 1024, { images: [{ fileName: "ref.png", bytes: pngHeader(1500, 1000) }] });
    // 1 MP output $0.03 + one 2 MP reference × $0.015.
    expect(estimateD(single).microUsd).toBe(60_000);
    expect(estimateD(single).source).toMatch(/1 reference × 2 MP × \$0\.0150\/MP/);
  });

  it("D: a single reference above 4 MP is billed as 4 MP", () => {
    expect(estimateD(validated("gen-2-max", 1024, 1024, { images: [{ fileName: "huge.jpg", bytes: jpegHeader(4096, 4096) }] })).microUsd).toBe(70_000 + 4 * 30_000);
  });

  it("D: a single reference of unknown size is billed as 1 MP and the source says it was assumed", () => {
    const estimate = estimateD(validated("gen-2-flex", 1024, 1024, { images: urls(1) }));
    expect(estimate.microUsd).toBe(50_000 + 50_000);
    expect(estimate.source).toMatch(/single reference of unknown size assumed 1 MP/);
  });

  it("D: a batch multiplies the base cost by the image count", () => {
    expect(price({ endpoint: "gen-2-pro", outputPixels: 4 * MP, referencePixels: [null, null], imageCount: 3 }).microUsd).toBe(3 * (75_000 + 30_000));
    expect(price({ endpoint: "gen-2-pro", imageCount: 3 }).formula).toMatch(/× 3 images/);
  });

  it("D: each job is one image (no image-count field is shown)", () => {
    expect(validated("gen-2-pro", 1024, 1024).facts).toMatchObject({ imageCount: 1, imageCountNote: expect.stringMatching(/no image-count field/) });
  });

  it("D: every table rate, first MP then next MP", () => {
    const twoMp = (endpoint: string) => price({ endpoint, outputPixels: 2 * MP }).microUsd;
    expect(twoMp("gen-2-max")).toBe(70_000 + 30_000);
    expect(twoMp("gen-2-pro")).toBe(30_000 + 15_000);
    expect(twoMp("gen-2-flex")).toBe(50_000 + 50_000);
    expect(twoMp("gen-2-compact-4b")).toBe(14_000 + 1_000);
    expect(twoMp("gen-2-compact-9b")).toBe(15_000 + 2_000);
  });

  it("D: every table rate per reference megapixel", () => {
    const twoReferences = (endpoint: string) => price({ endpoint, referencePixels: [null, null] }).microUsd;
    expect(twoReferences("gen-2-max")).toBe(70_000 + 2 * 30_000);
    expect(twoReferences("gen-2-flex")).toBe(50_000 + 2 * 50_000);
    expect(twoReferences("gen-2-compact-4b")).toBe(14_000 + 2 * 1_000);
    expect(twoReferences("gen-2-compact-9b")).toBe(15_000 + 2 * 2_000);
  });

  it("D: a fine-tuned endpoint bills at its base endpoint's rate (gen-2-compact-9b-kv-finetuned as gen-2-compact-9b)", () => {
    const estimate = estimateD(validated("gen-2-compact-9b-kv-finetuned", 2048, 1024));
    expect(estimate.microUsd).toBe(17_000);
    expect(estimate.source).toMatch(/fine-tuned endpoint: billed at its base endpoint gen-2-compact-9b's rate during the public beta/);
  });

  it("D: preview endpoints are priced at their tier's rate, and the source says they are not in the table", () => {
    const pro = estimateD(validated("gen-2-pro-preview", 1024, 768));
    expect(pro.microUsd).toBe(30_000);
    expect(pro.source).toMatch(/gen-2-pro-preview is not in the price table: priced at its tier's endpoint gen-2-pro/);
    const compact = estimateD(validated("gen-2-compact-9b-preview", 1024, 1024));
    expect(compact.microUsd).toBe(15_000);
    expect(compact.source).toMatch(/not in the price table: priced at its tier's endpoint gen-2-compact-9b/);
  });

  it("D: gen-ctx-max is unpriced and the source says why", () => {
    const estimate = estimateD(validated("gen-ctx-max", 1024, 1024));
    expect(estimate.microUsd).toBeNull();
    expect(estimate.source).toMatch(/^unpriced: .*gen-ctx-max/);
  });

  it("D: the estimate's source names the price view and the formula", () => {
    expect(estimateD(validated("gen-2-pro", 1024, 768)).source).toBe("D pricing page: gen-2-pro 1 MP × $0.0300 first MP; estimate");
    expect(estimateD(validated("gen-2-pro", 2048, 2048, { images: urls(2) })).source).toBe(
      "D pricing page: gen-2-pro 1 MP × $0.0300 first MP + 3 MP × $0.0150 next MP + 2 references × 1 MP × $0.0150/MP; estimate",
    );
  });

  it("D: all arithmetic is in integer micro-USD", () => {
    for (const endpoint of ["gen-2-max", "gen-2-pro", "gen-2-flex", "gen-2-compact-4b", "gen-2-compact-9b"]) {
      for (let pixels = MP / 2; pixels <= 5 * MP; pixels += MP / 2) {
        const microUsd = price({ endpoint, outputPixels: pixels, referencePixels: [pixels], imageCount: 2 }).microUsd;
        expect(Number.isSafeInteger(microUsd)).toBe(true);
      }
    }
  });
});

describe("D pricing: the documentation site's 'from' prices", () => {
  it("D: the docs-from view prices max at $0.07 per MP", () => {
    const result = price({ endpoint: "gen-2-max", outputPixels: 2 * MP }, "docs-from");
    expect(result.microUsd).toBe(140_000);
    expect(result.formula).toBe("D documentation 'from' prices: gen-2-max 2 MP × $0.0700/MP");
  });

  it("D: the docs-from view prices pro at $0.03 per MP for generation and $0.045 per MP for editing", () => {
    expect(price({ endpoint: "gen-2-pro", outputPixels: 2 * MP }, "docs-from").microUsd).toBe(60_000);
    const editing = price({ endpoint: "gen-2-pro", outputPixels: 2 * MP, referencePixels: [null] }, "docs-from");
    expect(editing.microUsd).toBe(90_000);
    expect(editing.formula).toMatch(/2 MP × \$0\.0450\/MP \(editing\) \+ references not priced separately in this view/);
  });

  it("D: the docs-from view prices flex at $0.05 per MP, noting the model overview's $0.06", () => {
    const result = price({ endpoint: "gen-2-flex" }, "docs-from");
    expect(result.microUsd).toBe(50_000);
    expect(result.formula).toMatch(/the model overview states \$0\.06 per MP/);
  });

  it("D: the docs-from view prices compact per image: $0.014 (4B), $0.015 (9B)", () => {
    expect(price({ endpoint: "gen-2-compact-4b", outputPixels: 4 * MP }, "docs-from").microUsd).toBe(14_000);
    expect(price({ endpoint: "gen-2-compact-9b", outputPixels: 4 * MP }, "docs-from")).toEqual({
      microUsd: 15_000,
      formula: "D documentation 'from' prices: gen-2-compact-9b $0.0150 per image",
    });
    expect(price({ endpoint: "gen-2-compact-9b-kv-finetuned", imageCount: 2 }, "docs-from").microUsd).toBe(30_000);
  });

  it("D: in the docs-from view, max and flex have no editing rate: with references they are priced at their generation rate", () => {
    const max = price({ endpoint: "gen-2-max", outputPixels: 2 * MP, referencePixels: [3 * MP] }, "docs-from");
    expect(max).toEqual({ microUsd: 140_000, formula: "D documentation 'from' prices: gen-2-max 2 MP × $0.0700/MP + references not priced separately in this view" });
    expect(price({ endpoint: "gen-2-flex", referencePixels: [null, null] }, "docs-from").microUsd).toBe(50_000);
  });

  it("D: the docs-from view prices no reference, so a single one of unknown size assumes nothing (the note is the pricing page's)", () => {
    expect(price({ endpoint: "gen-2-pro", referencePixels: [null] }, "docs-from").formula).not.toMatch(/assumed/);
    expect(price({ endpoint: "gen-2-pro", referencePixels: [null] }).formula).toMatch(/single reference of unknown size assumed 1 MP/);
  });

  it("D: the price view is selectable on the adapter, the pricing page by default", async () => {
    const request = validated("gen-2-max", 2048, 1024);
    const pageAdapter = createDAdapter({ baseUrl: "https://d.example", apiKey: "key" });
    const docsAdapter = createDAdapter({ baseUrl: "https://d.example", apiKey: "key", priceView: "docs-from" });
    expect(await pageAdapter.estimate(request)).toMatchObject({ microUsd: 100_000, source: expect.stringMatching(/^D pricing page/) });
    expect(await docsAdapter.estimate(request)).toMatchObject({ microUsd: 140_000, source: expect.stringMatching(/^D documentation 'from' prices/) });
  });
});

describe("D pricing: charges", () => {
  it("D: a succeeded job's charge is the formula price, computed because D reports no charge", () => {
    const charge = chargeD(validated("gen-2-pro", 1024, 768), succeeded);
    expect(charge.microUsd).toBe(30_000);
    expect(charge.source).toMatch(/^D pricing page: .*; computed by mediagate, D reports no charge$/);
  });

  it("D: a failed job's charge is unknown: D does not publish whether failed jobs are charged", () => {
    expect(chargeD(validated("gen-2-pro", 1024, 768), failed)).toEqual({ microUsd: null, source: "D does not publish whether failed jobs are charged" });
  });

  it("D: a succeeded gen-ctx-max job has no computed charge, and the source says why rather than claiming one", () => {
    expect(chargeD(validated("gen-ctx-max", 1024, 768), succeeded)).toEqual({
      microUsd: null,
      source: "unpriced: neither of D's price views lists gen-ctx-max (the older context-editing endpoint)",
    });
  });

  it("D: a name that is no D endpoint is unpriced, in either view, never priced at some other row", () => {
    for (const view of ["pricing-page", "docs-from"] as const) {
      expect(price({ endpoint: "gen-9-ultra" }, view)).toEqual({ microUsd: null, formula: "unpriced: gen-9-ultra is not a D endpoint" });
    }
  });

  it("D: facts that cannot be read give no price rather than a wrong one", () => {
    const request = { ...validated("gen-2-pro", 1024, 768), facts: {} };
    expect(estimateD(request)).toEqual({ microUsd: null, source: "unpriced: the job's D facts are missing or unreadable" });
  });
});
