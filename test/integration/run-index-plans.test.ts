// Migration 0010 made three secondary indexes of `runs` partial: runs_runnable and
// runs_tenant_status hold only runs that are not terminal, runs_completed only runs that
// completed; 0012 added runs_parent_active, of the child runs that have not ended. A partial
// index serves a query only when the query implies its predicate (on SQLite: repeats each of its
// terms), so an edit of a query could silently turn it into a scan of every run ever kept. Here,
// on SQLite and PostgreSQL:
// - each reader's statement, as the store runs it, is planned on its index;
// - a database populated before 0010 migrates forward, and every reader still answers right;
// - the purge keeps a finished child whose parent has not ended.
// Issue 38 (a million waiting runs): the lists a person or a client pages through — ListTasks by
// state (first and later pages, its totalSize), /v1/a2a/tasks, the inbox, the run list — and the
// pollers of other tables (push deliveries, peer cancels, a task by its message id) read their
// own index, in the list's order (no sort of every match); at 10⁴ waiting runs, with the
// planners' statistics, the same; a host's heap does not grow with the runs that wait; and the
// retention purge goes in bounded batches, a writer served between two of them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore } from '../../src/store/connect.js';
import { TERMINAL_STATUSES, type RunStatus } from '../../src/store/model.js';
import { COUNT_ACTIVE } from '../../src/store/repos/quotas.js';
import { keysetQuery } from '../../src/store/cursor.js';
import { CLAIM_DUE } from '../../src/store/repos/push-outbox.js';
import { ACTIVE_CHILDREN, CLAIM, NEXT_WAKE, RUN_LIST_KEY, runListQuery } from '../../src/store/repos/runs.js';
import { TASK_BY_MESSAGE, TASK_LIST_KEY, tasksQuery, tasksWithRunsQuery } from '../../src/store/repos/task-records.js';
import type { NewRun, Store } from '../../src/store/store.js';
import { databasePlaces, inline } from '../support/databases.js';
import { undoEventBatches } from '../support/migrations.js';
import { newRun } from '../support/runs.js';

const NOW = Date.parse('2030-01-01T00:00:00.000Z');
const HOUR = 3_600_000;
const now = () => new Date(NOW);

const { pgUrl, place } = databasePlaces('plans');

/** The plan of a query, one line per step. PostgreSQL is told to avoid sequential scans, as it
 * would on these near-empty tables: the test is whether the index CAN serve the query. */
async function plan(store: Store, query: string): Promise<string> {
  if (store.dialect === 'sqlite') {
    const { rows } = await sql.raw<{ detail: string }>(`explain query plan ${query}`).execute(store.db);
    return rows.map((r) => r.detail).join('\n');
  }
  return store.db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    const { rows } = await sql.raw<{ 'QUERY PLAN': string }>(`explain ${query}`).execute(trx);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

/** The retention purge's candidate query, built as Store.purgeTerminalBefore builds it. */
function purgeQuery(store: Store): string {
  const q = store.db
    .selectFrom('runs')
    .select('run_id')
    .where('status', 'in', [...TERMINAL_STATUSES])
    .where('completed_at', 'is not', null)
    .where('completed_at', '<', '2030-01-01T00:00:00.000Z')
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('runs as parent')
            .select('parent.run_id')
            .whereRef('parent.run_id', '=', 'runs.parent_run_id')
            .where('parent.status', 'not in', [...TERMINAL_STATUSES]),
        ),
      ),
    )
    .limit(500)
    .compile();
  return inline(q.sql.replace(/\$\d+/g, '?'), q.parameters);
}

/** A Kysely query's text with its parameters written in, in the store's dialect. */
function compiled(q: { compile(): { sql: string; parameters: readonly unknown[] } }): string {
  const c = q.compile();
  // inline() writes every parameter as a literal; a null (a lease freed) must stay a null.
  const text = c.sql.replace(/\$\d+/g, '?');
  let i = 0;
  const nulls = text.replace(/\?/g, () => (c.parameters[i++] === null ? 'null' : '?'));
  return inline(
    nulls,
    c.parameters.filter((p) => p !== null),
  );
}

/** A reader of any table, and the index each database must read that table through. */
interface ListReader {
  name: string;
  query: string;
  table: string;
  /** The name SQLite's plan gives the table when the query aliases it. */
  alias?: string;
  /** SQLite's index (rule-based planning: no statistics). */
  index: string;
  /** Indexes PostgreSQL may read `table` through. */
  pg: string[];
  /** The rows come in the index's order: neither database sorts the matches (a sort reads them all). */
  ordered?: boolean;
}

const AFTER = ['2030-01-01T00:00:00.000Z', 'r_zzz'] as const;
const INBOX = ['waiting-approval', 'waiting-input'] as const;

