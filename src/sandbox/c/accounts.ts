import { C_ERR, CApiError } from "./envelope.js";
import { C_TIER_SLOTS, type CAccountOptions, type CTier } from "./options.js";
import { holdsSlotAt, isRefundedAt, type CTaskRecord } from "./tasks.js";

/** One C account (one API key): its tier, its balance and its slots. */
export class CAccount {
  readonly apiKey: string;
  tier: CTier;
  /** The most slots held at once (measured at each accepted submit, the only moment the count can rise). */
  peakConcurrency = 0;
  private readonly startingCredits: number;
  /** Credits added or removed by the `setBalance` knob. */
  private adjustmentCredits = 0;
  private readonly tasks: CTaskRecord[] = [];

  constructor(options: Required<CAccountOptions>) {
    this.apiKey = options.apiKey;
    this.tier = options.tier;
    this.startingCredits = options.balanceCredits;
  }

  get slotLimit(): number {
    return C_TIER_SLOTS[this.tier];
  }

  slotsInUse(now: number): number {
    return this.tasks.filter((task) => holdsSlotAt(task, now)).length;
  }

  /** Derived from the tasks, so a refund appears the moment its task reaches status 7, with no timer. */
  balanceCredits(now: number): number {
    let balance = this.startingCredits + this.adjustmentCredits;
    for (const task of this.tasks) {
      balance -= task.costCredits;
      if (isRefundedAt(task, now)) balance += task.costCredits;
    }
    return balance;
  }

  setBalance(credits: number, now: number): void {
    this.adjustmentCredits += credits - this.balanceCredits(now);
  }

  /**
   * spec C Errors: a submit beyond the cap is 500044, and a rejected submit
   * neither consumes nor frees a slot. The slot check comes before the
   * balance check (the order is not shown).
   */
  checkAdmission(costCredits: number, now: number): void {
    if (this.slotsInUse(now) >= this.slotLimit) {
      const message = `concurrent limit reached: ${this.slotLimit} generating videos on the ${this.tier} tier`;
      throw new CApiError(C_ERR.concurrentLimit, message);
    }
    if (this.balanceCredits(now) < costCredits) {
      throw new CApiError(C_ERR.insufficientBalance, `insufficient balance: the task costs ${costCredits} credits`);
    }
  }

  /** Takes a slot and charges the task: charged at submit (the sandbox's choice), refunded on status 7. */
  add(task: CTaskRecord, now: number): void {
    this.tasks.push(task);
    this.peakConcurrency = Math.max(this.peakConcurrency, this.slotsInUse(now));
  }
}

export class CAccounts {
  private readonly byKey = new Map<string, CAccount>();

  constructor(accounts: Required<CAccountOptions>[]) {
    for (const options of accounts) this.byKey.set(options.apiKey, new CAccount(options));
  }

  /** spec C Authentication: every call carries `API-KEY`. */
  authenticate(header: string | string[] | undefined): CAccount {
    const apiKey = Array.isArray(header) ? header[0] : header;
    if (apiKey === undefined || apiKey.length === 0) throw new CApiError(C_ERR.invalidApiKey, "API-KEY header is required");
    const account = this.byKey.get(apiKey);
    if (!account) throw new CApiError(C_ERR.invalidApiKey, "the API key is not valid");
    return account;
  }

  get(apiKey: string): CAccount | undefined {
    return this.byKey.get(apiKey);
  }

  all(): CAccount[] {
    return [...this.byKey.values()];
  }
}
