/**
 * Fault injection shared by all emulators. A rule matches requests by
 * provider, method and a path pattern and, while it has uses left (or with a
 * probability), replaces the normal answer with a fault.
 */
export type FaultKind =
  /** Answer with this HTTP status and body instead of handling the request. */
  | { kind: "status"; status: number; body?: unknown; headers?: Record<string, string> }
  /** Handle normally, but only after this many real milliseconds (or once the client's connection closes). */
  | { kind: "delay"; ms: number }
  /** Destroy the connection without answering (the client sees a network error). */
  | { kind: "drop" }
  /** Handle the request (side effects happen), then destroy the connection instead of answering. */
  | { kind: "drop_after_handling" }
  /** Handle the request (side effects happen), then hold the answer this many real milliseconds, or until the client's connection closes (a client killed meanwhile never learns it). */
  | { kind: "delay_answer"; ms: number };

export interface FaultRule {
  provider?: string;
  method?: string;
  /** Matched against the request path (without query). */
  path?: RegExp;
  fault: FaultKind;
  /** How many matching requests get the fault; undefined = unlimited. */
  times?: number;
  /** Chance per matching request, 0..1 (default 1). */
  probability?: number;
}

export interface FaultMatch {
  provider: string | null;
  method: string;
  path: string;
}

export class FaultInjector {
  private rules: FaultRule[] = [];

  constructor(private readonly random: () => number) {}

  add(rule: FaultRule): void {
    this.rules.push({ ...rule });
  }

  clear(): void {
    this.rules = [];
  }

  /** Returns the fault to apply to this request, consuming one use of its rule. */
  take(request: FaultMatch): FaultKind | null {
    for (const rule of this.rules) {
      if (rule.times !== undefined && rule.times <= 0) continue;
      if (rule.provider && rule.provider !== request.provider) continue;
      if (rule.method && rule.method.toUpperCase() !== request.method.toUpperCase()) continue;
      if (rule.path && !rule.path.test(request.path)) continue;
      if (rule.probability !== undefined && this.random() >= rule.probability) continue;
      if (rule.times !== undefined) rule.times -= 1;
      return rule.fault;
    }
    return null;
  }
}