function listReaders(store: Store): ListReader[] {
  const db = store.db;
  const byState = { state: 'input-required' };
  const t = NOW;
  return [
    ...[undefined, AFTER].map((after, i) => ({
      name: `ListTasks by state, ${i === 0 ? 'first' : 'a later'} page`,
      query: compiled(keysetQuery(tasksWithRunsQuery(db, 't1', byState), TASK_LIST_KEY, 50, after)),
      table: 'a2a_tasks',
      index: 'a2a_tasks_tenant_state',
      pg: ['a2a_tasks_tenant_state'],
      ordered: true,
    })),
    {
      name: 'ListTasks by state, totalSize',
      query: compiled(tasksQuery(db, 't1', byState).select((eb) => eb.fn.countAll().as('n'))),
      table: 'a2a_tasks',
      index: 'a2a_tasks_tenant_state',
      pg: ['a2a_tasks_tenant_state'],
    },
    ...[undefined, AFTER].map((after, i) => ({
      name: `/v1/a2a/tasks, ${i === 0 ? 'first' : 'a later'} page`,
      query: compiled(keysetQuery(tasksQuery(db, 't1', {}).selectAll(), TASK_LIST_KEY, 50, after)),
      table: 'a2a_tasks',
      index: 'a2a_tasks_tenant_updated',
      pg: ['a2a_tasks_tenant_updated'],
      ordered: true,
    })),
    ...[undefined, AFTER].map((after, i) => ({
      name: `inbox, ${i === 0 ? 'first' : 'a later'} page`,
      query: compiled(keysetQuery(runListQuery(db, 't1', { statuses: [...INBOX] }), RUN_LIST_KEY, 50, after)),
      table: 'runs',
      index: 'runs_tenant_waiting',
      pg: ['runs_tenant_waiting'],
      ordered: true,
    })),
    {
      name: 'run list, a later page',
      query: compiled(keysetQuery(runListQuery(db, 't1', {}), RUN_LIST_KEY, 50, AFTER)),
      table: 'runs',
      index: 'runs_tenant_created',
      pg: ['runs_tenant_created'],
      ordered: true,
    },
    ...[undefined, 'w1'].map((owner) => {
      const free = db.updateTable('runs').set({ lease_owner: null, lease_expires_at: null });
      return {
        name: owner === undefined ? 'every lease freed at a SQLite start' : "an instance's leases freed at its drain",
        query: compiled(
          owner === undefined ? free.where('lease_owner', 'is not', null) : free.where('lease_owner', '=', owner),
        ),
        table: 'runs',
        index: 'runs_leased',
        pg: ['runs_leased'],
      };
    }),
    {
      name: 'a task by its starting message',
      query: inline(TASK_BY_MESSAGE.text, ['t1', 'alice', 'm1']),
      table: 'a2a_tasks',
      index: 'a2a_tasks_message',
      pg: ['a2a_tasks_message'],
    },
    {
      name: 'push deliveries due',
      query: inline(CLAIM_DUE[store.dialect].text, ['w', t + 1, t, t, 10]),
      table: 'push_outbox',
      alias: 'o',
      index: 'push_outbox_due',
      pg: ['push_outbox_due', 'push_outbox_order', 'push_outbox_pkey'],
    },
    {
      name: 'peer cancels due',
      query: compiled(
        db
          .selectFrom('peer_waits')
          .selectAll()
          .where('state', '=', 'cancel')
          .where('next_attempt_at', '<=', t)
          .orderBy('next_attempt_at')
          .limit(10),
      ),
      table: 'peer_waits',
      index: 'peer_waits_due',
      pg: ['peer_waits_due'],
      ordered: true,
    },
  ];
}

/** The plan reads `r.table` only through the reader's indexes, and (ordered) sorts nothing. */
function assertListPlanned(dialect: string, planText: string, r: ListReader): void {
  const where = `${r.name} on ${dialect}:\n${planText}`;
  if (dialect === 'sqlite') {
    const name = r.alias ?? r.table;
    assert.match(planText, new RegExp(`SEARCH ${name} USING (COVERING )?INDEX ${r.index}\\b`), where);
    assert.doesNotMatch(planText, new RegExp(`\\bSCAN (${r.table}|${name})\\b`), where);
    if (r.ordered) assert.doesNotMatch(planText, /USE TEMP B-TREE FOR ORDER BY/, where);
    return;
  }
  assert.doesNotMatch(planText, new RegExp(`Seq Scan on ${r.table}\\b`), where);
  const used = [
    ...planText.matchAll(
      new RegExp(
        `(?:Index Scan|Index Only Scan)(?: Backward)? using (\\w+) on ${r.table}\\b|Bitmap Index Scan on (\\w+)`,
        'g',
      ),
    ),
  ].map((m) => m[1] ?? m[2] ?? '');
  assert.ok(used.length > 0, where);
  for (const u of used.filter((x) => x.startsWith(r.table) || x.startsWith(r.table.replace(/s$/, '')))) {
    assert.ok(r.pg.includes(u), `${u} is not one of ${r.pg}: ${where}`);
  }
  if (r.ordered) assert.doesNotMatch(planText, /\bSort\b/, where);
}

