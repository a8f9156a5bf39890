/**
 * Migration 12: the dashboard's and the API's search by the start of a ref
 * (`ref_prefix`, issue 12) reads a range of an index, never the whole table
 * or all of a token's jobs (see ref-prefix.ts). A range of refs is a prefix
 * only where refs compare by code point: SQLite's BINARY collation over
 * UTF-8 does, so its unique index on ref serves an admin's search. In
 * PostgreSQL that unique index follows the database's collation, in which
 * (en_US, say) a range is not a prefix and `LIKE 'p%'` cannot use the index:
 * `jobs_ref_prefix` compares as "C". A token sees only its own jobs, so its
 * search reads `jobs_token_ref`: its refs alone, in the same order.
 */
export const migration012 = {
  version: 12,
  name: "ref_prefix",
  sqlite: `CREATE INDEX jobs_token_ref ON jobs (token_id, ref)`,
  postgres: `
CREATE INDEX jobs_ref_prefix ON jobs (ref COLLATE "C");
CREATE INDEX jobs_token_ref ON jobs (token_id, ref COLLATE "C")
`,
};
