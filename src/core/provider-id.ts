/** The providers mediagate knows, by the letter the specifications give them (`spec/`). */
export type ProviderId = "a" | "b" | "c" | "d" | "e" | "f";
export const PROVIDER_IDS: readonly ProviderId[] = ["a", "b", "c", "d", "e", "f"];

/** A sliding window of requests a provider account may send (E's 4 a minute, A's 180): every request counts. */
export interface RateWindow {
  /** Shared by every request to one provider account, e.g. `e:org` or `a:standard`. */
  key: string;
  limit: number;
  windowMs: number;
}
