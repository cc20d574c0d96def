// Versioned schema migrations, supplied in code so they ship inside dist/ and run at start.
// Kysely's Migrator keeps the applied list and a lock table on both dialects, so several
// instances starting together migrate once (one holds the lock, the rest wait).
import { WAITING_STATUSES } from './model.js';
import { neutralA2AForms } from './neutral-a2a.js';
import {
  type CreateTableBuilder,
  type Kysely,
  type Migration,
  type MigrationProvider,
  type SqlBool,
  sql,
} from 'kysely';

type Dialect = 'sqlite' | 'postgres';

/** 64-bit integer columns for epoch-ms values (`bigint` on Postgres; SQLite INTEGER is 64-bit). */
const int64 = (d: Dialect) => (d === 'postgres' ? 'bigint' : 'integer');

/** A column's type; `!` adds NOT NULL, ` key` makes it the primary key. */
type Column = 'text' | 'text!' | 'text key' | 'integer' | 'integer!' | 'int64' | 'int64!';

/** CREATE TABLE from a column list (in order), with an optional composite primary key `<name>_pk`. */
async function createTable(
  db: Kysely<unknown>,
  d: Dialect,
  name: string,
  columns: Record<string, Column>,
  primaryKey?: string[],
): Promise<void> {
  // Typed by column name so the composite key may name them (Kysely<unknown> knows none).
  let table: CreateTableBuilder<string, string> = db.schema.createTable(name);
  for (const [column, spec] of Object.entries(columns)) {
    const [base, modifier] = spec.endsWith('!') ? [spec.slice(0, -1), '!'] : spec.split(' ');
    const type = base === 'int64' ? int64(d) : (base as 'text' | 'integer');
    table = table.addColumn(column, type, (c) =>
      modifier === '!' ? c.notNull() : modifier === 'key' ? c.primaryKey() : c,
    );
  }
  if (primaryKey) table = table.addPrimaryKeyConstraint(`${name}_pk`, primaryKey);
  await table.execute();
}

/** CREATE [UNIQUE] INDEX, partial when `where` names a column and the values it must be one of. */
async function createIndex(
  db: Kysely<unknown>,
  name: string,
  table: string,
  columns: string[],
  opts: { unique?: boolean; where?: [column: string, values: readonly string[]] } = {},
): Promise<void> {
  let index = db.schema.createIndex(name).on(table).columns(columns);
  if (opts.unique) index = index.unique();
  if (opts.where) index = index.where(sql.ref(opts.where[0]), 'in', opts.where[1]);
  await index.execute();
}

function initial(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(db, d, 'runs', {
        run_id: 'text key',
        tenant_id: 'text!',
        principal_id: 'text!',
        workflow_id: 'text!',
        status: 'text!',
        inputs: 'text!',
        state: 'text!',
        cursor: 'text!',
        error: 'text',
        tags: 'text!',
        metadata: 'text!',
        next_seq: 'integer!',
        version: 'integer!',
        lease_owner: 'text',
        lease_expires_at: 'int64',
        wake_at: 'int64',
        created_at: 'text!',
        updated_at: 'text!',
        completed_at: 'text',
      });
      // The worker's claim query and the retention purge are the only non-key reads of runs.
      await createIndex(db, 'runs_runnable', 'runs', ['status', 'wake_at']);
      await createIndex(db, 'runs_completed', 'runs', ['completed_at']);

      await createTable(
        db,
        d,
        'events',
        {
          run_id: 'text!',
          seq: 'integer!',
          type: 'text!',
          node_id: 'text',
          payload: 'text!',
          created_at: 'text!',
        },
        ['run_id', 'seq'],
      );

      await createTable(db, d, 'interrupts', {
        interrupt_id: 'text key',
        run_id: 'text!',
        node_id: 'text!',
        kind: 'text!',
        status: 'text!',
        data: 'text!',
        votes: 'text!',
        exchanges: 'text!',
        resolution: 'text',
        resolved_by: 'text',
        created_at: 'text!',
        resolved_at: 'text',
      });
      await createIndex(db, 'interrupts_run', 'interrupts', ['run_id', 'node_id']);

      await createTable(
        db,
        d,
        'idempotency',
        {
          tenant_id: 'text!',
          scope: 'text!',
          key: 'text!',
          body_hash: 'text!',
          status_code: 'integer!',
          response: 'text!',
          created_at: 'text!',
        },
        ['tenant_id', 'scope', 'key'],
      );
      await createIndex(db, 'idempotency_created', 'idempotency', ['created_at']);
    },
  };
}

