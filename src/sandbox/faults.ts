import { InputError } from "../core/errors.js";

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

/** One fault rule: which requests it matches (all of the given conditions), the fault, and how often. */
export interface FaultRule {
  /** Only this provider's routes (`d` includes `/d-poll` and `/d-results`); absent: every route, `/_sandbox/health` included. */
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

const FAULT_KINDS: readonly FaultKind["kind"][] = ["status", "delay", "drop", "drop_after_handling", "delay_answer"];

/**
 * A rule given as an object (the library's `injectFault`), checked as the
 * JSON vocabulary is, so a typo is an InputError naming `field` instead of a
 * rule that never fires. `started` are the providers a rule may name.
 */
export function checkFaultRule(rule: FaultRule, field: string, started: readonly string[]): FaultRule {
  const problem = faultRuleProblem(rule, started);
  if (problem) throw new InputError(field, problem.reason, problem.allowed);
  return rule;
}

function faultRuleProblem(rule: FaultRule, started: readonly string[]): { reason: string; allowed: string } | null {
  if (rule.provider !== undefined && !started.includes(rule.provider)) return { reason: `provider ${JSON.stringify(rule.provider)} is not started`, allowed: `the started providers: ${started.join(", ")}` };
  if (rule.method !== undefined && !/^[A-Za-z]+$/.test(rule.method)) return { reason: `method ${JSON.stringify(rule.method)} is not an HTTP method`, allowed: "GET, POST, PUT, DELETE, …" };
  if (rule.path !== undefined && !(rule.path instanceof RegExp)) return { reason: "path is not a regular expression", allowed: "a RegExp matched against the path without query, e.g. /^\\/d\\/v1\\//" };
  if (rule.times !== undefined && !(Number.isSafeInteger(rule.times) && rule.times >= 1)) return { reason: `times ${rule.times} is not a whole number ≥ 1`, allowed: "a whole number ≥ 1, or none for no limit" };
  if (rule.probability !== undefined && !(rule.probability >= 0 && rule.probability <= 1)) return { reason: `probability ${rule.probability} is not from 0 to 1`, allowed: "a number from 0 to 1" };
  // A rule from plain JavaScript may lack its fault altogether.
  const fault = rule.fault as FaultKind | undefined;
  if (fault === undefined || !FAULT_KINDS.includes(fault.kind)) return { reason: `fault.kind ${JSON.stringify(fault?.kind)} is not a kind of fault`, allowed: FAULT_KINDS.join(", ") };
  if (fault.kind === "status" && !(Number.isInteger(fault.status) && fault.status >= 100 && fault.status <= 599)) {
    return { reason: `fault.status ${fault.status} is not an HTTP status`, allowed: "a whole number from 100 to 599" };
  }
  if ((fault.kind === "delay" || fault.kind === "delay_answer") && !(Number.isSafeInteger(fault.ms) && fault.ms >= 0)) {
    return { reason: `fault.ms ${fault.ms} is not whole milliseconds ≥ 0`, allowed: "a whole number of real milliseconds ≥ 0" };
  }
  return null;
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
