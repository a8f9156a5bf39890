import { migration001 } from "./001_init.js";
import { migration002 } from "./002_webhook_deliveries.js";
import { migration003 } from "./003_rate_answered_at.js";
import { migration004 } from "./004_submit_sent_at.js";
import { migration005 } from "./005_budgets_and_scope.js";
import { migration006 } from "./006_webhook_rejections.js";
import { migration007 } from "./007_hot_path_indexes.js";
import { migration008 } from "./008_job_route.js";
import { migration009 } from "./009_output_media.js";
import { migration010 } from "./010_api_tokens.js";
import { migration011 } from "./011_notifications.js";
import { migration012 } from "./012_ref_prefix.js";
import { migration013 } from "./013_notification_batch.js";
import { migration014 } from "./014_routed_queue_predicate.js";
import { migration015 } from "./015_claim_function.js";
import { migration016 } from "./016_claim_or_next_function.js";
import { migration017 } from "./017_tenants.js";
import { migration018 } from "./018_admission.js";
import { migration019 } from "./019_fair_share.js";
import { migration020 } from "./020_deadlines.js";
import { migration021 } from "./021_queue_rank.js";
import { migration022 } from "./022_job_trace.js";
import { migration023 } from "./023_batch_completed.js";

export interface Migration {
  version: number;
  name: string;
  /** Statements separated by semicolons, or a list of statements each sent whole. */
  sqlite: string | readonly string[];
  postgres: string | readonly string[];
  /**
   * SQLite: the migration rebuilds a table other tables refer to (SQLite cannot drop a constraint), so foreign keys
   * are off while it runs, and `PRAGMA foreign_key_check` must find no broken reference before it commits.
   */
  sqliteForeignKeysOff?: boolean;
}

/** Every migration, in order. Append only. */
export const MIGRATIONS: readonly Migration[] = [migration001, migration002, migration003, migration004, migration005, migration006, migration007, migration008, migration009, migration010, migration011, migration012, migration013, migration014, migration015, migration016, migration017, migration018, migration019, migration020, migration021, migration022, migration023];
