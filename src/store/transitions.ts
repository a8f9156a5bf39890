import { type Compilable, sql, type Updateable } from "kysely";
import { isTerminal, type Job, type JobState } from "../core/job.js";
import { commitToBudget } from "./budgets.js";
import type { Db, StoreContext } from "./context.js";
import { appendEventRow } from "./events.js";
import { insertNotification, lockBatchEnd, newNotificationId, oweBatchCompletion, owedNotificationType } from "./notifications.js";
import { eventRow, patchToRow, rowToJob, toNumber } from "./rows.js";
import type { JobsTable } from "./schema.js";
import type { JobExpectation, JobPatch, TransitionExtras } from "./store.js";

/**
 * How a job changes: a transition (its state, with its event, its slots
 * released, its budget, outputs, ledger line and owed notification, all or
 * none), the changes that leave its state as it is, and the change of a job
 * locked for it that a claim makes too (`changeLockedWithEvent`).
 */

/** Slots are held only while a submit is in flight and while the provider is generating. */
function holdsSlots(state: JobState): boolean {
  return state === "submitting" || state === "running";
}

function states(expect: JobExpectation): readonly JobState[] {
  return typeof expect.state === "string" ? [expect.state] : expect.state;
}

/** The statements' key part for an expectation's target: checked or not. */
function targetKind(expect: JobExpectation | null): "target" | "" {
  return expect?.target ? "target" : "";
}

/** What an expectation asks of the job's lease, as the statements that check it differ. */
function leaseKind(expect: JobExpectation | null): "any" | "none" | "owner" {
  return expect?.leaseOwner === undefined ? "any" : expect.leaseOwner === null ? "none" : "owner";
}

/** A transition's columns that follow from its target state: a terminal job's end time, and its blockage cleared unless set. */
function endsAndUnblocks(row: Partial<JobsTable>, to: JobState, patch: JobPatch, now: number): void {
  if (isTerminal(to) && patch.finishedAt === undefined) row.finished_at = now;
  if (patch.blockedCode === undefined) row.blocked_code = null;
}

/** What a transition reads of the job it locks. */
type LockedState = Pick<Job, "state" | "leaseOwner" | "provider" | "model" | "slotsHeld" | "budgetId" | "budgetHeldMicroUsd" | "providerJobId">;

/**
 * What a job holds in its budget after a move. From its admission it holds
 * its estimate (migration 18; a job admitted before holds it from its first
 * claim): back in the queue (a refused submit, a route's next target) it
 * keeps it, and the next claim commits only the difference; ended without
 * being sent, or refused at its submit (never accepted), it spent nothing and
 * gives it back; a known charge replaces it; otherwise (running, unknown
 * outcome, a charge the provider settles later) it keeps holding.
 */
function budgetHeldAfter(current: LockedState, to: JobState, patch: JobPatch): number {
  const neverSent = current.state === "queued" && isTerminal(to);
  // Failed at its submit, or cancelled at its claim (its deadline passed): never accepted.
  const neverAccepted = current.state === "submitting" && (to === "failed" || to === "cancelled") && !current.providerJobId && !patch.providerJobId;
  if (neverSent || neverAccepted) return 0;
  if (typeof patch.chargeMicroUsd === "number") return patch.chargeMicroUsd;
  return current.budgetHeldMicroUsd;
}

/**
 * The columns an update sets, for a reusable statement: their names (sorted,
 * those given as undefined left out, as Kysely leaves them out of an object
 * of values), the SET object in slots, and the slots' values.
 */
function columnSlots(columns: Partial<JobsTable>) {
  const names = (Object.keys(columns) as Array<keyof JobsTable>).filter((name) => columns[name] !== undefined).sort();
  return {
    names,
    set: (slot: <T>(name: string) => T) => Object.fromEntries(names.map((name) => [name, slot(`set_${name}`)])) as Updateable<JobsTable>,
    values: Object.fromEntries(names.map((name) => [`set_${name}`, columns[name]])),
  };
}

