// Fill a Handoff SQLite data dir with N completed echo runs, fast, before a server starts on it.
//
// The rows are clones of a real run: a Handoff server on the same dir creates one echo run through
// the REST API (`POST /v1/runs {workflowId:'echo'}`), and is stopped; its run row, events, A2A task
// row (and interrupts, none for echo) are then copied N-1 times with fresh ids (`run_`/`ctx_` +
// UUIDv7, like the host's own) and timestamps shifted so the runs were created 5 ms apart, ending
// now. Inserted through the store's Kysely handle (openStore from src/store/connect, which also
// checks the schema is migrated) as multi-row INSERTs of 500 runs, 20,000 runs per transaction.
//
// The scenarios call seedInChild(): the seeding runs in its own Node process, so it loads the
// store code from dist/ as it is at that moment — the same build the template server just ran.
// (In the harness process, a dist/ rebuilt by someone else mid-run would make openStore refuse a
// database migrated by the newer server: "previously executed migration … is missing".)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openStore } from '../../src/store/connect.js';
import { decodeLog } from '../../src/store/log-codec.js';
import type { A2ATasksTable, EventBatchesTable, InterruptsTable, RunsTable } from '../../src/store/db.js';
import { sleep } from './clock.js';
import { benchScript, ROOT } from './env.js';
import { startHandoffSqlite } from './handoff-server.js';
import { http, jsonOf } from './http.js';

export interface SeedResult {
  /** Every stored run id (the template first). */
  ids: string[];
  /** Events per run, as the template had. */
  eventsPerRun: number;
  /** Time to insert the clones (template creation excluded). */
  insertMs: number;
  /** Template creation: server start, POST, stop. */
  templateMs: number;
}