function a2aTasks(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(db, d, 'a2a_tasks', {
        task_id: 'text key',
        tenant_id: 'text!',
        principal_id: 'text!',
        context_id: 'text!',
        message_id: 'text',
        state: 'text!',
        interrupt_kind: 'text',
        updated_at: 'text!',
      });
      // Same (tenant, principal, messageId) → the same task, never a second run. NULLs (runs
      // started over REST) are distinct on both dialects.
      await createIndex(db, 'a2a_tasks_message', 'a2a_tasks', ['tenant_id', 'principal_id', 'message_id'], {
        unique: true,
      });
    },
  };
}

function a2aMessages(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(
        db,
        d,
        'a2a_messages',
        {
          tenant_id: 'text!',
          principal_id: 'text!',
          message_id: 'text!',
          task_id: 'text!',
        },
        ['tenant_id', 'principal_id', 'message_id'],
      );
      await createIndex(db, 'a2a_messages_task', 'a2a_messages', ['task_id']);
    },
  };
}

function push(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(
        db,
        d,
        'push_configs',
        {
          task_id: 'text!',
          config_id: 'text!',
          tenant_id: 'text!',
          url: 'text!',
          auth_schemes: 'text',
          token_secret: 'text',
          credentials_secret: 'text',
          token_fingerprint: 'text',
          created_at: 'text!',
        },
        ['task_id', 'config_id'],
      );
      await createTable(db, d, 'secrets', {
        secret_id: 'text key',
        ciphertext: 'text!',
        created_at: 'text!',
      });
      await createTable(db, d, 'push_outbox', {
        delivery_id: 'text key',
        task_id: 'text!',
        config_id: 'text!',
        tenant_id: 'text!',
        seq: 'integer!',
        state: 'text!',
        final: 'integer!',
        body: 'text!',
        attempts: 'integer!',
        next_attempt_at: 'int64!',
        lease_owner: 'text',
        lease_expires_at: 'int64',
        last_status: 'integer',
        last_error: 'text',
        created_at: 'text!',
        delivered_at: 'text',
      });
      // The worker's claim (due pending rows) and the per-config ordering check.
      await createIndex(db, 'push_outbox_due', 'push_outbox', ['state', 'next_attempt_at']);
      await createIndex(db, 'push_outbox_order', 'push_outbox', ['task_id', 'config_id', 'seq']);
    },
  };
}

function taskListIndex(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // GET /v1/a2a/tasks: a tenant's tasks, most recently changed first.
      await createIndex(db, 'a2a_tasks_tenant_updated', 'a2a_tasks', ['tenant_id', 'updated_at', 'task_id']);
    },
  };
}

function runListIndexes(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // GET /v1/runs: a tenant's runs, newest first. created_at never changes, so a commit that
      // moves a run along does not touch this index.
      await createIndex(db, 'runs_tenant_created', 'runs', ['tenant_id', 'created_at', 'run_id']);
      // The inbox (runs waiting on a person), newest first, without walking every finished run.
      // Partial: a run has an entry only while it waits.
      await createIndex(db, 'runs_tenant_waiting', 'runs', ['tenant_id', 'created_at', 'run_id'], {
        where: ['status', [...WAITING_STATUSES]],
      });
    },
  };
}

function quotas(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // HANDOFF_TENANT_MAX_ACTIVE_RUNS counts a tenant's runs that are not terminal.
      await createIndex(db, 'runs_tenant_status', 'runs', ['tenant_id', 'status']);
      // HANDOFF_TENANT_RATE on PostgreSQL: one fixed window per tenant, shared by the instances.
      await createTable(db, d, 'rate_limits', {
        key: 'text key',
        hits: 'integer!',
        reset_at: 'int64!',
      });
    },
  };
}

/** A2A 1.0 beside 0.3: a push config keeps the version it was registered in, and a delivery the
 * version its (neutral) body is to be encoded for. Existing configs are 0.3; existing deliveries
 * keep their 0.3 body (null version). */