export async function transition(
  context: StoreContext,
  jobId: string,
  expect: JobExpectation,
  to: JobState,
  patch: JobPatch,
  reason: string,
  now: number,
  detail?: unknown,
  extras: TransitionExtras = {},
): Promise<Job | null> {
  if (context.dialect === "postgres") {
    const done = await transitionInOneStatement(context, jobId, expect, to, patch, reason, now, detail, extras);
    if (done !== "locked") return done;
  }
  return context.db.transaction().execute(async (trx) => {
    const current = await lockJobState(context, trx, jobId);
    if (!current || !matches(current, expect)) return null;
    const row = patchToRow(patch);
    const releasing = !holdsSlots(to) && current.slotsHeld.length > 0;
    if (releasing) {
      await trx.deleteFrom("slot_holds").where("job_id", "=", jobId).execute();
      row.slots_held_json = "[]";
    }
    endsAndUnblocks(row, to, patch, now);
    if (current.budgetId) {
      const held = budgetHeldAfter(current, to, patch);
      if (held !== current.budgetHeldMicroUsd) {
        await commitToBudget(context, trx, current.budgetId, held - current.budgetHeldMicroUsd, now);
        row.budget_held_micro_usd = held;
      }
    }
    const event = eventRow(jobId, now, current.state, to, reason, detail);
    const updated = await changeLockedWithEvent(context, trx, jobId, { ...row, state: to, updated_at: now }, event);
    for (const output of extras.outputs ?? []) {
      await trx
        .insertInto("outputs")
        .values({
          job_id: jobId,
          idx: output.index,
          path: output.path,
          url: output.url,
          content_type: output.contentType,
          bytes: output.bytes,
          sha256: output.sha256,
          metadata_json: JSON.stringify(output.metadata),
          media_json: JSON.stringify(output.media),
          saved_at: now,
        })
        .onConflict((conflict) => conflict.columns(["job_id", "idx"]).doUpdateSet({
          path: output.path,
          url: output.url,
          content_type: output.contentType,
          bytes: output.bytes,
          sha256: output.sha256,
          metadata_json: JSON.stringify(output.metadata),
          media_json: JSON.stringify(output.media),
          saved_at: now,
        }))
        .execute();
    }
    if (extras.ledger) {
      await trx
        .insertInto("ledger")
        .values({
          job_id: jobId,
          provider: updated.provider,
          model: updated.model,
          micro_usd: extras.ledger.microUsd,
          source: extras.ledger.source,
          at: now,
        })
        .onConflict((conflict) => conflict.column("job_id").doNothing())
        .execute();
    }
    if (releasing) context.slotReleases++;
    return rowToJob(updated);
  });
}

/**
 * PostgreSQL: a transition as one statement (data-modifying WITHs), so one
 * round trip where a transaction takes four or more (begin, the row's
 * lock, the change and its event, commit): the job's row locked, changed
 * when it meets `expect`, its slots released when it leaves them, its
 * event, outputs and ledger line written, all or none. A job that commits
 * to a budget is left unchanged ("locked"): the held amount is worked out
 * from the row, in the transaction that follows; so is a batch's job that
 * ends, whose batch may end with it (see `oweBatchCompletion`).
 */