/** Indexes of runs that hold non-terminal runs only (partial): reading any of them reads no finished run. */
const ACTIVE_ONLY = ['runs_runnable', 'runs_tenant_status', 'runs_tenant_waiting'];

interface Reader {
  name: string;
  query: string;
  /** The index SQLite plans it on (its planner is rule-based here: no statistics). */
  index: string;
  /** The indexes PostgreSQL may read runs through (its planner picks by cost among them). */
  pg: string[];
}

function readers(store: Store): Reader[] {
  const t = NOW;
  return [
    {
      name: 'claim',
      query: inline(CLAIM[store.dialect].text, ['w', t + 1, t, t, t, 10]),
      index: 'runs_runnable',
      // The primary key only to update the claimed rows by run_id.
      pg: [...ACTIVE_ONLY, 'runs_pkey'],
    },
    { name: 'next wake', query: NEXT_WAKE[store.dialect].text, index: 'runs_runnable', pg: ACTIVE_ONLY },
    { name: 'open-run quota', query: inline(COUNT_ACTIVE.text, ['t1']), index: 'runs_tenant_status', pg: ACTIVE_ONLY },
    // The primary key only to read a child's parent.
    { name: 'retention purge', query: purgeQuery(store), index: 'runs_completed', pg: ['runs_completed', 'runs_pkey'] },
    {
      name: 'unfinished children',
      query: inline(`select * from "runs" where ${ACTIVE_CHILDREN}`, ['r_pending']),
      index: 'runs_parent_active',
      pg: ['runs_parent_active'],
    },
  ];
}

/** The plan reads `runs` only through the reader's indexes, never walking every run. */
function assertPlanned(dialect: string, planText: string, r: Reader): void {
  const where = `${r.name} on ${dialect}:\n${planText}`;
  if (dialect === 'sqlite') {
    assert.match(planText, new RegExp(`SEARCH runs USING (COVERING )?INDEX ${r.index}\\b`), where);
    assert.doesNotMatch(planText, /\bSCAN runs\b/, where);
    return;
  }
  assert.doesNotMatch(planText, /Seq Scan on runs\b/, where);
  const used = [
    ...planText.matchAll(
      /(?:Index Scan|Index Only Scan)(?: Backward)? using (\w+) on runs\b|Bitmap Index Scan on (\w+)/g,
    ),
  ];
  assert.ok(used.length > 0, where);
  for (const m of used) assert.ok(r.pg.includes(m[1] ?? m[2] ?? ''), `${m[1] ?? m[2]} is not one of ${r.pg}: ${where}`);
  if (r.name === 'claim')
    assert.match(planText, /Index Scan using runs_pkey on runs\s+\([^)]*\)\s+Index Cond: \(run_id = /, where);
}

function run(runId: string, tenantId: string, status: RunStatus, over: Partial<NewRun> = {}): NewRun {
  const completed = TERMINAL_STATUSES.has(status) ? { completedAt: new Date(NOW - 5 * HOUR).toISOString() } : {};
  return newRun({ runId, tenantId, status, createdAt: new Date(NOW - 10 * HOUR).toISOString(), ...completed, ...over });
}

/** Runs of every kind a reader tells apart. */
const RUNS: NewRun[] = [
  run('r_pending', 't1', 'pending'),
  run('r_sleeping', 't1', 'running', { wakeAt: NOW + HOUR }),
  run('r_due', 't1', 'running', { wakeAt: NOW - HOUR }),
  run('r_gate_due', 't1', 'waiting-approval', { wakeAt: NOW - HOUR }),
  run('r_gate', 't1', 'waiting-input'),
  run('r_cancelling', 't2', 'cancelling'),
  run('r_done_old', 't1', 'completed', { wakeAt: NOW - HOUR }),
  run('r_failed_old', 't1', 'failed'),
  run('r_cancelled_new', 't1', 'cancelled', { completedAt: new Date(NOW - 1000).toISOString() }),
  run('r_done_t2', 't2', 'completed'),
];

/** Put back the three indexes as migrations 0001 and 0007 made them, and forget 0010 (and 0011
 * after it: the log as 0001 made it; the runs here have no events). */
