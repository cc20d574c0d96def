// The store contract's shared parts: one suite per repository (test/integration/store-contract-*.test.ts)
// runs against every dialect: SQLite (a temp file) always, and PostgreSQL (a throw-away schema alone
// in its database) when HANDOFF_TEST_PG_URL is set. Every assertion is about behaviour a caller relies
// on (the contract in the header of src/store/store.ts and "the one rule" of docs/architecture.md);
// time moves only through the store's injected clock, never by sleeping.
//
//   storeContract('runs', (s) => { describe(...) })   the body once per dialect
//     s.sharedStore(clock)  one store on a new database for the enclosing describe
//     s.withStore(clock, fn) a store on a new database for one test
//     s.open()              a store on a new, empty database (closed after the suite)
//     s.open({ at: 'x' })   every call with the same `at` reaches the same database (re-open, migrate)
//     s.open({ now })       the store's clock
//     s.locate('x')         the openStore options of database 'x', for other processes
//
// and the records, writes and reads the suites share.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type OpenStoreOptions } from '../../src/store/connect.js';
import { ConflictError } from '../../src/store/errors.js';
import type {
  InterruptRecord,
  NewEvent,
  PushConfigRecord,
  RunEvent,
  RunRecord,
  TaskRecord,
} from '../../src/store/model.js';
import type { NewDelivery } from '../../src/store/repos/push-outbox.js';
import type { NewRun, RunChange, RunPatch, Store, StoreTx } from '../../src/store/store.js';
import { dropSchema, pgTestDatabases, pgTestUrl, uniqueSchemaName } from './pg.js';
import { newRun as pendingRun } from './runs.js';

interface OpenOptions {
  /** The store's clock (timestamps, lease expiry, due timers). */
  now?: () => Date;
  /** A name for the database: every open with the same name reaches the same database. */
  at?: string;
}
type Open = (opts?: OpenOptions) => Promise<Store>;

export const T0 = Date.parse('2030-01-01T00:00:00.000Z');
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export class Clock {
  constructor(public ms = T0) {}
  readonly now = (): Date => new Date(this.ms);
  iso(): string {
    return new Date(this.ms).toISOString();
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

let counter = 0;
export const uid = (prefix: string): string =>
  `${prefix}_${String(++counter).padStart(4, '0')}_${randomBytes(3).toString('hex')}`;
export const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);
export const seqs = (events: RunEvent[]): number[] => events.map((e) => e.sequence);
export const ids = (runs: Array<{ runId: string }>): string[] => runs.map((r) => r.runId).sort();

export function newRun(clock: Clock, over: Partial<NewRun> = {}): NewRun {
  return pendingRun({ runId: uid('run'), workflowId: 'wf-approve', createdAt: clock.iso(), ...over });
}

export function newInterrupt(clock: Clock, runId: string, over: Partial<InterruptRecord> = {}): InterruptRecord {
  return {
    interruptId: uid('int'),
    runId,
    nodeId: 'gate',
    kind: 'approval',
    status: 'open',
    data: { artifact: { title: 'Q3 plan', body: 'ünïcødé ✓ "quoted"' }, config: { quorum: 1 } },
    votes: [],
    exchanges: [],
    createdAt: clock.iso(),
    ...over,
  };
}

/** A task record for `run` (the A2A task of a run has the run's id). */
export function newTask(clock: Clock, run: NewRun, over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: run.runId,
    tenantId: run.tenantId,
    principalId: run.principalId,
    contextId: uid('ctx'),
    state: 'submitted',
    updatedAt: clock.iso(),
    ...over,
  };
}

/** A run and its task record, written in one transaction. */
export async function insertTask(
  store: Store,
  clock: Clock,
  over: Partial<TaskRecord> = {},
  runOver: Partial<NewRun> = {},
): Promise<TaskRecord> {
  const run = newRun(clock, {
    tenantId: over.tenantId ?? 'tenant-a',
    principalId: over.principalId ?? 'alice',
    ...runOver,
  });
  const rec = newTask(clock, run, over);
  await store.transaction(async (tx) => {
    await tx.insertRun(run, []);
    await tx.tasks.insert(rec);
  });
  return rec;
}

export function newConfig(clock: Clock, taskId: string, over: Partial<PushConfigRecord> = {}): PushConfigRecord {
  return {
    taskId,
    configId: uid('cfg'),
    tenantId: 'tenant-a',
    url: 'https://hooks.example.com/a2a?x=1&y=ü',
    createdAt: clock.iso(),
    protocolVersion: '0.3',
    ...over,
  };
}

