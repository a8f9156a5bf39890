import type { SandboxContext } from "../context.js";
import { AAccounts, type AAccount, type APlan } from "./accounts.js";
import { ACallbacks } from "./callbacks.js";
import { AApiError } from "./errors.js";
import { modelCatalogue, type AModel } from "./models.js";
import { drawDuration, type ResolvedAOptions } from "./options.js";
import { SlidingWindowLimiter } from "./rate-limit.js";
import { parseTaskRequest } from "./request.js";
import { AResults } from "./results.js";
import { taskObject, type ATaskObject } from "./task-object.js";
import { ATaskStore, type AOutcome, type ATaskRecord } from "./tasks.js";
import { completionTokens } from "./usage.js";

const RATE_WINDOW_MS = 60_000;
/** Editing bills the reference video's length; when unknown, this. */
const UNKNOWN_EDIT_SECONDS = 5;

/** Everything service A does, independent of HTTP routing. */
export class AService {
  readonly accounts: AAccounts;
  readonly models: ReadonlyMap<string, AModel>;
  readonly tasks: ATaskStore;
  readonly results: AResults;
  callbacks: ACallbacks;
  limiter: SlidingWindowLimiter;
  private readonly injectedOutcomes: AOutcome[] = [];

  constructor(
    private readonly context: SandboxContext,
    private readonly options: ResolvedAOptions,
  ) {
    this.accounts = new AAccounts(options.standardKeys, options.enterpriseKeys);
    this.models = modelCatalogue(options.models);
    this.tasks = new ATaskStore(context.clock);
    this.results = new AResults(context, this.tasks, options.newestGenerationDownloadLimit);
    this.callbacks = new ACallbacks(this.tasks, context.clock, (task) => this.render(task));
    this.limiter = new SlidingWindowLimiter(context.clock, RATE_WINDOW_MS);
  }

  /** Authentication, then the per-key rate limit (every request counts, polls too), then the key/base-path pairing. */
  admit(authorization: string | string[] | undefined, pathPlan: APlan): AAccount {
    const account = this.accounts.authenticate(authorization);
    const limit =
      account.plan === "enterprise" ? this.options.enterpriseRequestsPerMinute : this.options.standardRequestsPerMinute;
    const decision = this.limiter.take(account.apiKey, limit);
    if (!decision.allowed) {
      // Retry-After in whole seconds of the sandbox's virtual clock, rounded up.
      const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      throw new AApiError(429, "RateLimitExceeded", `more than ${limit} requests per minute`, undefined, {
        "retry-after": String(seconds),
      });
    }
    this.accounts.requirePlan(account, pathPlan);
    return account;
  }

  create(account: AAccount, body: unknown): ATaskRecord {
    const request = parseTaskRequest(body, {
      models: this.models,
      adaptiveRatio: this.options.adaptiveRatio,
      referenceVideoSeconds: this.options.referenceVideoSeconds,
      random: this.context.random,
    });
    const createdAt = this.context.clock.now();
    const runningAt = createdAt + drawDuration(this.options.queueMs, this.context.random);
    const finishedAt = runningAt + drawDuration(this.options.renderMs, this.context.random);
    const referenceSeconds = request.items.flatMap((item) =>
      item.type === "video_url" ? [this.options.referenceVideoSeconds?.(item.url)] : [],
    )[0];
    const billedSeconds = request.duration === -1 ? (referenceSeconds ?? UNKNOWN_EDIT_SECONDS) : request.duration;
    const task: ATaskRecord = {
      id: this.newTaskId(createdAt),
      apiKey: account.apiKey,
      plan: account.plan,
      request,
      createdAt,
      runningAt,
      finishedAt,
      outcome: this.injectedOutcomes.shift() ?? "succeeded",
      completionTokens: completionTokens(request.resolution, request.videoRatio, billedSeconds),
      downloads: 0,
    };
    this.tasks.add(task);
    this.callbacks.track(task);
    return task;
  }

  /** A task is visible only to the key that created it; anything else is "no such id". */
  read(account: AAccount, id: string): ATaskObject {
    const task = this.tasks.find(id);
    if (!task || task.apiKey !== account.apiKey) throw new AApiError(404, "NotFound", `task ${id} does not exist`);
    return this.render(task);
  }

  render(task: ATaskRecord): ATaskObject {
    return taskObject(task, this.context.clock.now(), (succeeded) => this.results.urlFor(succeeded));
  }

  /** Forgets every task, callback, rate window and injected outcome (the result routes keep the same task store). */
  async reset(): Promise<void> {
    await this.callbacks.close();
    this.tasks.clear();
    this.callbacks = new ACallbacks(this.tasks, this.context.clock, (task) => this.render(task));
    this.limiter = new SlidingWindowLimiter(this.context.clock, RATE_WINDOW_MS);
    this.injectedOutcomes.length = 0;
  }

  injectOutcome(outcome: AOutcome, count: number): void {
    for (let i = 0; i < count; i++) this.injectedOutcomes.push(outcome);
  }

  /** spec A create response: the id starts with `cgt-`; the rest (virtual UTC timestamp, random suffix) is the sandbox's. */
  private newTaskId(createdAt: number): string {
    const stamp = new Date(createdAt).toISOString().replace(/\D/g, "").slice(0, 14);
    for (;;) {
      const suffix = Math.floor(this.context.random() * 36 ** 6)
        .toString(36)
        .padStart(6, "0");
      const id = `cgt-${stamp}-${suffix}`;
      if (!this.tasks.find(id)) return id;
    }
  }
}
