import type { SandboxContext } from "../context.js";
import { CAccounts, type CAccount } from "./accounts.js";
import { C_ERR, CApiError } from "./envelope.js";
import { drawDuration, type ResolvedCOptions } from "./options.js";
import { taskCostCredits } from "./pricing.js";
import { parseSubmitRequest } from "./request.js";
import { CResults } from "./results.js";
import { statusAt, type COutcome, type CTaskRecord } from "./tasks.js";
import { CTraceIds } from "./trace-ids.js";

export interface CResultResp {
  video_id: string;
  status: number;
  url?: string;
}

/** Everything service C does, independent of HTTP routing. */
export class CService {
  accounts: CAccounts;
  traceIds = new CTraceIds();
  readonly results: CResults;
  readonly tasks = new Map<string, CTaskRecord>();
  /** Every submit request that reached the submit route, whatever its answer. */
  submitCount = 0;
  readonly errCodeCounts = new Map<number, number>();
  private readonly injectedOutcomes: COutcome[] = [];
  private retryLaterRemaining = 0;
  private sequence = 0;

  constructor(
    private readonly context: SandboxContext,
    readonly options: ResolvedCOptions,
  ) {
    this.accounts = new CAccounts(options.accounts);
    this.results = new CResults(context, this.tasks, options.resultUrlTtlMs);
  }

  /** API-KEY first, then Ai-trace-id. */
  authenticate(headers: Record<string, string | string[] | undefined>): CAccount {
    const account = this.accounts.authenticate(headers["api-key"]);
    this.traceIds.check(headers["ai-trace-id"]);
    return account;
  }

  submit(account: CAccount, body: unknown): CTaskRecord {
    const request = parseSubmitRequest(body, this.options.accepted);
    if (this.retryLaterRemaining > 0) {
      this.retryLaterRemaining -= 1;
      throw new CApiError(C_ERR.retryLater, "the service is busy; retry later");
    }
    const now = this.context.clock.now();
    const costCredits = taskCostCredits(request);
    account.checkAdmission(costCredits, now);
    this.sequence += 1;
    const task: CTaskRecord = {
      // The id's form is not shown beyond "string": the sandbox uses 18 digits (virtual ms + sequence).
      videoId: `${now}${String(this.sequence).padStart(5, "0")}`,
      apiKey: account.apiKey,
      request,
      costCredits,
      createdAt: now,
      finishedAt: now + drawDuration(this.options.renderMs, this.context.random),
      outcome: this.injectedOutcomes.shift() ?? this.drawOutcome(),
      downloads: 0,
    };
    account.add(task, now);
    this.tasks.set(task.videoId, task);
    return task;
  }

  result(account: CAccount, videoId: string): CResultResp {
    const task = this.tasks.get(videoId);
    if (!task || task.apiKey !== account.apiKey) throw new CApiError(C_ERR.videoNotFound, `no video ${videoId}`);
    const status = statusAt(task, this.context.clock.now());
    return { video_id: task.videoId, status, ...(status === 1 ? { url: this.results.urlFor(task) } : {}) };
  }

  /**
   * Forgets every task, trace id, counter and injected answer; each account is
   * as configured again (balance, tier, no slots held, no peak). Video ids keep
   * counting up, so an id from before a reset never names a new task.
   */
  reset(): void {
    this.tasks.clear();
    this.accounts = new CAccounts(this.options.accounts);
    this.traceIds = new CTraceIds();
    this.submitCount = 0;
    this.errCodeCounts.clear();
    this.injectedOutcomes.length = 0;
    this.retryLaterRemaining = 0;
  }

  countErrCode(errCode: number): void {
    this.errCodeCounts.set(errCode, (this.errCodeCounts.get(errCode) ?? 0) + 1);
  }

  injectOutcome(outcome: COutcome, count: number): void {
    for (let i = 0; i < count; i++) this.injectedOutcomes.push(outcome);
  }

  injectRetryLater(count: number): void {
    this.retryLaterRemaining += count;
  }

  private drawOutcome(): COutcome {
    const draw = this.context.random();
    if (draw < this.options.moderationRate) return 7;
    if (draw < this.options.moderationRate + this.options.failureRate) return 8;
    return 1;
  }
}