function a2aVersions(): Migration {
  return {
    async up(db) {
      await db.schema
        .alterTable('push_configs')
        .addColumn('protocol_version', 'text', (c) => c.notNull().defaultTo('0.3'))
        .execute();
      await db.schema.alterTable('push_outbox').addColumn('protocol_version', 'text').execute();
    },
  };
}

function peerWaits(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // One row per call of an a2a.invoke node that reached a peer: the push callback finds its
      // run by wait_id, a cancel finds the peer task to cancel by run_id.
      await createTable(db, d, 'peer_waits', {
        wait_id: 'text key',
        run_id: 'text!',
        node_id: 'text!',
        ordinal: 'integer!',
        target: 'text!',
        peer_task_id: 'text',
        token_hash: 'text',
        state: 'text!',
        attempts: 'integer!',
        next_attempt_at: 'int64!',
        created_at: 'text!',
      });
      // One wait per execution of a node: a re-executed call finds its row again.
      await createIndex(db, 'peer_waits_call', 'peer_waits', ['run_id', 'node_id', 'ordinal'], { unique: true });
      // The cancel pass: rows asked to cancel, oldest due first.
      await createIndex(db, 'peer_waits_due', 'peer_waits', ['state', 'next_attempt_at']);
    },
  };
}

/**
 * The secondary indexes of runs that only non-terminal runs need hold only those (partial), and
 * the retention purge's index only runs that completed: a run that finishes leaves the first two
 * (one b-tree delete each) instead of moving to a new place in each and entering the third's
 * non-null part, and a run inserted already finished (an echo) enters neither. Readers: the
 * worker's claim and next-wake queries (runs_runnable), the open-run quota (runs_tenant_status),
 * the purge (runs_completed); each repeats the index's predicate (runs.ts) so it stays usable.
 * The predicate is a chain of `<>`, not `not in (…)`: SQLite evaluates a partial index's
 * predicate on every write of the row, and a list of three or more values builds a temporary
 * b-tree each time (measured dearer than the index work it saves; docs/decisions.md).
 */
function partialRunIndexes(): Migration {
  const active = sql<SqlBool>`"status" <> 'completed' and "status" <> 'failed' and "status" <> 'cancelled'`;
  return {
    async up(db: Kysely<unknown>) {
      for (const name of ['runs_runnable', 'runs_completed', 'runs_tenant_status']) {
        await db.schema.dropIndex(name).execute();
      }
      await db.schema.createIndex('runs_runnable').on('runs').columns(['status', 'wake_at']).where(active).execute();
      await db.schema
        .createIndex('runs_completed')
        .on('runs')
        .column('completed_at')
        .where(sql.ref('completed_at'), 'is not', null)
        .execute();
      await db.schema
        .createIndex('runs_tenant_status')
        .on('runs')
        .columns(['tenant_id', 'status'])
        .where(active)
        .execute();
    },
  };
}

/**
 * The run event log, one row per commit (src/store/repos/events.ts): a commit's events as one JSON
 * array, keyed by run and first sequence. An approval reply appends nine events, and each row of
 * `events` was one table row and one key entry. Existing events move over one per batch, exactly
 * as they were (type, node, payload, sequence, timestamp), in the migration's transaction.
 */
function eventBatches(d: Dialect): Migration {
  const one =
    d === 'postgres'
      ? sql`json_build_array(json_build_object('type', "type", 'nodeId', "node_id", 'payload', "payload"::json))::text`
      : sql`json_array(json_object('type', "type", 'nodeId', "node_id", 'payload', json("payload")))`;
  return {
    async up(db: Kysely<unknown>) {
      await createTable(
        db,
        d,
        'event_batches',
        { run_id: 'text!', first_seq: 'integer!', last_seq: 'integer!', created_at: 'text!', events: 'text!' },
        ['run_id', 'first_seq'],
      );
      await sql`insert into "event_batches" ("run_id", "first_seq", "last_seq", "created_at", "events")
        select "run_id", "seq", "seq", "created_at", ${one} from "events"`.execute(db);
      await db.schema.dropTable('events').execute();
    },
  };
}

