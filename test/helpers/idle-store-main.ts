/**
 * A script that opens a PostgreSQL store (DATABASE_URL, schema in argv),
 * reads one job, says `read`, and returns without closing the store: the
 * process must end by itself, held by nothing of the store's pool (see
 * prepared-statements.test.ts).
 */
import { openPostgresStore } from "../../src/store/postgres.js";

const store = await openPostgresStore(process.env.DATABASE_URL!, { schema: process.argv[2]! });
await store.getJob("job_none");
process.stdout.write("read\n");