/** A delivery of `taskId`'s transition `seq` to the config named like the task (unless `over` says). */
export function newDelivery(taskId: string, seq: number, over: Partial<NewDelivery> = {}): NewDelivery {
  return {
    taskId,
    configId: taskId,
    tenantId: 'tenant-a',
    seq,
    final: false,
    body: JSON.stringify({ kind: 'status-update', taskId, seq, text: 'ü ✓' }),
    ...over,
  };
}

export async function insert(store: Store, run: NewRun, events: NewEvent[] = []): Promise<RunRecord> {
  return (await store.transaction((tx) => tx.insertRun(run, events))).run;
}

export async function commit(
  store: Store,
  before: RunRecord,
  patch: RunPatch,
  events: NewEvent[] = [],
): Promise<RunRecord> {
  return (await store.transaction((tx) => tx.commitRun(before, patch, events))).run;
}

export async function mustGet(store: Store, runId: string): Promise<RunRecord> {
  const run = await store.runs.get(runId);
  assert.ok(run, `run ${runId} should exist`);
  return run;
}

/** The event log of a run is 0…n-1 with no gap and no duplicate, and matches `nextSeq`. */
export async function assertGapFree(store: Store, runId: string, expected: number): Promise<RunEvent[]> {
  const events = await store.events.list(runId, -1, 100_000);
  assert.deepEqual(seqs(events), range(expected), 'event sequences are 0…n-1, gap-free, no duplicates');
  assert.equal((await mustGet(store, runId)).nextSeq, expected, 'nextSeq follows the last event');
  return events;
}

/** A copy without own keys whose value is undefined (the shape a record read from the database has). */
export const withoutUndefined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export const isConflict = (r: PromiseSettledResult<unknown>): boolean =>
  r.status === 'rejected' && r.reason instanceof ConflictError;

/**
 * The store's pipeline is set once, so each store opened here gets a test pipeline whose one step
 * and one listener pass every change on to whatever the running test registered.
 */
interface Switchboard {
  steps: Set<(tx: StoreTx, change: RunChange) => Promise<void>>;
  commits: Set<(changes: RunChange[]) => void>;
  purges: Set<(runIds: string[]) => void>;
}
const boards = new WeakMap<Store, Switchboard>();

function board(store: Store): Switchboard {
  let b = boards.get(store);
  if (b) return b;
  const sb: Switchboard = { steps: new Set(), commits: new Set(), purges: new Set() };
  store.setPipeline({
    steps: [
      {
        name: 'test-steps',
        run: async (tx, change) => {
          for (const step of sb.steps) await step(tx, change);
        },
      },
    ],
    listeners: [
      {
        name: 'test-listeners',
        committed: (changes) => {
          for (const fn of sb.commits) fn(changes);
        },
        purged: (runIds) => {
          for (const fn of sb.purges) fn(runIds);
        },
      },
    ],
  });
  boards.set(store, sb);
  b = sb;
  return b;
}

/** Hear every commit of `store` until the returned function is called. */
export function onCommit(store: Store, fn: (changes: RunChange[]) => void): () => void {
  board(store).commits.add(fn);
  return () => board(store).commits.delete(fn);
}

/** Run `fn` inside every run transaction of `store` (a transition step), for the rest of the suite. */
export function addStep(store: Store, fn: (tx: StoreTx, change: RunChange) => Promise<void>): void {
  board(store).steps.add(fn);
}

/** Hear every purge of `store`. */
export function onPurge(store: Store, fn: (runIds: string[]) => void): void {
  board(store).purges.add(fn);
}

interface ContractEnv {
  /** The openStore options that reach the database named `at` (as `open({ at })` does), for other processes. */
  locate: (at: string) => Promise<OpenStoreOptions>;
  /** Called after the contract closed a store it opened. */
  closed?: (store: Store) => Promise<void>;
  /** Called once after every store is closed: remove files, drop schemas. */
  teardown?: () => Promise<void>;
}

export interface ContractStores {
  /** A store on a new database (or the database named `at`), closed after the suite at the latest. */
  open: Open;
  /** Close a store `open` gave (and drop its PostgreSQL schema). */
  close: (store: Store) => Promise<void>;
  /** The openStore options that reach the database named `at`, for other processes. */
  locate: (at: string) => Promise<OpenStoreOptions>;
  /** One store on a new database for the enclosing `describe`, closed after it. */
  sharedStore: (clock: Clock) => () => Store;
  /** A store on a new database for one test (claims and purges see the whole table). */
  withStore: (clock: Clock, fn: (store: Store) => Promise<void>) => Promise<void>;
}

