// Putting a database back to an earlier schema, so a test can migrate it forward again.
import { sql } from 'kysely';
import type { Store } from '../../src/store/store.js';

/** Undo migration 0015: no index of tasks by state, every task in the message index. */
export async function undoWaitingAtScale(store: Store): Promise<void> {
  await undoLaterTables(store);
  await sql`drop index "a2a_tasks_tenant_state"`.execute(store.db);
  await sql`drop index "runs_leased"`.execute(store.db);
  await sql`drop index "a2a_tasks_message"`.execute(store.db);
  await sql`create unique index "a2a_tasks_message" on "a2a_tasks" ("tenant_id", "principal_id", "message_id")`.execute(
    store.db,
  );
  await sql`drop index "runs_runnable"`.execute(store.db);
  await sql`create index "runs_runnable" on "runs" ("status", "wake_at") where "status" <> 'completed' and "status" <> 'failed' and "status" <> 'cancelled'`.execute(
    store.db,
  );
  await sql`delete from "kysely_migration" where "name" = '0015_waiting_at_scale'`.execute(store.db);
}

/** Undo migration 0014 (a data conversion: only its record), so an earlier one may run again. */
export async function undoNeutralA2A(store: Store): Promise<void> {
  await undoWaitingAtScale(store);
  await sql`delete from "kysely_migration" where "name" = '0014_neutral_a2a'`.execute(store.db);
}

/** Undo migration 0013 (and the later ones): no table of parts stored by reference. */
export async function undoRunValues(store: Store): Promise<void> {
  await undoNeutralA2A(store);
  await sql`drop table "run_values"`.execute(store.db);
  await sql`delete from "kysely_migration" where "name" = '0013_run_values'`.execute(store.db);
}

/** Undo migration 0012: runs without their parent columns and the index of them. */
async function undoChildRuns(store: Store): Promise<void> {
  await sql`drop index "runs_parent_active"`.execute(store.db);
  await sql`alter table "runs" drop column "parent_node_id"`.execute(store.db);
  await sql`alter table "runs" drop column "parent_run_id"`.execute(store.db);
  await sql`delete from "kysely_migration" where "name" = '0012_child_runs'`.execute(store.db);
}

/** Undo migration 0011 (and the later ones): the log back as migration 0001 made it (one row per event), empty. */
export async function undoEventBatches(store: Store): Promise<void> {
  await undoRunValues(store);
  await undoChildRuns(store);
  await sql`drop table "event_batches"`.execute(store.db);
  await sql`create table "events" ("run_id" text not null, "seq" integer not null, "type" text not null,
    "node_id" text, "payload" text not null, "created_at" text not null,
    constraint "events_pk" primary key ("run_id", "seq"))`.execute(store.db);
  await sql`delete from "kysely_migration" where "name" = '0011_event_batches'`.execute(store.db);
}

/**
 * Undo the migrations after 0015 that only add tables (0016 notifications, 0019 audit log, 0021 and
 * 0022 webhooks), so an earlier one may run again: Kysely runs migrations only in name order.
 */
async function undoLaterTables(store: Store): Promise<void> {
  const tables = ['webhook_deliveries', 'webhooks', 'audit_heads', 'audit_entries', 'decision_links', 'notifications'];
  for (const t of tables) await sql`drop table if exists ${sql.ref(t)}`.execute(store.db);
  const names = ['0016_notifications', '0019_audit_log', '0021_webhooks', '0022_webhook_deliveries'];
  for (const n of names) await sql`delete from "kysely_migration" where "name" = ${n}`.execute(store.db);
}
