// An in-process Handoff host for integration tests: real store (SQLite in a temp dir, or a
// throw-away PostgreSQL schema), real engine and worker, the Fastify app driven by `inject`.
//
//   const t = await startTestHost();                      // SQLite, no auth, worker running
//   const runId = await t.createRun('echo', { prompt: 'hi' });
//   const run = await t.waitForStatus(runId, ['completed']);
//   await t.close();
//
// `startTestHost({ pg: true })` uses HANDOFF_TEST_PG_URL with a unique schema (dropped on close);
// callers check `PG_URL` first and skip when it is not set.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type pg from 'pg';
import pino, { type Logger } from 'pino';
import { BUILTIN_WORKFLOWS, type Config, loadConfig } from '../../src/config.js';
import type { Resolver } from '../../src/egress/dispatcher.js';
import type { Clock } from '../../src/engine/clock.js';
import { createHost, type Host } from '../../src/host.js';
import { withClient } from './pg.js';
import { until } from './until.js';

/** PostgreSQL server for the `pg` variants; unset means those tests are skipped. */
export const PG_URL = process.env.HANDOFF_TEST_PG_URL || undefined;

/** The dialects a suite should run on here: always SQLite, PostgreSQL when configured. */
export const DIALECTS: ReadonlyArray<'sqlite' | 'postgres'> = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];

/** The repository root: the nearest ancestor of this file holding package.json (works from
 * test/support under tsx and from dist/test/support after tsc). */
export const REPO_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
export const BUILTIN_DIR = join(REPO_ROOT, 'workflows');
/** The demo workflows' ids and whether each is an A2A skill (`public` unless false), from the files. */
export const DEMOS: ReadonlyArray<{ id: string; public: boolean }> = readdirSync(BUILTIN_DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(join(BUILTIN_DIR, f), 'utf8')) as { id: string; public?: boolean })
  .map((d) => ({ id: d.id, public: d.public !== false }))
  .sort((a, b) => (a.id < b.id ? -1 : 1));
/** The skills the host's card lists: the public demos, sorted. */
export const DEMO_SKILLS: string[] = DEMOS.filter((d) => d.public).map((d) => d.id);

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

// Response bodies are JSON of many shapes; tests read them field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;
/** Request headers; undefined values are left out. */
export type Headers = Record<string, string | undefined>;

export interface Reply {
  status: number;
  body: Json;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
}

export interface TestHostOptions {
  /** HANDOFF_API_KEYS, e.g. 'key-aaaaaaaa=t1:alice'. */
  apiKeys?: string;
  /** Extra environment for loadConfig (only this and the test's own settings are seen). */
  env?: Record<string, string>;
  /** SQLite data directory; default a fresh temp dir removed on close. */
  dataDir?: string;
  /** Use PostgreSQL (HANDOFF_TEST_PG_URL, unique schema). Throws if the URL is not set. */
  pg?: boolean;
  /** Extra workflow directories (besides the built-in demos). */
  workflows?: string[];
  /** Start the worker (default true). False leaves created runs `pending`. */
  startRunner?: boolean;
  /** The host's logger (default: silent). */
  logger?: Logger;
  /** The host's clock (engine, worker, store); tests move it instead of waiting. */
  clock?: Clock;
  /** PostgreSQL: use this schema and leave it on close (a restart test's second host shares it;
   * the test drops it, e.g. with dropSchema of support/pg.ts). */
  pgSchema?: string;
  /** Name resolution of outbound calls (http.request, llm.chat); see test/support/dns.ts. */
  egressLookup?: Resolver;
}

export interface TestHost {
  host: Host;
  app: FastifyInstance;
  config: Config;
  dialect: 'sqlite' | 'postgres';
  request(method: string, url: string, body?: unknown, headers?: Headers): Promise<Reply>;
  get(url: string, headers?: Headers): Promise<Reply>;
  post(url: string, body?: unknown, headers?: Headers): Promise<Reply>;
  /** POST /v1/runs and assert 201; returns the runId. */
  createRun(workflowId: string, inputs?: Record<string, unknown>, headers?: Headers): Promise<string>;
  waitForStatus(runId: string, statuses: string[], headers?: Headers): Promise<Json>;
  /** Every event of the run so far (poll with timeout 0). */
  events(runId: string, headers?: Headers): Promise<Json[]>;
  close(): Promise<void>;
}

