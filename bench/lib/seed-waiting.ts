// Grow a Handoff database (SQLite file or PostgreSQL schema) to N waiting `approval` runs, fast,
// while no server runs on it: the `waiting` scenario's direct seeding (where the API would take
// too long).
//
// The rows are clones of a real waiting run (the template, created through the API beforehand:
// the oldest waiting run of the database): its run row, event log, A2A task row and open
// interrupt are copied with fresh ids (`run_`/`ctx_`/`int_` + UUIDv7, like the host's own), the
// run and interrupt ids inside its log rewritten and the log stored again through the store's own
// codec (src/store/log-codec.ts), timestamps 1 ms apart ending now. Runs go round-robin to
// `tenants` tenants (`default`, then `t1`, `t2`, …). Inserted through the store's Kysely handle
// (openStore, which migrates and checks the schema) as multi-row INSERTs of 500 runs, 10,000
// runs per transaction.
//
// As a script (a child process, like lib/seed-runs.ts, so it loads the store code the server runs):
//   seed-waiting <sqlite:<file> | pg:<schema>> <total> <tenants> <pick> → one `SEED-RESULT {json}` line.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { sql } from 'kysely';
import { openStore } from '../../src/store/connect.js';
import type { A2ATasksTable, EventBatchesTable, InterruptsTable, RunsTable } from '../../src/store/db.js';
import { decodeLog, encodeLog } from '../../src/store/log-codec.js';
import type { Store } from '../../src/store/store.js';
import { benchScript, ROOT } from './env.js';
import { PG_URL } from './handoff-server.js';
import { uuidv7 } from './seed-runs.js';

const RUNS_PER_INSERT = 500;
const RUNS_PER_TX = 10_000;

/** What one seeding added. */
export interface WaitingSeed {
  /** Runs stored after seeding. */
  stored: number;
  /** Runs this seeding inserted, and how long the inserts took. */
  added: number;
  insertMs: number;
  /** Waiting runs of tenant `default`, picked at random. */
  picked: string[];
}

/** The tenant of the i-th run of `tenants`. */
export const tenantOf = (i: number, tenants: number): string => (i % tenants === 0 ? 'default' : `t${i % tenants}`);

interface Template {
  run: RunsTable;
  batches: EventBatchesTable[];
  task: A2ATasksTable;
  interrupt: InterruptsTable;
}

async function template(store: Store): Promise<Template> {
  const db = store.db;
  const run = await db
    .selectFrom('runs')
    .selectAll()
    .where('status', '=', 'waiting-approval')
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirstOrThrow();
  const batches = await db.selectFrom('event_batches').selectAll().where('run_id', '=', run.run_id).execute();
  const task = await db.selectFrom('a2a_tasks').selectAll().where('task_id', '=', run.run_id).executeTakeFirstOrThrow();
  const interrupt = await db
    .selectFrom('interrupts')
    .selectAll()
    .where('run_id', '=', run.run_id)
    .where('status', '=', 'open')
    .executeTakeFirstOrThrow();
  return { run, batches, task, interrupt };
}

const shift = (iso: string, deltaMs: number): string => new Date(Date.parse(iso) + deltaMs).toISOString();

/** Rows of `n` clones of `t`, the j-th created at `createdOf(j)` and its tenant `tenantOf(j)`. */
function clones(
  t: Template,
  dialect: Store['dialect'],
  n: number,
  createdOf: (j: number) => number,
  tenant: (j: number) => string,
) {
  const created0 = Date.parse(t.run.created_at);
  const logs = t.batches.map((b) => decodeLog(b.events));
  const rnd = randomBytes(48 * n);
  const runs: RunsTable[] = [];
  const evs: EventBatchesTable[] = [];
  const tasks: A2ATasksTable[] = [];
  const ints: InterruptsTable[] = [];
  for (let j = 0; j < n; j++) {
    const created = createdOf(j);
    const delta = created - created0;
    const runId = `run_${uuidv7(created, rnd, 48 * j)}`;
    const interruptId = `int_${uuidv7(created, rnd, 48 * j + 16)}`;
    const tenantId = tenant(j);
    runs.push({
      ...t.run,
      run_id: runId,
      tenant_id: tenantId,
      created_at: shift(t.run.created_at, delta),
      updated_at: shift(t.run.updated_at, delta),
    });
    t.batches.forEach((b, x) => {
      const text = (logs[x] as string)
        .split(t.run.run_id)
        .join(runId)
        .split(t.interrupt.interrupt_id)
        .join(interruptId);
      evs.push({ ...b, run_id: runId, created_at: shift(b.created_at, delta), events: encodeLog(text, dialect) });
    });
    tasks.push({
      ...t.task,
      task_id: runId,
      tenant_id: tenantId,
      context_id: `ctx_${uuidv7(created, rnd, 48 * j + 32)}`,
      updated_at: shift(t.task.updated_at, delta),
    });
    ints.push({
      ...t.interrupt,
      interrupt_id: interruptId,
      run_id: runId,
      created_at: shift(t.interrupt.created_at, delta),
    });
  }
  return { runs, evs, tasks, ints };
}