async function transitionInOneStatement(
  context: StoreContext,
  jobId: string,
  expect: JobExpectation,
  to: JobState,
  patch: JobPatch,
  reason: string,
  now: number,
  detail: unknown,
  extras: TransitionExtras,
): Promise<Job | null | "locked"> {
  const row = patchToRow(patch);
  // A batch's job that ends may be the batch's last: that is decided under the batch's lock, in the transaction that follows.
  const ending = isTerminal(to);
  const releasing = !holdsSlots(to);
  if (releasing) row.slots_held_json = "[]";
  endsAndUnblocks(row, to, patch, now);
  const { names, set, values } = columnSlots({ ...row, state: to, updated_at: now });
  const wanted = states(expect);
  const lease = leaseKind(expect);
  const outputs = extras.outputs ?? [];
  // The notification this move may owe (the state it leaves is read in the statement).
  const notifyType = owedNotificationType(context.notificationPolicy, null, to);
  const key = `transition:${names.join(",")}:${wanted.join(",")}:${lease}:${targetKind(expect)}:${releasing}:${outputs.length}:${extras.ledger ? "ledger" : ""}:${notifyType ? "notify" : ""}:${ending ? "ending" : ""}`;
  const outputValues = Object.fromEntries(
    outputs.flatMap((output, index) => [
      [`o${index}_idx`, output.index],
      [`o${index}_path`, output.path],
      [`o${index}_url`, output.url],
      [`o${index}_type`, output.contentType],
      [`o${index}_bytes`, output.bytes],
      [`o${index}_sha256`, output.sha256],
      [`o${index}_metadata`, JSON.stringify(output.metadata)],
      [`o${index}_media`, JSON.stringify(output.media)],
    ]),
  );
  const event = eventRow(jobId, now, null, to, reason, detail);
  const [result] = await context.reusable<JobsTable & { cur_state: string; cur_lease_owner: string | null; cur_provider: string; cur_model: string; cur_slots: string; cur_budget: string | null; cur_batch: string | null; updated_id: string | null }>(
    context.db,
    key,
    (slot) => {
      const assignments = sql.join(names.map((name) => sql`${sql.ref(name)} = ${set(slot)[name]}`));
      const leaseCheck = lease === "none" ? sql` and cur.lease_owner is null` : lease === "owner" ? sql` and cur.lease_owner = ${slot<string>("owner")}` : sql``;
      const targetCheck = expect.target ? sql` and cur.provider = ${slot<string>("target_provider")} and cur.model = ${slot<string>("target_model")}` : sql``;
      const text = (name: string) => sql`cast(${slot(name)} as text)`;
      const bigint = (name: string) => sql`cast(${slot(name)} as bigint)`;
      const parts = [
        sql`cur as (select id, state, lease_owner, provider, model, slots_held_json, budget_id, batch_id from jobs where id = ${slot<string>("id")} for update)`,
        sql`updated as (update jobs set ${assignments} from cur where jobs.id = cur.id and cur.state in (${sql.join(wanted.map((_, index) => slot(`state${index}`)))})${leaseCheck}${targetCheck} and cur.budget_id is null${ending ? sql` and cur.batch_id is null` : sql``} returning jobs.*, cur.state as from_state)`,
        sql`event as (insert into job_events (job_id, at, from_state, to_state, reason, detail_json) select id, ${bigint("at")}, from_state, ${text("to_state")}, ${text("reason")}, ${text("detail_json")} from updated)`,
      ];
      if (releasing) parts.push(sql`released as (delete from slot_holds where job_id in (select id from updated))`);
      if (outputs.length > 0) {
        const rows = sql.join(
          outputs.map((_, index) => sql`(${sql.join([sql`cast(${slot(`o${index}_idx`)} as integer)`, text(`o${index}_path`), text(`o${index}_url`), text(`o${index}_type`), bigint(`o${index}_bytes`), text(`o${index}_sha256`), text(`o${index}_metadata`), text(`o${index}_media`)])})`),
        );
        parts.push(
          sql`saved as (insert into outputs (job_id, idx, path, url, content_type, bytes, sha256, metadata_json, media_json, saved_at) select updated.id, o.idx, o.path, o.url, o.content_type, o.bytes, o.sha256, o.metadata_json, o.media_json, ${bigint("at")} from updated cross join (values ${rows}) as o (idx, path, url, content_type, bytes, sha256, metadata_json, media_json) on conflict (job_id, idx) do update set path = excluded.path, url = excluded.url, content_type = excluded.content_type, bytes = excluded.bytes, sha256 = excluded.sha256, metadata_json = excluded.metadata_json, media_json = excluded.media_json, saved_at = excluded.saved_at)`,
        );
      }
      if (notifyType) {
        const url = sql`coalesce(notify_url, ${text("notify_default_url")})`;
        parts.push(
          sql`notified as (insert into notifications (id, job_id, batch_id, event_type, url, body_json, attempts, created_at, next_attempt_at) select ${text("notify_id")}, id, batch_id, ${text("notify_type")}, ${url}, null, 0, ${bigint("at")}, ${bigint("at")} from updated where ${url} is not null and from_state <> ${text("to_state")})`,
        );
      }
      if (extras.ledger) {
        parts.push(sql`charged as (insert into ledger (job_id, provider, model, micro_usd, source, at) select id, provider, model, ${bigint("ledger_micro_usd")}, ${text("ledger_source")}, ${bigint("at")} from updated on conflict (job_id) do nothing)`);
      }
      const statement = sql`with ${sql.join(parts)} select updated.*, updated.id as updated_id, cur.state as cur_state, cur.lease_owner as cur_lease_owner, cur.provider as cur_provider, cur.model as cur_model, cur.slots_held_json as cur_slots, cur.budget_id as cur_budget, cur.batch_id as cur_batch from cur left join updated on true`;
      return { compile: () => statement.compile(context.db) } as Compilable<never>;
    },
    {
      id: jobId,
      owner: expect.leaseOwner,
      target_provider: expect.target?.provider,
      target_model: expect.target?.model,
      ...Object.fromEntries(wanted.map((state, index) => [`state${index}`, state])),
      ...values,
      ...outputValues,
      at: now,
      to_state: to,
      reason: event.reason,
      detail_json: event.detail_json,
      ledger_micro_usd: extras.ledger?.microUsd,
      ledger_source: extras.ledger?.source,
      ...(notifyType ? { notify_id: newNotificationId(now), notify_type: notifyType, notify_default_url: context.notificationPolicy.defaultUrl } : {}),
    },
  );
  if (!result) return null;
  if (result.updated_id === null) {
    const current = { state: result.cur_state as JobState, leaseOwner: result.cur_lease_owner, provider: result.cur_provider as Job["provider"], model: result.cur_model };
    return (result.cur_budget !== null || (ending && result.cur_batch !== null)) && matches(current, expect) ? "locked" : null;
  }
  if (releasing && (JSON.parse(result.cur_slots) as string[]).length > 0) context.slotReleases++;
  return rowToJob(result);
}

