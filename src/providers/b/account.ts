import { z } from "zod";
import type { ProviderHttp } from "../http.js";
import { readCatalogList, readCatalogRecord, type BCatalogEntry, type BCatalogList, type BCatalogRecord } from "./catalog.js";
import { bEndpoints, keyHeaders } from "./endpoints.js";
import { invalidAnswer, readErrorFrom } from "./errors.js";
import { checkSpendRange, spendReportOf, type BSpendReport } from "./spend.js";

export interface BAccountConfig {
  baseUrl: string;
  apiKey: string;
  /** Every request goes through it (rate token, timeouts, redaction). */
  http: ProviderHttp;
  signal?: AbortSignal;
}

export interface BBalance {
  balanceMicroUsd: number;
  unit: "micro_usd";
  raw: unknown;
}

/** The account operations behind `mediagate catalog`, `mediagate spend` and job deletion. */
export interface BAccount {
  /** `GET /catalog/apis` (no key). `search` filters here, case-insensitively, on each entry's api_id and text fields: no search parameter is shown. */
  listCatalog(options?: { search?: string }): Promise<BCatalogList>;
  /** `GET /catalog/apis/{api_id}?expand=inputs` (no key); null when B has no such operation. */
  catalogRecord(apiId: string): Promise<BCatalogRecord | null>;
  /** `GET /billing/balance`: the prepaid balance. Never charged. */
  balance(): Promise<BBalance>;
  /** `GET /billing/spend/daily`: both dates required (YYYY-MM-DD, inclusive), at most 366 days apart, checked before sending. */
  spend(range: { from: string; to: string }): Promise<BSpendReport>;
  /** `DELETE /v1/media/jobs/{id}`: erases the job's stored media and prompts. */
  deleteJob(providerJobId: string): Promise<void>;
}

/** spec B Other responses, Balance: `balance_micro_usd` (integer) and `unit` (always micro_usd). */
const BalanceAnswer = z.object({ balance_micro_usd: z.number().int().refine(Number.isSafeInteger), unit: z.literal("micro_usd") });

function matches(entry: BCatalogEntry, needle: string): boolean {
  const texts = [entry.apiId, ...Object.values(entry.raw).filter((value): value is string => typeof value === "string")];
  return texts.some((text) => text.toLowerCase().includes(needle));
}

export function createBAccount(config: BAccountConfig): BAccount {
  const { http, signal } = config;
  const endpoints = bEndpoints(config.baseUrl);
  const reader = { http, ...(signal ? { signal } : {}) };
  const headers = () => keyHeaders(config.apiKey);

  return {
    async listCatalog(options = {}) {
      const list = await readCatalogList(endpoints, reader);
      const needle = options.search?.trim().toLowerCase();
      if (!needle) return list;
      return { ...list, entries: list.entries.filter((entry) => matches(entry, needle)) };
    },

    catalogRecord: (apiId) => readCatalogRecord(endpoints, apiId, reader),

    async balance() {
      const response = await http.request({ method: "GET", url: endpoints.balance(), headers: headers(), retry: "idempotent" }, signal);
      if (response.status !== 200) throw readErrorFrom(http, response, "the balance read");
      const body = response.json();
      const parsed = BalanceAnswer.safeParse(body);
      // A balance in another unit, or not an integer, must not be shown as micro-USD.
      if (!parsed.success) throw invalidAnswer(http, response, "a balance without an integer balance_micro_usd in unit micro_usd");
      return { balanceMicroUsd: parsed.data.balance_micro_usd, unit: "micro_usd", raw: body };
    },

    async spend(range) {
      // Refused before any request: spec B allows at most 366 days.
      const { from, to } = checkSpendRange(range.from, range.to);
      const response = await http.request({ method: "GET", url: endpoints.dailySpend(from, to), headers: headers(), retry: "idempotent" }, signal);
      if (response.status !== 200) throw readErrorFrom(http, response, `the daily spend read ${from} to ${to}`);
      return spendReportOf(from, to, response.json(), (text) => http.redact(text));
    },

    async deleteJob(providerJobId) {
      // A DELETE of an already erased job erases nothing more, so resending it is safe.
      const response = await http.request({ method: "DELETE", url: endpoints.job(providerJobId), headers: headers(), retry: "idempotent" }, signal);
      if (response.status < 200 || response.status >= 300) throw readErrorFrom(http, response, `the delete of job ${providerJobId}`);
    },
  };
}