/**
 * Child runs (core.forEach, core.subWorkflow): the run and node that started a run, and an index of
 * the children that have not ended, by parent — what a cancel cascades to and the parent's snapshot
 * lists. Partial like runs_runnable (0010): a child leaves it when it ends, a run started by a
 * caller never enters it; readers repeat its predicate (runs.ts) so SQLite uses it.
 */
function childRuns(): Migration {
  const active = sql<SqlBool>`"parent_run_id" is not null and "status" <> 'completed' and "status" <> 'failed' and "status" <> 'cancelled'`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('runs').addColumn('parent_run_id', 'text').execute();
      await db.schema.alterTable('runs').addColumn('parent_node_id', 'text').execute();
      await db.schema.createIndex('runs_parent_active').on('runs').column('parent_run_id').where(active).execute();
    },
  };
}

/**
 * Large parts of a run's JSON (a call's answer, a peer's artifact), each stored once and referred
 * to from the run's snapshot and log (src/store/recorded.ts). Rows written before keep their
 * values inline and read as before.
 */
function runValues(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(
        db,
        d,
        'run_values',
        { run_id: 'text!', hash: 'text!', slice: 'integer!', value: 'text!', created_at: 'text!' },
        ['run_id', 'hash', 'slice'],
      );
    },
  };
}

/**
 * The audit log (src/store/repos/audit.ts): entries keyed by tenant and sequence (one hash chain
 * per tenant), found by run and by time; and each chain's head, the row an append locks. Kept
 * apart from runs: the retention purge deletes runs, never what was recorded about them.
 */
function auditLog(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(
        db,
        d,
        'audit_entries',
        {
          tenant_id: 'text!',
          seq: 'int64!',
          time: 'text!',
          principal: 'text!',
          surface: 'text!',
          act: 'text!',
          run_id: 'text',
          node_id: 'text',
          values: 'text!',
          subject_hash: 'text',
          prev_hash: 'text',
          hash: 'text!',
        },
        ['tenant_id', 'seq'],
      );
      await createIndex(db, 'audit_entries_run', 'audit_entries', ['run_id', 'time']);
      await createIndex(db, 'audit_entries_time', 'audit_entries', ['time', 'tenant_id', 'seq']);
      await createIndex(db, 'audit_entries_tenant_time', 'audit_entries', ['tenant_id', 'time', 'seq']);
      await createTable(db, d, 'audit_heads', { tenant_id: 'text key', seq: 'int64!', hash: 'text' });
    },
  };
}

/**
 * Notifications of people a gate waits for (src/notify/): an outbox like push_outbox (one row per
 * recipient and occasion — the gate opened, a reminder, an escalation — written in the transaction
 * that opened or escalated the gate, sent after it by a worker with a lease, retried,
 * dead-lettered), and the one-time decision links they carry, kept only as a hash of the token.
 */
function notifications(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(db, d, 'notifications', {
        notification_id: 'text key',
        tenant_id: 'text!',
        run_id: 'text!',
        interrupt_id: 'text!',
        node_id: 'text!',
        reason: 'text!',
        channel: 'text!',
        target: 'text!',
        recipient: 'text!',
        sealed_token: 'text',
        link_expires_at: 'int64',
        state: 'text!',
        attempts: 'integer!',
        next_attempt_at: 'int64!',
        lease_owner: 'text',
        lease_expires_at: 'int64',
        last_error: 'text',
        created_at: 'text!',
        sent_at: 'text',
      });
      await createIndex(db, 'notifications_due', 'notifications', ['state', 'next_attempt_at']);
      await createIndex(db, 'notifications_run', 'notifications', ['run_id']);
      await createTable(db, d, 'decision_links', {
        token_hash: 'text key',
        tenant_id: 'text!',
        run_id: 'text!',
        interrupt_id: 'text!',
        node_id: 'text!',
        recipient: 'text!',
        expires_at: 'int64!',
        used_at: 'text',
        created_at: 'text!',
      });
      await createIndex(db, 'decision_links_run', 'decision_links', ['run_id']);
    },
  };
}

function webhooks(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(db, d, 'webhooks', {
        webhook_id: 'text key',
        tenant_id: 'text!',
        url: 'text!',
        events: 'text!',
        tags: 'text',
        secret: 'text!',
        secret_fingerprint: 'text!',
        created_at: 'text!',
      });
      // Every commit's delivery looks up its tenant's subscriptions.
      await db.schema.createIndex('webhooks_tenant').on('webhooks').column('tenant_id').execute();
    },
  };
}