export async function updateJob(context: StoreContext, jobId: string, expect: JobExpectation, patch: JobPatch, now: number): Promise<Job | null> {
  const row = await updatedRow(context, context.db, jobId, { ...patchToRow(patch), updated_at: now }, expect);
  return row ? rowToJob(row) : null;
}

export async function markSubmitSent(context: StoreContext, jobId: string, owner: string, at: number): Promise<boolean> {
  const rows = await context.reusable(
    context.db,
    "markSubmitSent",
    (slot) =>
      context.db
        .updateTable("jobs")
        .set({ submit_sent_at: slot<number>("at"), updated_at: slot<number>("at") })
        .where("id", "=", slot<string>("id"))
        .where("state", "=", "submitting")
        .where("lease_owner", "=", slot<string>("owner"))
        .returning("id"),
    { id: jobId, owner, at },
  );
  return rows.length > 0;
}

/**
 * Sets `columns` on the job when it meets `expect` (any state and lease
 * when it is null), returning the row as it is after; undefined when it
 * does not. One compiled statement per set of columns and expectation.
 */
async function updatedRow(context: StoreContext, executor: Db, jobId: string, columns: Partial<JobsTable>, expect: JobExpectation | null): Promise<JobsTable | undefined> {
  const { names, set, values } = columnSlots(columns);
  const wanted = expect ? states(expect) : null;
  const lease = leaseKind(expect);
  const key = `updateJob:${names.join(",")}:${wanted?.join(",") ?? "*"}:${lease}:${targetKind(expect)}`;
  const [row] = await context.reusable(executor, key, (slot) => {
    let query = executor
      .updateTable("jobs")
      .set(set(slot))
      .where("id", "=", slot<string>("id"));
    if (wanted) query = query.where("state", "in", [...wanted]);
    if (lease === "none") query = query.where("lease_owner", "is", null);
    else if (lease === "owner") query = query.where("lease_owner", "=", slot<string>("owner"));
    if (expect?.target) query = query.where("provider", "=", slot<string>("target_provider")).where("model", "=", slot<string>("target_model"));
    return query.returningAll();
  }, { id: jobId, owner: expect?.leaseOwner, target_provider: expect?.target?.provider, target_model: expect?.target?.model, ...values });
  return row;
}

function matches(job: Pick<Job, "state" | "leaseOwner" | "provider" | "model">, expect: JobExpectation): boolean {
  if (!states(expect).includes(job.state)) return false;
  if (expect.target && (job.provider !== expect.target.provider || job.model !== expect.target.model)) return false;
  if (expect.leaseOwner === undefined) return true;
  return job.leaseOwner === expect.leaseOwner;
}

/**
 * Sets `columns` on a job locked in `trx`, appends its event and holds the
 * slots of the pools keyed in `holds` for it, at the event's time; the row
 * as it is after. One round trip on PostgreSQL, where each statement is one
 * (SQLite runs in-process, a statement at a time).
 */
export async function changeLockedWithEvent(context: StoreContext, trx: Db, jobId: string, columns: Partial<JobsTable>, event: ReturnType<typeof eventRow>, holds: readonly string[] = []): Promise<JobsTable> {
  let updated: JobsTable | undefined;
  if (context.dialect === "postgres") {
    updated = await updatedRowWithEvent(context, trx, jobId, columns, event, holds);
  } else {
    for (const key of holds) {
      await context.reusable(
        trx,
        "holdSlot",
        (slot) => trx.insertInto("slot_holds").values({ pool_key: slot<string>("key"), job_id: slot<string>("jobId"), acquired_at: slot<number>("now") }),
        { key, jobId, now: event.at },
      );
    }
    updated = await updatedRow(context, trx, jobId, columns, null);
    if (updated) await appendEventRow(context, trx, event);
  }
  if (!updated) throw new Error(`job ${jobId} was locked, then not found`);
  await oweNotification(context, trx, updated, event);
  if (updated.batch_id !== null && isTerminal(event.to_state) && (event.from_state === null || !isTerminal(event.from_state))) {
    const url = updated.notify_url ?? context.notificationPolicy.defaultUrl;
    if (url) {
      if (context.dialect === "postgres") await lockBatchEnd(trx, updated.batch_id);
      await oweBatchCompletion(context, trx, { id: updated.id, batchId: updated.batch_id, url, at: event.at });
    }
  }
  return updated;
}