async function undo0010(store: Store): Promise<void> {
  await undoEventBatches(store);
  for (const name of ['runs_runnable', 'runs_completed', 'runs_tenant_status']) {
    await sql.raw(`drop index "${name}"`).execute(store.db);
  }
  await sql`create index "runs_runnable" on "runs" ("status", "wake_at")`.execute(store.db);
  await sql`create index "runs_completed" on "runs" ("completed_at")`.execute(store.db);
  await sql`create index "runs_tenant_status" on "runs" ("tenant_id", "status")`.execute(store.db);
  await sql`delete from "kysely_migration" where "name" = '0010_partial_run_indexes'`.execute(store.db);
}

async function indexDefinition(store: Store, name: string): Promise<string> {
  const { rows } =
    store.dialect === 'sqlite'
      ? await sql<{ def: string }>`select "sql" as "def" from "sqlite_schema" where "name" = ${name}`.execute(store.db)
      : await sql<{
          def: string;
        }>`select "indexdef" as "def" from "pg_indexes" where "indexname" = ${name} and "schemaname" = current_schema()`.execute(
          store.db,
        );
  return rows[0]?.def ?? '';
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  const skip = dialect === 'postgres' && !pgUrl ? 'HANDOFF_TEST_PG_URL is not set' : false;

  describe(`partial run indexes on ${dialect}`, { skip }, () => {
    it('every reader of a partial index is planned on it', async () => {
      const store = await openStore({ ...(await place(dialect)), now });
      try {
        for (const r of readers(store)) assertPlanned(dialect, await plan(store, r.query), r);
      } finally {
        await store.close();
      }
    });

    it('every list and poller of issue 38 is planned on its index, in its order', async () => {
      const store = await openStore({ ...(await place(dialect)), now });
      try {
        for (const r of listReaders(store)) assertListPlanned(dialect, await plan(store, r.query), r);
      } finally {
        await store.close();
      }
    });

    it('a database populated before migration 0010 migrates forward, and its readers answer as before', async () => {
      const at = await place(dialect);
      const first = await openStore({ ...at, now });
      for (const r of RUNS) await first.transaction((tx) => tx.insertRun(r, []));
      await undo0010(first);
      assert.doesNotMatch(await indexDefinition(first, 'runs_runnable'), /where/i);
      await first.close();

      const store = await openStore({ ...at, now });
      try {
        for (const name of ['runs_runnable', 'runs_completed', 'runs_tenant_status']) {
          assert.match(await indexDefinition(store, name), /where/i, `${name} is partial`);
        }
        if (dialect === 'sqlite') {
          const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(store.db);
          assert.deepEqual(rows, [{ integrity_check: 'ok' }]);
        }
        for (const r of readers(store)) assertPlanned(dialect, await plan(store, r.query), r);

        assert.equal(await store.quotas.activeRuns('t1'), 5);
        assert.equal(await store.quotas.activeRuns('t2'), 1);
        assert.equal(await store.runs.nextWakeAt(), NOW - HOUR);
        const claimed = (await store.runs.claim('w', 60_000, 100)).map((r) => r.runId).sort();
        assert.deepEqual(claimed, ['r_cancelling', 'r_due', 'r_gate_due', 'r_pending']);
        // Claimed runs are claimable again when their leases end, before the sleeping run's timer.
        assert.equal(await store.runs.nextWakeAt(), NOW + 60_000);

        assert.equal(await store.purgeTerminalBefore(new Date(NOW - HOUR)), 3);
        const left = await Promise.all(RUNS.map(async (r) => ((await store.runs.get(r.runId)) ? r.runId : '')));
        assert.deepEqual(left.filter(Boolean).sort(), [
          'r_cancelled_new',
          'r_cancelling',
          'r_due',
          'r_gate',
          'r_gate_due',
          'r_pending',
          'r_sleeping',
        ]);
      } finally {
        await store.close();
      }
    });

    it('the purge keeps a finished child whose parent has not ended, and the children of one that has', async () => {
      const store = await openStore({ ...(await place(dialect)), now });
      try {
        const runs = [
          run('p_open', 't1', 'running', { wakeAt: NOW + HOUR }),
          run('k_of_open', 't1', 'completed', { parentRunId: 'p_open', parentNodeId: 'each' }),
          run('p_done', 't1', 'completed'),
          run('k_of_done', 't1', 'completed', { parentRunId: 'p_done', parentNodeId: 'each' }),
        ];
        for (const r of runs) await store.transaction((tx) => tx.insertRun(r, []));
        assert.equal(await store.purgeTerminalBefore(new Date(NOW - HOUR)), 2);
        const left = await Promise.all(runs.map(async (r) => ((await store.runs.get(r.runId)) ? r.runId : '')));
        assert.deepEqual(left.filter(Boolean).sort(), ['k_of_open', 'p_open']);
      } finally {
        await store.close();
      }
    });
  });
}
