/**
 * The floor `bench/intake.ts` measures intake against: a bare Fastify route
 * that parses a JSON body and inserts one row into a store of the same kind
 * (a SQLite file in WAL mode with mediagate's settings, or a PostgreSQL pool
 * of mediagate's default size), answering the row as JSON. Nothing else:
 * no validation, estimate, budget or idempotency, so what it costs is what
 * any HTTP intake on this machine and store costs at least.
 *
 * Run as its own process: `tsx bench/intake-floor.ts sqlite:PATH | postgres://…`;
 * it prints `{"url": …}` once listening and stops on SIGTERM.
 */
import { randomUUID } from "node:crypto";
import BetterSqlite3 from "better-sqlite3";
import Fastify from "fastify";
import pg from "pg";

const address = process.argv[2] ?? "";
const TABLE = "CREATE TABLE IF NOT EXISTS intake (id TEXT PRIMARY KEY, ref TEXT NOT NULL UNIQUE, body_json TEXT NOT NULL, created_at BIGINT NOT NULL)";

type Insert = (id: string, ref: string, body: string, at: number) => Promise<void>;

async function openInsert(): Promise<{ insert: Insert; close(): Promise<void> }> {
  if (address.startsWith("sqlite:")) {
    const database = new BetterSqlite3(address.slice("sqlite:".length));
    database.pragma("journal_mode = WAL");
    database.pragma("synchronous = NORMAL");
    database.exec(TABLE);
    const statement = database.prepare("INSERT INTO intake (id, ref, body_json, created_at) VALUES (?, ?, ?, ?)");
    return { insert: async (id, ref, body, at) => void statement.run(id, ref, body, at), close: async () => void database.close() };
  }
  const pool = new pg.Pool({ connectionString: address, max: 10 });
  await pool.query(TABLE);
  return {
    insert: async (id, ref, body, at) => void (await pool.query({ name: "intake_insert", text: "INSERT INTO intake (id, ref, body_json, created_at) VALUES ($1, $2, $3, $4)", values: [id, ref, body, at] })),
    close: () => pool.end(),
  };
}

const store = await openInsert();
const app = Fastify({ logger: false });
app.post("/v1/jobs", async (request, reply) => {
  const body = request.body as { ref?: string };
  const row = { id: randomUUID(), ref: body.ref ?? randomUUID(), created_at: Date.now() };
  await store.insert(row.id, row.ref, JSON.stringify(body), row.created_at);
  return reply.code(201).send({ ...row, state: "queued" });
});
const url = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.once("SIGTERM", () => {
  void app.close().then(() => store.close()).then(() => process.exit(0));
});
