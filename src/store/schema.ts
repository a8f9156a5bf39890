import type { Generated } from "kysely";

/** Row types of the store's tables, as Kysely sees them. Times are integer milliseconds since the epoch. */
export interface JobsTable {
  id: string;
  ref: string;
  batch_id: string | null;
  provider: string;
  model: string;
  operation: string | null;
  body_json: string;
  facts_json: string;
  warnings_json: string;
  state: string;
  reason: string | null;
  attempts: number;
  idempotency_key: string | null;
  provider_job_id: string | null;
  handles_json: string | null;
  provider_status: string | null;
  estimate_micro_usd: number | null;
  estimate_source: string;
  charge_micro_usd: number | null;
  charge_source: string | null;
  charge_state: string;
  error_code: string | null;
  error_message: string | null;
  error_detail_json: string | null;
  out_dir: string;
  lease_owner: string | null;
  lease_expires_at: number | null;
  next_attempt_at: number;
  created_at: number;
  updated_at: number;
  submitted_at: number | null;
  submit_sent_at: number | null;
  provider_done_at: number | null;
  finished_at: number | null;
  tracking_deadline_at: number | null;
  /** When the job stops being wanted (migration 20): null, never. */
  deadline_at: number | null;
  /** Its place in its tenant's queue at its provider when it was queued (migration 21): a queue position is a difference of two. */
  queue_rank: number | null;
  slots_held_json: string;
  last_pending_elapsed_ms: number | null;
  poll_failures: number;
  budget_id: string | null;
  budget_held_micro_usd: number;
  blocked_code: string | null;
  route_json: string | null;
  token_id: string | null;
  notify_url: string | null;
  /** Whose job it is (migration 17): the creating token's id, or `local`; a ref is unique per tenant. */
  tenant: string;
  /** The job's trace (migration 22): its span's trace id and span id, and the caller's span it is a child of; null: not traced. */
  trace_id: string | null;
  trace_span_id: string | null;
  trace_parent_span_id: string | null;
}

/** API tokens of `mediagate serve` (migration 10): the secret's sha256 only. */
export interface ApiTokensTable {
  id: string;
  name: string;
  secret_sha256: string;
  admin: number;
  read_only: number;
  budget_id: string | null;
  created_at: number;
  revoked_at: number | null;
  /** Its share of a provider's slots against the other tenants' (migration 19). */
  weight: number;
}

export interface JobEventsTable {
  id: Generated<number>;
  job_id: string;
  at: number;
  from_state: string | null;
  to_state: string;
  reason: string;
  detail_json: string | null;
}

export interface OutputsTable {
  job_id: string;
  idx: number;
  path: string;
  url: string;
  content_type: string;
  bytes: number;
  sha256: string;
  metadata_json: string;
  saved_at: number;
  media_json: string | null;
}

export interface SlotPoolsTable {
  pool_key: string;
  /** The published capacity. */
  configured_capacity: number;
  /** What the engine currently believes; lowered after the provider pushes back, raised again over time. */
  learned_capacity: number;
  /** No new slot is handed out before this time (after a 429 / 500044). */
  blocked_until: number;
  updated_at: number;
}

export interface SlotHoldsTable {
  pool_key: string;
  job_id: string;
  acquired_at: number;
}

export interface RateEventsTable {
  id: Generated<number>;
  window_key: string;
  /** When the request was sent. */
  at: number;
  /** When its answer (or transport failure) came back; null while in flight. */
  answered_at: number | null;
}

export interface ProviderHaltsTable {
  provider: string;
  code: string;
  message: string;
  job_id: string | null;
  at: number;
}

export interface LedgerTable {
  id: Generated<number>;
  job_id: string;
  provider: string;
  model: string;
  micro_usd: number;
  source: string;
  at: number;
}

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  provider: string;
  delivery_id: string | null;
  job_id: string | null;
  outcome: string;
  reason: string;
  received_at: number;
}

export interface BudgetsTable {
  id: string;
  ceiling_micro_usd: number;
  /** Estimates held by sent, not yet charged jobs plus the charges of charged ones. */
  committed_micro_usd: number;
  updated_at: number;
}

/** Refused webhook deliveries, counted per provider, reason and time bucket (migration 6). */
export interface WebhookRejectionsTable {
  /** One of our provider ids, or `unknown` when the route named none. */
  provider: string;
  /** A stable code (`bad_signature`, `too_large`, …), never request data. */
  reason: string;
  bucket_start: number;
  refused: number;
  /** How many of `refused` were answered 429 (their source was past its bound). */
  throttled: number;
  first_at: number;
  last_at: number;
}

/** Notifications a job owes (migration 11): `id` is the Standard Webhooks `webhook-id`. */
export interface NotificationsTable {
  id: string;
  job_id: string;
  /** The job's batch (migration 13): a command's engine reads its own batch's. */
  batch_id: string | null;
  /** `job.succeeded`, `job.failed`, …, `batch.completed` */
  event_type: string;
  /** The batch a `batch.completed` notification tells of (migration 23, unique: one per batch); null on a job's. */
  completes_batch?: string | null;
  url: string;
  /** The exact bytes sent, made at the first attempt; null before it. */
  body_json: string | null;
  /** Attempts claimed so far (the one in flight included). */
  attempts: number;
  created_at: number;
  /** When the next attempt is due; while one is in flight, when its claim lapses. */
  next_attempt_at: number;
  last_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: number | null;
  given_up_at: number | null;
}

/** The `Idempotency-Key` of an admitted request (migration 18), per tenant, with its answer, kept until `expires_at`. */
export interface IdempotencyKeysTable {
  tenant: string;
  key: string;
  request_sha256: string;
  /** 201 when the admission created a job, else 200. */
  status: number;
  job_ids_json: string;
  batch_id: string | null;
  created_at: number;
  expires_at: number;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: number;
}

export interface Database {
  jobs: JobsTable;
  job_events: JobEventsTable;
  outputs: OutputsTable;
  slot_pools: SlotPoolsTable;
  slot_holds: SlotHoldsTable;
  rate_events: RateEventsTable;
  provider_halts: ProviderHaltsTable;
  ledger: LedgerTable;
  webhook_deliveries: WebhookDeliveriesTable;
  budgets: BudgetsTable;
  api_tokens: ApiTokensTable;
  webhook_rejections: WebhookRejectionsTable;
  notifications: NotificationsTable;
  idempotency_keys: IdempotencyKeysTable;
  schema_migrations: SchemaMigrationsTable;
}