/**
 * The notification a change owes (issue 12), written in the change's own
 * transaction: a job that ended owes it even if the process dies the next
 * moment, so no pass over finished jobs is ever needed to find one missing.
 */
async function oweNotification(context: StoreContext, trx: Db, row: JobsTable, event: ReturnType<typeof eventRow>): Promise<void> {
  const type = owedNotificationType(context.notificationPolicy, event.from_state, event.to_state);
  const url = row.notify_url ?? context.notificationPolicy.defaultUrl;
  if (type && url) await insertNotification(trx, { id: newNotificationId(event.at), jobId: row.id, batchId: row.batch_id, type, url, at: event.at });
}

/**
 * PostgreSQL: sets `columns` on the job, appends `event` and holds the
 * slots of `holds` for it in one statement (a data-modifying WITH),
 * returning the row as it is after.
 */
async function updatedRowWithEvent(context: StoreContext, trx: Db, jobId: string, columns: Partial<JobsTable>, event: ReturnType<typeof eventRow>, holds: readonly string[] = []): Promise<JobsTable | undefined> {
  const { names, set, values } = columnSlots(columns);
  const holdKeys = Object.fromEntries(holds.map((key, index) => [`hold${index}`, key]));
  const [row] = await context.reusable(trx, `updateJobWithEvent:${names.join(",")}:${holds.length}`, (slot) => {
    const changed = trx
      .with("updated", (db) =>
        db
          .updateTable("jobs")
          .set(set(slot))
          .where("id", "=", slot<string>("id"))
          .returningAll(),
      )
      .with("event", (db) =>
        db
          .insertInto("job_events")
          .columns(["job_id", "at", "from_state", "to_state", "reason", "detail_json"])
          .expression((eb) =>
            eb
              .selectFrom("updated")
              .select([
                "updated.id",
                sql<number>`cast(${slot<number>("at")} as bigint)`.as("at"),
                sql<string | null>`cast(${slot<string | null>("from_state")} as text)`.as("from_state"),
                sql<string>`cast(${slot<string>("to_state")} as text)`.as("to_state"),
                sql<string>`cast(${slot<string>("reason")} as text)`.as("reason"),
                sql<string | null>`cast(${slot<string | null>("detail_json")} as text)`.as("detail_json"),
              ]),
          ),
      );
    if (holds.length === 0) return changed.selectFrom("updated").selectAll();
    return changed
      .with("held", (db) =>
        db
          .insertInto("slot_holds")
          .values(holds.map((_, index) => ({ pool_key: slot<string>(`hold${index}`), job_id: slot<string>("id"), acquired_at: slot<number>("at") }))),
      )
      .selectFrom("updated")
      .selectAll();
  },
  { id: jobId, ...values, ...holdKeys, at: event.at, from_state: event.from_state, to_state: event.to_state, reason: event.reason, detail_json: event.detail_json });
  return row as JobsTable | undefined;
}

/** The job's row locked, and what a transition needs of it (not its body or answers: it reads back the whole row it writes). */
async function lockJobState(context: StoreContext, trx: Db, jobId: string): Promise<LockedState | null> {
  const [row] = await context.reusable(
    trx,
    "lockJobState",
    (slot) =>
      context.locked(
        trx
          .selectFrom("jobs")
          .select(["state", "lease_owner", "provider", "model", "slots_held_json", "budget_id", "budget_held_micro_usd", "provider_job_id"])
          .where("id", "=", slot<string>("id")),
      ),
    { id: jobId },
  );
  if (!row) return null;
  return {
    state: row.state as JobState,
    leaseOwner: row.lease_owner,
    provider: row.provider as Job["provider"],
    model: row.model,
    slotsHeld: JSON.parse(row.slots_held_json) as string[],
    budgetId: row.budget_id,
    budgetHeldMicroUsd: toNumber(row.budget_held_micro_usd),
    providerJobId: row.provider_job_id,
  };
}