function defined(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = v;
  return out;
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

export async function startTestHost(opts: TestHostOptions = {}): Promise<TestHost> {
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'handoff-test-'));
  const env: Record<string, string> = { HANDOFF_LOG_LEVEL: 'silent', ...(opts.env ?? {}) };
  if (opts.apiKeys !== undefined) env.HANDOFF_API_KEYS = opts.apiKeys;
  let schema: string | undefined;
  if (opts.pg) {
    if (!PG_URL) throw new Error('startTestHost({pg: true}) needs HANDOFF_TEST_PG_URL');
    schema = opts.pgSchema ?? `handoff_test_${randomBytes(6).toString('hex')}`;
    env.HANDOFF_DATABASE_URL = PG_URL;
    env.HANDOFF_PG_SCHEMA = schema;
    // Test files run two at a time and some start several hosts: keep well under max_connections.
    env.HANDOFF_PG_POOL_SIZE ??= '4';
  }
  let config: Config;
  let host: Host;
  try {
    config = loadConfig({ port: '0', data: dataDir, ...(opts.workflows ? { workflows: opts.workflows } : {}) }, env);
    // loadConfig resolves the built-in dir relative to the compiled config.js; under tsx that is
    // one level off, so put the real one first (and only once).
    config.workflowDirs = [
      BUILTIN_DIR,
      ...config.workflowDirs.filter((d) => d !== BUILTIN_WORKFLOWS && resolve(d) !== BUILTIN_DIR),
    ];
    host = await createHost(config, opts.logger ?? pino({ level: 'silent' }), {
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.egressLookup ? { egressLookup: opts.egressLookup } : {}),
    });
  } catch (err) {
    await cleanup(ownDir ? dataDir : undefined, opts.pgSchema ? undefined : schema);
    throw err;
  }
  if (opts.startRunner !== false) host.runner.start();
  const app = host.app;

  const request = async (method: string, url: string, body?: unknown, headers: Headers = {}): Promise<Reply> => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: defined(headers),
      ...(body === undefined ? {} : typeof body === 'string' ? { payload: body } : { payload: body as object }),
    });
    let parsed: Json;
    try {
      parsed = res.body === '' ? undefined : JSON.parse(res.body);
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, body: parsed, headers: res.headers, text: res.body };
  };

  let closed = false;
  const t: TestHost = {
    host,
    app,
    config,
    dialect: host.store.dialect,
    request,
    get: (url, headers) => request('GET', url, undefined, headers),
    post: (url, body, headers) => request('POST', url, body ?? {}, headers),
    async createRun(workflowId, inputs = {}, headers = {}) {
      const res = await request('POST', '/v1/runs', { workflowId, inputs }, headers);
      assert.equal(res.status, 201, `create ${workflowId}: ${res.text}`);
      assert.match(res.body.runId, /^run_/);
      return res.body.runId as string;
    },
    waitForStatus: (runId, statuses, headers) => waitForStatus(app, runId, statuses, headers),
    events: (runId, headers) => allEvents(app, runId, headers),
    async close() {
      if (closed) return;
      closed = true;
      try {
        await host.close();
      } finally {
        await cleanup(ownDir ? dataDir : undefined, opts.pgSchema ? undefined : schema);
      }
    },
  };
  return t;
}

/** Run `fn` with a short-lived client on HANDOFF_TEST_PG_URL. */
export async function withPg<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  if (!PG_URL) throw new Error('HANDOFF_TEST_PG_URL is not set');
  return withClient(PG_URL, fn);
}

async function cleanup(dir: string | undefined, schema: string | undefined): Promise<void> {
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (schema && PG_URL) await withPg((client) => client.query(`drop schema if exists ${schema} cascade`));
}

/** Overall bound for one wait; generous for a loaded CI machine, never reached when all is well. */
export const WAIT_DEADLINE_MS = 30_000;

/** GET the run's log after `lastSequence`, waiting up to `timeoutS` for something new (a long-poll). */
async function pollEvents(
  app: FastifyInstance,
  runId: string,
  lastSequence: number,
  timeoutS: number,
  headers: Headers,
): Promise<Json> {
  const url = `/v1/runs/${runId}/events/poll?lastSequence=${lastSequence}&timeout=${timeoutS}`;
  const poll = await app.inject({ method: 'GET', url, headers: defined(headers) });
  assert.equal(poll.statusCode, 200, `poll ${runId}: ${poll.body}`);
  return poll.json();
}