/** Grow the database at `place` to `total` runs (it must hold at least one waiting approval run). */
async function seedWaiting(place: string, total: number, tenants: number, pick: number): Promise<WaitingSeed> {
  const store = await openStore(
    place.startsWith('pg:')
      ? { databaseUrl: PG_URL, pgSchema: place.slice(3) }
      : { sqliteFile: place.replace(/^sqlite:/, '') },
  );
  try {
    const t = await template(store);
    const db = store.db;
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('runs')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const have = await count();
    const add = Math.max(0, total - have);
    const end = Date.now();
    const t0 = performance.now();
    for (let done = 0; done < add; ) {
      const inTx = Math.min(RUNS_PER_TX, add - done);
      await db.transaction().execute(async (trx) => {
        for (let k = 0; k < inTx; k += RUNS_PER_INSERT) {
          const n = Math.min(RUNS_PER_INSERT, inTx - k);
          const base = have + done + k; // the i-th run of the database, the last created last
          const rows = clones(
            t,
            store.dialect,
            n,
            (j) => end - (add - (done + k + j)),
            (j) => tenantOf(base + j, tenants),
          );
          await trx.insertInto('runs').values(rows.runs).execute();
          await trx.insertInto('event_batches').values(rows.evs).execute();
          await trx.insertInto('a2a_tasks').values(rows.tasks).execute();
          await trx.insertInto('interrupts').values(rows.ints).execute();
        }
      });
      done += inTx;
    }
    const insertMs = performance.now() - t0;
    // What autovacuum would do a while after such a load: PostgreSQL plans the lists by their
    // statistics, and with none for the rows just added it took the inbox's tenant for one run
    // (a sort of every waiting run instead of a walk of runs_tenant_waiting).
    if (store.dialect === 'postgres' && add > 0) await sql`analyze`.execute(db);
    const stored = await count();
    if (stored !== Math.max(total, have)) throw new Error(`seeded to ${stored} runs, wanted ${total}`);
    const picked = await db
      .selectFrom('runs')
      .select('run_id')
      .where('tenant_id', '=', 'default')
      .where('status', '=', 'waiting-approval')
      .orderBy(sql`random()`)
      .limit(pick)
      .execute();
    return { stored, added: add, insertMs, picked: picked.map((r) => r.run_id) };
  } finally {
    await store.close();
  }
}

const RESULT_PREFIX = 'SEED-RESULT ';

/** seedWaiting() in a child process (see the header); rejects with the child's error output. */
export function seedWaitingInChild(
  place: string,
  total: number,
  tenants: number,
  pick: number,
  timeoutMs: number,
): Promise<WaitingSeed> {
  const [cmd, ...args] = benchScript('lib/seed-waiting');
  return new Promise((resolve, reject) => {
    const child = spawn(cmd as string, [...args, place, String(total), String(tenants), String(pick)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (err = (err + b.toString('utf8')).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as WaitingSeed);
      else
        reject(
          new Error(`seeding ${total} waiting runs failed (${code ?? signal}): ${err.trim().split('\n').at(-1) ?? ''}`),
        );
    });
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [place, total, tenants, pick] = process.argv.slice(2);
  seedWaiting(place as string, Number(total), Number(tenants), Number(pick))
    .then((r) => {
      process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(r)}\n`);
      process.exit(0);
    })
    .catch((e: unknown) => {
      process.stderr.write(`error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    });
}