/**
 * `body` (the describes of one repository) once per dialect: under `store contract: sqlite`, and
 * under `store contract: postgres` when HANDOFF_TEST_PG_URL is set (else one skipped test says so).
 */
export function storeContract(body: (s: ContractStores) => void): void {
  const sqlite = sqliteBackend();
  contract('sqlite', sqlite.open, sqlite, body);
  const pgUrl = pgTestUrl();
  if (pgUrl) {
    const postgres = postgresBackend(pgUrl);
    contract('postgres', postgres.open, postgres, body);
  } else {
    it('store contract: postgres', {
      skip: 'HANDOFF_TEST_PG_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test)',
    });
  }
}

function contract(
  name: string,
  open: Open,
  { locate, closed, teardown }: ContractEnv,
  body: (s: ContractStores) => void,
): void {
  describe(`store contract: ${name}`, () => {
    const opened = new Set<Store>();
    const openTracked: Open = async (opts) => {
      const store = await open(opts);
      opened.add(store);
      return store;
    };
    const close = async (store: Store): Promise<void> => {
      if (!opened.delete(store)) return;
      await store.close();
      await closed?.(store);
    };
    after(async () => {
      for (const store of [...opened]) await close(store);
      await teardown?.();
    });

    function sharedStore(clock: Clock): () => Store {
      let store: Store | undefined;
      before(async () => {
        store = await openTracked({ now: clock.now });
      });
      after(async () => {
        if (store) await close(store);
      });
      return () => {
        assert.ok(store, 'store is open');
        return store;
      };
    }

    async function withStore(clock: Clock, fn: (store: Store) => Promise<void>): Promise<void> {
      const store = await openTracked({ now: clock.now });
      try {
        await fn(store);
      } finally {
        await close(store);
      }
    }

    body({ open: openTracked, close, locate, sharedStore, withStore });
  });
}

// ---- dialects ----

function sqliteBackend(): { open: Open } & ContractEnv {
  const dirs: string[] = [];
  const named = new Map<string, Promise<string>>();
  const newFile = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), 'handoff-store-contract-'));
    dirs.push(dir);
    return join(dir, 'handoff.db');
  };
  const fileFor = (at?: string): Promise<string> => {
    if (at === undefined) return newFile();
    let file = named.get(at);
    if (!file) {
      file = newFile();
      named.set(at, file);
    }
    return file;
  };
  return {
    open: async (opts = {}) =>
      openStore({ sqliteFile: await fileFor(opts.at), ...(opts.now ? { now: opts.now } : {}) }),
    locate: async (at) => ({ sqliteFile: await fileFor(at) }),
    teardown: async () => {
      for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Every location is a unique schema alone in its database: named locations get a database of
 * their own; a new unnamed one reuses a database whose previous store was closed and its schema
 * dropped. Not several schemas in one database, because of the migration bug shown by
 * 'postgres: schemas' (store-contract-migrations.test.ts): while it stands, two Handoff schemas in one database break each
 * other's migrations (ours, and those of any other suite using HANDOFF_TEST_PG_URL meanwhile).
 */
function postgresBackend(url: string): { open: Open } & ContractEnv {
  const databases = pgTestDatabases(url);
  const named = new Map<string, Promise<OpenStoreOptions>>();
  const unnamed = new Map<Store, { databaseUrl: string; pgSchema: string }>();
  const free: string[] = [];
  const locate = (at: string): Promise<OpenStoreOptions> => {
    let loc = named.get(at);
    if (!loc) {
      loc = databases.fresh().then((databaseUrl) => ({ databaseUrl, pgSchema: uniqueSchemaName() }));
      named.set(at, loc);
    }
    return loc;
  };
  return {
    async open(opts = {}) {
      const now = opts.now ? { now: opts.now } : {};
      if (opts.at !== undefined) return openStore({ ...(await locate(opts.at)), ...now });
      const loc = { databaseUrl: free.pop() ?? (await databases.fresh()), pgSchema: uniqueSchemaName() };
      const store = await openStore({ ...loc, ...now });
      unnamed.set(store, loc);
      return store;
    },
    locate,
    async closed(store) {
      const loc = unnamed.get(store);
      if (!loc) return;
      unnamed.delete(store);
      await dropSchema(loc.databaseUrl, loc.pgSchema);
      free.push(loc.databaseUrl);
    },
    teardown: () => databases.dropAll(),
  };
}