function webhookDeliveries(d: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await createTable(db, d, 'webhook_deliveries', {
        delivery_id: 'text key',
        webhook_id: 'text!',
        tenant_id: 'text!',
        run_id: 'text!',
        sequence: 'integer!',
        event_type: 'text!',
        body: 'text!',
        state: 'text!',
        attempts: 'integer!',
        next_attempt_at: 'int64!',
        lease_owner: 'text',
        lease_expires_at: 'int64',
        last_status: 'integer',
        last_error: 'text',
        created_at: 'text!',
      });
      // The worker's claim: pending rows by due time.
      await db.schema
        .createIndex('webhook_deliveries_due')
        .on('webhook_deliveries')
        .columns(['state', 'next_attempt_at'])
        .execute();
    },
  };
}

/**
 * A million waiting runs (issue 38). ListTasks filtered by state walked a tenant's tasks in status
 * order and skipped those in another state: a page of `input-required` among a million completed
 * tasks read them all. `a2a_tasks_tenant_state` holds them by tenant and state in the same order,
 * so a page (and its `totalSize` count) reads only tasks in that state. The unique index of the
 * starting message ids becomes partial: a run started over REST has none, and its entry was a
 * null key kept for nothing (a lookup by message id names one, so the index still serves it).
 * runs_runnable (the claim, the next wake) drops the runs waiting on a person without a deadline:
 * nothing of the worker's reads them (src/store/repos/runs.ts). runs_leased holds the runs a
 * worker holds (a few per instance): freeing every lease at a SQLite start and an instance's at
 * its drain read those, not every run stored (at 10⁵ runs that start took seconds).
 */
function waitingAtScale(): Migration {
  const active = sql<SqlBool>`"status" <> 'completed' and "status" <> 'failed' and "status" <> 'cancelled'`;
  const timed = sql<SqlBool>`("status" in ('pending', 'running', 'cancelling') or "wake_at" is not null)`;
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('runs_runnable').execute();
      await db.schema
        .createIndex('runs_runnable')
        .on('runs')
        .columns(['status', 'wake_at'])
        .where(sql<SqlBool>`${active} and ${timed}`)
        .execute();
      await db.schema
        .createIndex('runs_leased')
        .on('runs')
        .column('lease_owner')
        .where(sql.ref('lease_owner'), 'is not', null)
        .execute();
      await createIndex(db, 'a2a_tasks_tenant_state', 'a2a_tasks', ['tenant_id', 'state', 'updated_at', 'task_id']);
      await db.schema.dropIndex('a2a_tasks_message').execute();
      await db.schema
        .createIndex('a2a_tasks_message')
        .on('a2a_tasks')
        .columns(['tenant_id', 'principal_id', 'message_id'])
        .unique()
        .where(sql.ref('message_id'), 'is not', null)
        .execute();
    },
  };
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  const migrations: Record<string, Migration> = {
    '0001_initial': initial(dialect),
    '0002_a2a_tasks': a2aTasks(dialect),
    '0003_a2a_messages': a2aMessages(dialect),
    '0004_push': push(dialect),
    '0005_task_list': taskListIndex(),
    '0006_run_list': runListIndexes(),
    '0007_quotas': quotas(dialect),
    '0008_a2a_versions': a2aVersions(),
    '0009_peer_waits': peerWaits(dialect),
    '0010_partial_run_indexes': partialRunIndexes(),
    '0011_event_batches': eventBatches(dialect),
    '0012_child_runs': childRuns(),
    '0013_run_values': runValues(dialect),
    // The A2A core speaks the neutral model: stored history messages and old push bodies follow.
    '0014_neutral_a2a': { up: neutralA2AForms },
    '0015_waiting_at_scale': waitingAtScale(),
    '0016_notifications': notifications(dialect),
    '0019_audit_log': auditLog(dialect),
    '0021_webhooks': webhooks(dialect),
    '0022_webhook_deliveries': webhookDeliveries(dialect),
  };
  return { getMigrations: async () => migrations };
}
