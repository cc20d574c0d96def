// Versioned schema migrations, supplied in code so they ship inside dist/ and run at start.
// Kysely's Migrator keeps the applied list and a lock table on both dialects, so several
// instances starting together migrate once (one holds the lock, the rest wait).
import { WAITING_STATUSES } from './model.js';
import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';

type Dialect = 'sqlite' | 'postgres';

/** 64-bit integer columns for epoch-ms values (`bigint` on Postgres; SQLite INTEGER is 64-bit). */
const int64 = (d: Dialect) => (d === 'postgres' ? 'bigint' : 'integer');

function initial(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('runs')
        .addColumn('run_id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('principal_id', 'text', (c) => c.notNull())
        .addColumn('workflow_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('inputs', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('cursor', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('next_seq', 'integer', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', int64(d))
        .addColumn('wake_at', int64(d))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('completed_at', 'text')
        .execute();
      // The worker's claim query and the retention purge are the only non-key reads of runs.
      await db.schema.createIndex('runs_runnable').on('runs').columns(['status', 'wake_at']).execute();
      await db.schema.createIndex('runs_completed').on('runs').column('completed_at').execute();

      await db.schema
        .createTable('events')
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('node_id', 'text')
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('events_pk', ['run_id', 'seq'])
        .execute();

      await db.schema
        .createTable('interrupts')
        .addColumn('interrupt_id', 'text', (c) => c.primaryKey())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('votes', 'text', (c) => c.notNull())
        .addColumn('exchanges', 'text', (c) => c.notNull())
        .addColumn('resolution', 'text')
        .addColumn('resolved_by', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('resolved_at', 'text')
        .execute();
      await db.schema.createIndex('interrupts_run').on('interrupts').columns(['run_id', 'node_id']).execute();

      await db.schema
        .createTable('idempotency')
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('body_hash', 'text', (c) => c.notNull())
        .addColumn('status_code', 'integer', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_pk', ['tenant_id', 'scope', 'key'])
        .execute();
      await db.schema.createIndex('idempotency_created').on('idempotency').column('created_at').execute();
    },
  };
}

function a2aTasks(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('a2a_tasks')
        .addColumn('task_id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('principal_id', 'text', (c) => c.notNull())
        .addColumn('context_id', 'text', (c) => c.notNull())
        .addColumn('message_id', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('interrupt_kind', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      // Same (tenant, principal, messageId) → the same task, never a second run. NULLs (runs
      // started over REST) are distinct on both dialects.
      await db.schema
        .createIndex('a2a_tasks_message')
        .on('a2a_tasks')
        .columns(['tenant_id', 'principal_id', 'message_id'])
        .unique()
        .execute();
    },
  };
}

function a2aMessages(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('a2a_messages')
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('principal_id', 'text', (c) => c.notNull())
        .addColumn('message_id', 'text', (c) => c.notNull())
        .addColumn('task_id', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('a2a_messages_pk', ['tenant_id', 'principal_id', 'message_id'])
        .execute();
      await db.schema.createIndex('a2a_messages_task').on('a2a_messages').column('task_id').execute();
    },
  };
}

function push(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('push_configs')
        .addColumn('task_id', 'text', (c) => c.notNull())
        .addColumn('config_id', 'text', (c) => c.notNull())
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('auth_schemes', 'text')
        .addColumn('token_secret', 'text')
        .addColumn('credentials_secret', 'text')
        .addColumn('token_fingerprint', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('push_configs_pk', ['task_id', 'config_id'])
        .execute();
      await db.schema
        .createTable('secrets')
        .addColumn('secret_id', 'text', (c) => c.primaryKey())
        .addColumn('ciphertext', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('push_outbox')
        .addColumn('delivery_id', 'text', (c) => c.primaryKey())
        .addColumn('task_id', 'text', (c) => c.notNull())
        .addColumn('config_id', 'text', (c) => c.notNull())
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('final', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', int64(d), (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('lease_expires_at', int64(d))
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('delivered_at', 'text')
        .execute();
      // The worker's claim (due pending rows) and the per-config ordering check.
      await db.schema.createIndex('push_outbox_due').on('push_outbox').columns(['state', 'next_attempt_at']).execute();
      await db.schema
        .createIndex('push_outbox_order')
        .on('push_outbox')
        .columns(['task_id', 'config_id', 'seq'])
        .execute();
    },
  };
}

function taskListIndex(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // GET /v1/a2a/tasks: a tenant's tasks, most recently changed first.
      await db.schema
        .createIndex('a2a_tasks_tenant_updated')
        .on('a2a_tasks')
        .columns(['tenant_id', 'updated_at', 'task_id'])
        .execute();
    },
  };
}

function runListIndexes(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // GET /v1/runs: a tenant's runs, newest first. created_at never changes, so a commit that
      // moves a run along does not touch this index.
      await db.schema
        .createIndex('runs_tenant_created')
        .on('runs')
        .columns(['tenant_id', 'created_at', 'run_id'])
        .execute();
      // The inbox (runs waiting on a person), newest first, without walking every finished run.
      // Partial: a run has an entry only while it waits.
      await db.schema
        .createIndex('runs_tenant_waiting')
        .on('runs')
        .columns(['tenant_id', 'created_at', 'run_id'])
        .where(sql.ref('status'), 'in', [...WAITING_STATUSES])
        .execute();
    },
  };
}

function quotas(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // HANDOFF_TENANT_MAX_ACTIVE_RUNS counts a tenant's runs that are not terminal.
      await db.schema.createIndex('runs_tenant_status').on('runs').columns(['tenant_id', 'status']).execute();
      // HANDOFF_TENANT_RATE on PostgreSQL: one fixed window per tenant, shared by the instances.
      await db.schema
        .createTable('rate_limits')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('hits', 'integer', (c) => c.notNull())
        .addColumn('reset_at', int64(d), (c) => c.notNull())
        .execute();
    },
  };
}

function peerWaits(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // One row per call of an a2a.invoke node that reached a peer: the push callback finds its
      // run by wait_id, a cancel finds the peer task to cancel by run_id.
      await db.schema
        .createTable('peer_waits')
        .addColumn('wait_id', 'text', (c) => c.primaryKey())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('node_id', 'text', (c) => c.notNull())
        .addColumn('ordinal', 'integer', (c) => c.notNull())
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('peer_task_id', 'text')
        .addColumn('token_hash', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', int64(d), (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      // One wait per execution of a node: a re-executed call finds its row again.
      await db.schema
        .createIndex('peer_waits_call')
        .on('peer_waits')
        .columns(['run_id', 'node_id', 'ordinal'])
        .unique()
        .execute();
      // The cancel pass: rows asked to cancel, oldest due first.
      await db.schema.createIndex('peer_waits_due').on('peer_waits').columns(['state', 'next_attempt_at']).execute();
    },
  };
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  const migrations: Record<string, Migration> = {
    '0001_initial': initial(dialect),
    '0002_a2a_tasks': a2aTasks(),
    '0003_a2a_messages': a2aMessages(),
    '0004_push': push(dialect),
    '0005_task_list': taskListIndex(),
    '0006_run_list': runListIndexes(),
    '0007_quotas': quotas(dialect),
    '0009_peer_waits': peerWaits(dialect),
  };
  return { getMigrations: async () => migrations };
}
