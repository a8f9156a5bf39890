import { migration001 } from "./001_init.js";
import { migration002 } from "./002_webhook_deliveries.js";

export interface Migration {
  version: number;
  name: string;
  sqlite: string;
  postgres: string;
}

/** Every migration, in order. Append only. */
export const MIGRATIONS: readonly Migration[] = [migration001, migration002];