/** A long-poll's timeout in seconds: up to 5, never past the deadline, at least 1. */
const pollSeconds = (deadline: number): number => Math.max(1, Math.min(5, Math.floor((deadline - Date.now()) / 1000)));

/**
 * Wait until the run's status is one of `statuses`: re-read the snapshot, and between reads
 * long-poll the event log for anything after the last event seen (no fixed sleeps). Fails the
 * test with the last snapshot if the deadline passes first.
 */
export async function waitForStatus(
  app: FastifyInstance,
  runId: string,
  statuses: string[],
  headers: Headers = {},
  deadlineMs = WAIT_DEADLINE_MS,
): Promise<Json> {
  const deadline = Date.now() + deadlineMs;
  let lastSequence = -1;
  let snapshot: Json;
  return until(
    `run ${runId} to reach ${statuses.join('|')}`,
    async () => {
      // Between two reads of the snapshot, wait for the log to move instead of sleeping.
      if (snapshot !== undefined) {
        const body = await pollEvents(app, runId, lastSequence, pollSeconds(deadline), headers);
        lastSequence = body.lastEventSeq ?? lastSequence;
      }
      const res = await app.inject({ method: 'GET', url: `/v1/runs/${runId}`, headers: defined(headers) });
      assert.equal(res.statusCode, 200, `GET /v1/runs/${runId}: ${res.body}`);
      snapshot = res.json();
      return statuses.includes(snapshot.status) && snapshot;
    },
    { deadlineMs, intervalMs: 0, detail: () => `last snapshot: ${JSON.stringify(snapshot)}` },
  );
}

/** Wait until an event matching `pred` is in the run's log; returns it. */
export async function waitForEvent(
  app: FastifyInstance,
  runId: string,
  pred: (e: Json) => boolean,
  headers: Headers = {},
  deadlineMs = WAIT_DEADLINE_MS,
): Promise<Json> {
  const deadline = Date.now() + deadlineMs;
  let lastSequence = -1;
  const seen: Json[] = [];
  const described = () => `seen: ${seen.map((e) => `${e.sequence}:${e.type}`).join(', ')}`;
  return until(
    `a matching event of run ${runId}`,
    async () => {
      const body = await pollEvents(app, runId, lastSequence, pollSeconds(deadline), headers);
      for (const e of body.events as Json[]) {
        seen.push(e);
        if (pred(e)) return e;
      }
      lastSequence = body.lastEventSeq;
      if (body.isComplete) assert.fail(`run ${runId} ended without a matching event; ${described()}`);
      return undefined;
    },
    { deadlineMs, intervalMs: 0, detail: described },
  );
}

/** Every event of the run so far, in order. */
export async function allEvents(app: FastifyInstance, runId: string, headers: Headers = {}): Promise<Json[]> {
  const out: Json[] = [];
  let lastSequence = -1;
  for (;;) {
    const res = await app.inject({
      method: 'GET',
      url: `/v1/runs/${runId}/events/poll?lastSequence=${lastSequence}&timeout=0&limit=1000`,
      headers: defined(headers),
    });
    assert.equal(res.statusCode, 200, `poll ${runId}: ${res.body}`);
    const events = res.json().events as Json[];
    out.push(...events);
    if (events.length < 1000) return out;
    lastSequence = events.at(-1).sequence;
  }
}

/**
 * What the host has written: the row count of every table and the sum of run versions (every
 * change to a run moves its version). Equal before and after a request: it wrote nothing.
 */
export async function footprint(t: TestHost): Promise<Record<string, number>> {
  const tables = [
    'runs',
    'event_batches',
    'run_values',
    'interrupts',
    'idempotency',
    'a2a_tasks',
    'a2a_messages',
    'push_configs',
    'secrets',
    'push_outbox',
    'audit_entries',
    'audit_heads',
  ];
  const counts = tables.map((name) => sql`(select count(*) from ${sql.table(name)})`.as(name));
  const versions = sql`(select coalesce(sum(version), 0) from runs)`.as('run_versions');
  const { rows } = await sql<Record<string, unknown>>`select ${sql.join([...counts, versions])}`.execute(
    t.host.store.db,
  );
  return Object.fromEntries(Object.entries(rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
}