/** A UUIDv7 string (48-bit ms timestamp, version 7, variant 10, random rest). */
export function uuidv7(ms: number, rnd: Buffer, at: number): string {
  const b = Buffer.from(rnd.subarray(at, at + 16));
  b.writeUIntBE(ms, 0, 6);
  b[6] = ((b[6] as number) & 0x0f) | 0x70;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const shift = (iso: string, deltaMs: number): string => new Date(Date.parse(iso) + deltaMs).toISOString();
const shiftOpt = (iso: string | null, deltaMs: number): string | null => (iso === null ? null : shift(iso, deltaMs));

/** Create the template run on a server running on `dataDir`; returns its id once completed. */
async function createTemplate(dataDir: string): Promise<string> {
  const server = await startHandoffSqlite({ dataDir });
  try {
    const res = await http('POST', `${server.base}/v1/runs`, { body: { workflowId: 'echo' } });
    const body = jsonOf<{ runId?: string; status?: string }>(res.text) ?? {};
    if (res.status !== 201 || !body.runId)
      throw new Error(`template POST /v1/runs answered HTTP ${res.status}: ${res.text.slice(0, 200)}`);
    for (let i = 0; body.status !== 'completed'; i++) {
      if (i > 100) throw new Error(`template run ${body.runId} not completed: ${body.status}`);
      await sleep(20);
      const got = await http('GET', `${server.base}/v1/runs/${body.runId}`);
      body.status = jsonOf<{ status?: string }>(got.text)?.status;
    }
    return body.runId;
  } finally {
    await server.stop(); // SIGTERM: drains, closes the store (WAL checkpointed)
  }
}

const RUNS_PER_INSERT = 500;
const RUNS_PER_TX = 20_000;

/** Make `<dataDir>/handoff.db` hold exactly `total` completed echo runs (dataDir must be fresh). */
async function seedEchoRuns(dataDir: string, total: number): Promise<SeedResult> {
  const t0 = performance.now();
  const templateId = await createTemplate(dataDir);
  const t1 = performance.now();
  const store = await openStore({ sqliteFile: join(dataDir, 'handoff.db') });
  try {
    const db = store.db;
    const run = await db.selectFrom('runs').selectAll().where('run_id', '=', templateId).executeTakeFirstOrThrow();
    const batches = await db
      .selectFrom('event_batches')
      .selectAll()
      .where('run_id', '=', templateId)
      .orderBy('first_seq')
      .execute();
    // Copies shift each row's created_at; an event with a timestamp of its own would keep it.
    if (batches.some((b) => decodeLog(b.events).includes('"timestamp":')))
      throw new Error('the template has events timed apart');
    const task = await db.selectFrom('a2a_tasks').selectAll().where('task_id', '=', templateId).executeTakeFirst();
    const interrupts = await db.selectFrom('interrupts').selectAll().where('run_id', '=', templateId).execute();
    const others = await db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    if (Number(others.n) !== 1) throw new Error(`seeding needs a fresh data dir; ${dataDir} holds ${others.n} runs`);

    const ids = [templateId];
    const created0 = Date.parse(run.created_at);
    const end = Date.now();
    const count = total - 1;
    for (let done = 0; done < count; ) {
      const inTx = Math.min(RUNS_PER_TX, count - done);
      await db.transaction().execute(async (trx) => {
        for (let k = 0; k < inTx; k += RUNS_PER_INSERT) {
          const n = Math.min(RUNS_PER_INSERT, inTx - k);
          const rnd = randomBytes(32 * n + 32 * n * interrupts.length);
          const runs: RunsTable[] = [];
          const evs: EventBatchesTable[] = [];
          const tasks: A2ATasksTable[] = [];
          const ints: InterruptsTable[] = [];
          for (let j = 0; j < n; j++) {
            const i = done + k + j; // 0 … count-1, the last created last
            const created = end - (count - i) * 5;
            const delta = created - created0;
            const runId = `run_${uuidv7(created, rnd, 32 * j)}`;
            ids.push(runId);
            runs.push({
              ...run,
              run_id: runId,
              created_at: shift(run.created_at, delta),
              updated_at: shift(run.updated_at, delta),
              completed_at: shiftOpt(run.completed_at, delta),
            });
            for (const b of batches) evs.push({ ...b, run_id: runId, created_at: shift(b.created_at, delta) });
            if (task) {
              tasks.push({
                ...task,
                task_id: runId,
                context_id: `ctx_${uuidv7(created, rnd, 32 * j + 16)}`,
                updated_at: shift(task.updated_at, delta),
              });
            }
            interrupts.forEach((it, x) => {
              ints.push({
                ...it,
                interrupt_id: `int_${uuidv7(created, rnd, 32 * n + 32 * (j * interrupts.length + x))}`,
                run_id: runId,
                created_at: shift(it.created_at, delta),
                resolved_at: shiftOpt(it.resolved_at, delta),
              });
            });
          }
          await trx.insertInto('runs').values(runs).execute();
          // ≤ 5 batches × 500 runs × 5 columns = 12,500 parameters (SQLite allows 32,766).
          for (let x = 0; x < evs.length; x += 2500)
            await trx
              .insertInto('event_batches')
              .values(evs.slice(x, x + 2500))
              .execute();
          if (tasks.length) await trx.insertInto('a2a_tasks').values(tasks).execute();
          if (ints.length) await trx.insertInto('interrupts').values(ints).execute();
        }
      });
      done += inTx;
    }
    const stored = await db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    if (Number(stored.n) !== total) throw new Error(`seeded ${stored.n} runs, wanted ${total}`);
    const eventsPerRun = batches.reduce((n, b) => n + b.last_seq - b.first_seq + 1, 0);
    return { ids, eventsPerRun, insertMs: performance.now() - t1, templateMs: t1 - t0 };
  } finally {
    await store.close();
  }
}

/** `n` ids picked at random (partial Fisher–Yates). */
function pickIds(all: readonly string[], n: number): string[] {
  const a = [...all];
  const k = Math.min(n, a.length);
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(Math.random() * (a.length - i));
    [a[i], a[j]] = [a[j] as string, a[i] as string];
  }
  return a.slice(0, k);
}

/** What seedInChild() hands back: `pick` run ids chosen at random among the stored ones. */
export interface SeedSummary {
  picked: string[];
  stored: number;
  eventsPerRun: number;
  insertMs: number;
  templateMs: number;
}

const RESULT_PREFIX = 'SEED-RESULT ';

/** seedEchoRuns() in a child process (see the header); rejects with the child's error output. */
export function seedInChild(dataDir: string, total: number, pick: number, timeoutMs = 120_000): Promise<SeedSummary> {
  const [cmd, ...args] = benchScript('lib/seed-runs');
  return new Promise((resolve, reject) => {
    const child = spawn(cmd as string, [...args, dataDir, String(total), String(pick)], {
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
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as SeedSummary);
      else
        reject(
          new Error(
            `seeding ${total} runs failed (${code ?? signal}): ${
              err
                .trim()
                .split('\n')
                .find((l) => /error/i.test(l)) ??
              err.trim().split('\n').at(-1) ??
              ''
            }`,
          ),
        );
    });
  });
}

// As a script: seed-runs <dataDir> <total> <pick> → one `SEED-RESULT {json}` line on stdout.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [dataDir, total, pick] = process.argv.slice(2);
  seedEchoRuns(dataDir as string, Number(total))
    .then((r) => {
      const summary: SeedSummary = {
        picked: pickIds(r.ids, Number(pick)),
        stored: r.ids.length,
        eventsPerRun: r.eventsPerRun,
        insertMs: r.insertMs,
        templateMs: r.templateMs,
      };
      process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(summary)}\n`);
      process.exit(0);
    })
    .catch((e: unknown) => {
      process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    });
}
