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
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import type { RunsTable } from '../../src/store/db.js';
import { databasePlaces, inline } from '../support/databases.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { uniqueSchemaName, withClient } from '../support/pg.js';
import { undoEventBatches } from '../support/migrations.js';
import { newRun } from '../support/runs.js';

const NOW = Date.parse('2030-01-01T00:00:00.000Z');
const HOUR = 3_600_000;
const now = () => new Date(NOW);

const { pgUrl, place } = databasePlaces('plans');

/** The plan of a query, one line per step. PostgreSQL is told to avoid sequential scans, as it
 * would on these near-empty tables: the test is whether the index CAN serve the query. */
async function plan(store: Store, query: string, costs: 'forced' | 'real' = 'forced'): Promise<string> {
  if (store.dialect === 'sqlite') {
    const { rows } = await sql.raw<{ detail: string }>(`explain query plan ${query}`).execute(store.db);
    return rows.map((r) => r.detail).join('\n');
  }
  return store.db.transaction().execute(async (trx) => {
    if (costs === 'forced') await sql`set local enable_seqscan = off`.execute(trx);
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

/** Heap in use after a full collection (V8's gc, exposed for this process). */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const WAITING = 10_000;

/** Every read of issue 38 on `ids`, through the host's API. */
async function readAll(t: TestHost, ids: string[]): Promise<void> {
  for (const [i, id] of ids.entries()) {
    assert.equal((await t.post('/v1/a2a', { jsonrpc: '2.0', id: i, method: 'tasks/get', params: { id } })).status, 200);
    assert.equal((await t.get(`/v1/runs/${id}`)).status, 200);
  }
  const v1 = { 'a2a-version': '1.0' };
  let token = '';
  for (let page = 0; page < 5; page++) {
    const res = await t.get(
      `/v1/a2a/rest/tasks?status=TASK_STATE_INPUT_REQUIRED&pageSize=50${token ? `&pageToken=${token}` : ''}`,
      v1,
    );
    assert.equal(res.status, 200, res.text);
    token = res.body.nextPageToken;
    if (!token) break;
  }
  assert.equal((await t.get('/v1/runs?status=waiting-approval,waiting-input&limit=50')).status, 200);
  assert.equal((await t.get('/v1/a2a/tasks?limit=50')).status, 200);
}

/** Copies of the run `template` (with its task record, open interrupt and log), `n` of them, fresh ids. */
async function cloneWaiting(store: Store, template: string, n: number): Promise<string[]> {
  const db = store.db;
  const run = await db.selectFrom('runs').selectAll().where('run_id', '=', template).executeTakeFirstOrThrow();
  const task = await db.selectFrom('a2a_tasks').selectAll().where('task_id', '=', template).executeTakeFirstOrThrow();
  const open = await db.selectFrom('interrupts').selectAll().where('run_id', '=', template).executeTakeFirstOrThrow();
  const log = await db.selectFrom('event_batches').selectAll().where('run_id', '=', template).execute();
  const ids: string[] = [];
  for (let done = 0; done < n; done += 500) {
    const batch = Array.from({ length: Math.min(500, n - done) }, (_, j) => `${template}_${done + j}`);
    ids.push(...batch);
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('runs')
        .values(batch.map((id): RunsTable => ({ ...run, run_id: id })))
        .execute();
      await trx
        .insertInto('a2a_tasks')
        .values(batch.map((id) => ({ ...task, task_id: id, context_id: `ctx_${id}` })))
        .execute();
      await trx
        .insertInto('interrupts')
        .values(batch.map((id) => ({ ...open, interrupt_id: `int_${id}`, run_id: id })))
        .execute();
      await trx
        .insertInto('event_batches')
        .values(batch.flatMap((id) => log.map((b) => ({ ...b, run_id: id }))))
        .execute();
    });
  }
  return ids;
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

    it('the retention purge deletes in bounded batches, and a writer asking meanwhile is served between two', async () => {
      const store = await openStore({ ...(await place(dialect)), now });
      try {
        const old = Array.from({ length: 1000 }, (_, i) =>
          run(`r_old_${String(i).padStart(4, '0')}`, 't1', 'completed'),
        );
        await store.transaction(async (tx) => {
          for (const r of old) await tx.insertRun(r, [{ type: 'run.started', payload: {} }]);
        });
        const batches: number[] = [];
        let write: Promise<void> | undefined;
        let purgedWhenWritten: number | undefined;
        store.setPipeline({
          steps: [],
          listeners: [
            {
              name: 'probe',
              purged(ids) {
                batches.push(ids.length);
                // A write asked for after the first batch: it must not wait for the other nine.
                write ??= store
                  .transaction((tx) => tx.insertRun(run('r_new', 't1', 'pending'), []))
                  .then(() => {
                    purgedWhenWritten = batches.reduce((a, b) => a + b, 0);
                  });
              },
            },
          ],
        });
        assert.equal(await store.purgeTerminalBefore(new Date(NOW - HOUR), 100), 1000);
        await write;
        assert.deepEqual(batches, Array(10).fill(100));
        assert.ok(purgedWhenWritten !== undefined && purgedWhenWritten < 1000, `written after ${purgedWhenWritten}`);
        assert.ok(await store.runs.get('r_new'));
        assert.equal(await store.runs.count(), 1);

        for (let i = 0; i < 120; i++) {
          await store.idempotency.put({
            tenantId: 't1',
            scope: 'runs',
            key: `k${i}`,
            bodyHash: 'h',
            statusCode: 201,
            response: {},
          });
        }
        // Records of `now` (2030-01-01): a cutoff after it purges them all, 50 per DELETE.
        assert.equal(await store.idempotency.purgeBefore(new Date(NOW + 1), 50), 120);
        assert.equal(await store.idempotency.get('t1', 'runs', 'k0'), undefined);
        const del = compiled(
          store.db
            .deleteFrom('idempotency')
            .where(
              sql<boolean>`("tenant_id", "scope", "key") in (${store.db
                .selectFrom('idempotency')
                .select(['tenant_id', 'scope', 'key'])
                .where('created_at', '<', '2030-01-01T00:00:00.000Z')
                .limit(500)})`,
            ),
        );
        const planText = await plan(store, del);
        if (dialect === 'sqlite')
          assert.match(planText, /SEARCH idempotency USING (COVERING )?INDEX idempotency_created/, planText);
        else assert.doesNotMatch(planText, /Seq Scan on idempotency/, planText);
      } finally {
        await store.close();
      }
    });

    it(`at ${WAITING.toLocaleString('en-US')} waiting runs: the planners with their statistics keep every list on its index, and a restarted host's heap does not grow with them`, async () => {
      const where =
        dialect === 'postgres'
          ? { pg: true, pgSchema: uniqueSchemaName('plans') }
          : { dataDir: await mkdtemp(join(tmpdir(), 'handoff-plans-')) };
      let t = await startTestHost(where);
      try {
        const first = await t.createRun('approval', { prompt: 'Please approve.' });
        await t.waitForStatus(first, ['waiting-approval']);
        await readAll(t, [first]);
        const heapWithOne = heapAfterGc();
        const ids = await cloneWaiting(t.host.store, first, WAITING - 1);
        await t.close();
        t = await startTestHost(where);
        const sample = ids.filter((_, i) => i % 500 === 0);
        await readAll(t, sample);
        const grown = heapAfterGc() - heapWithOne;
        // Held per waiting run, even 400 bytes each would be 4 MB.
        assert.ok(
          grown < 4 * 2 ** 20,
          `the heap grew ${(grown / 2 ** 20).toFixed(1)} MiB with ${WAITING} waiting runs`,
        );

        const store = t.host.store;
        await sql`analyze`.execute(store.db);
        const runsReaders = readers(store).filter((r) => r.name === 'claim' || r.name === 'next wake');
        for (const r of runsReaders) assertPlanned(dialect, await plan(store, r.query, 'real'), r);
        // Not totalSize: a count reads every match whatever the index (with all of them matching,
        // PostgreSQL rightly reads the table); docs/operations.md says what it costs.
        const lists = listReaders(store).filter(
          (r) => (r.table === 'a2a_tasks' || r.table === 'runs') && !r.name.endsWith('totalSize'),
        );
        for (const r of lists) {
          // PostgreSQL picks by cost: with every task in the state asked for, the status-ordered
          // index of all the tenant's tasks reads no more rows. Either way: an index, no sort.
          const pg = [...r.pg, ...(r.table === 'a2a_tasks' ? ['a2a_tasks_tenant_updated'] : [])];
          const real = { ...r, pg, query: r.query.replaceAll("'t1'", "'default'") };
          assertListPlanned(dialect, await plan(store, real.query, 'real'), real);
        }
      } finally {
        await t.close();
        if ('pgSchema' in where)
          await withClient(pgUrl as string, (c) => c.query(`drop schema if exists ${where.pgSchema} cascade`));
        else await rm(where.dataDir, { recursive: true, force: true });
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
