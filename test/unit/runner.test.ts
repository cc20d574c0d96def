// The worker (src/engine/runner.ts): claim, execute, commit, hand back — on a real SQLite store
// in memory and a clock the test moves (the store's leases and timers, and the engine's, read
// it). Claim passes are asked for with kick(); the poll is far away, so what happens is what the
// test moved. Covered: a due run is driven to its end; a timer not yet due is left alone until the
// clock passes it; a worker whose lease expired is taken over, its late commit is fenced and
// dropped; and a crash between execute and commit re-executes the node with the same
// idempotency key, once the lease expires.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import pino from 'pino';
import { busPublisher } from '../../src/bus/bus.js';
import { InProcessBus } from '../../src/bus/in-process.js';
import { Runner } from '../../src/engine/runner.js';
import type { WorkflowDefinition } from '../../src/engine/workflow/definition.js';
import type { WorkflowSource } from '../../src/engine/workflow/source.js';
import { Metrics } from '../../src/metrics.js';
import type { RunRecord } from '../../src/store/model.js';
import type { Store } from '../../src/store/store.js';
import { lineOf, ManualClock, memoryStore, ProbeNode, withNodes } from '../support/engine-parts.js';
import { newRun } from '../support/runs.js';
import { until } from '../support/until.js';

const LEASE_MS = 30_000;

/** The loaded workflows: just `defs`. */
const sourceOf = (...defs: WorkflowDefinition[]): WorkflowSource =>
  ({ get: (id: string) => defs.find((d) => d.id === id) }) as WorkflowSource;

describe('Runner: claim, execute, commit', () => {
  let clock: ManualClock;
  let store: Store;
  let bus: InProcessBus;
  let probe: ProbeNode;
  let runners: Runner[];
  /** Each worker's metrics (its activeRuns gauge: runs it is driving now). */
  let metricsOf: Map<Runner, Metrics>;
  /** Every claim pass's result, by instance. */
  let claims: Array<{ owner: string; runIds: string[] }>;
  /** What the workers logged at level error: `msg: err.message`. */
  let errors: string[];

  beforeEach(async () => {
    clock = new ManualClock();
    store = await memoryStore(clock);
    bus = new InProcessBus();
    store.setPipeline({ steps: [], listeners: [busPublisher(bus)] });
    probe = new ProbeNode();
    runners = [];
    metricsOf = new Map();
    claims = [];
    errors = [];
    // Observe (not change) the claims the workers make.
    const claim = store.runs.claim.bind(store.runs);
    store.runs.claim = async (owner, leaseMs, limit) => {
      const got = await claim(owner, leaseMs, limit);
      claims.push({ owner, runIds: got.map((r) => r.runId) });
      return got;
    };
  });
  afterEach(async () => {
    for (const r of runners) await r.stop(1_000);
    await store.close();
  });

  function worker(instanceId: string, ...defs: WorkflowDefinition[]): Runner {
    const metrics = new Metrics(instanceId);
    const r = new Runner(store, sourceOf(...defs), bus, {
      instanceId,
      logger: pino({ level: 'error' }, { write: (line: string) => errors.push(logged(line)) }),
      metrics,
      clock,
      leaseMs: LEASE_MS,
      // Passes come from kicks and commits only: the backstop poll never fires within a test.
      pollMs: 600_000,
      nodeTypes: withNodes(probe),
    });
    runners.push(r);
    metricsOf.set(r, metrics);
    return r;
  }

  async function insertPending(def: WorkflowDefinition): Promise<RunRecord> {
    const first = def.nodes[0]?.id as string;
    const run = newRun({
      workflowId: def.id,
      cursor: { nodeId: first, ordinals: {} },
      createdAt: clock.date().toISOString(),
    });
    return (await store.transaction((tx) => tx.insertRun(run, []))).run;
  }

  const stored = async (runId: string) => (await store.runs.get(runId)) as RunRecord;
  const untilStatus = (runId: string, status: string) =>
    until(`run ${runId} ${status}`, async () => {
      const r = await stored(runId);
      return r.status === status && r;
    });
  /** Wait for a claim pass by `owner` that started after this call. */
  const nextPass = async (owner: string, kick: () => void) => {
    const seen = claims.length;
    kick();
    return until(`a claim pass by ${owner}`, () => claims.slice(seen).find((c) => c.owner === owner));
  };
  const untilIdle = (r: Runner) =>
    until('the worker to drive no run', async () => {
      const active = (await metricsOf.get(r)?.activeRuns.get())?.values[0]?.value;
      return active === 0;
    });
  const completions = async (runId: string, nodeId: string) =>
    (await store.events.list(runId)).filter((e) => e.type === 'node.completed' && e.nodeId === nodeId).length;

  it('drives a due run step by step to its end, then holds no lease', async () => {
    const def = lineOf('w', [
      ['p', 'test.probe'],
      ['end', 'core.transform', { output: 'ok' }],
    ]);
    const run = await insertPending(def);
    worker('a', def).start();
    const done = await untilStatus(run.runId, 'completed');
    assert.equal(done.leaseOwner, undefined);
    assert.deepEqual(probe.keys, [`${run.runId}:p:0`]);
    assert.deepEqual(claims[0], { owner: 'a', runIds: [run.runId] });
  });

  it('leaves a sleeping run alone until its timer is due by the clock, then runs it', async () => {
    const def = lineOf('w', [
      ['wait', 'core.delay', { ms: 60_000 }],
      ['p', 'test.probe'],
    ]);
    const run = await insertPending(def);
    const a = worker('a', def);
    a.start();
    await until('the run to sleep with its lease handed back', async () => {
      const r = await stored(run.runId);
      return r.wakeAt === clock.ms + 60_000 && r.leaseOwner === undefined;
    });
    clock.advance(59_999);
    assert.deepEqual((await nextPass('a', () => a.kick())).runIds, [], 'not due: not claimed');
    assert.equal(probe.executions.length, 0);
    assert.equal((await stored(run.runId)).status, 'running');

    clock.advance(1);
    assert.deepEqual((await nextPass('a', () => a.kick())).runIds, [run.runId], 'due: claimed');
    await untilStatus(run.runId, 'completed');
    assert.equal(probe.executions.length, 1);
  });

  it('takes over a run whose worker stalled past its lease; the stalled commit is fenced and dropped', async () => {
    const def = lineOf('w', [['p', 'test.probe']]);
    const run = await insertPending(def);
    const a = worker('a', def);
    const b = worker('b', def);
    probe.act = 'hold';
    a.start();
    await until('a executing the node', () => probe.holding === 1);
    assert.equal((await stored(run.runId)).leaseOwner, 'a');

    // Up to the last millisecond of a's lease nobody else may take the run.
    b.start();
    clock.advance(LEASE_MS);
    assert.deepEqual((await nextPass('b', () => b.kick())).runIds, []);
    // a stalls past its lease (its renewal is seconds away on the wall clock): b takes over.
    clock.advance(1);
    assert.deepEqual((await nextPass('b', () => b.kick())).runIds, [run.runId]);
    await until('b executing the node', () => probe.holding === 2);
    const key = `${run.runId}:p:0`;
    assert.deepEqual(probe.keys, [key, key], 'one execution each, under one idempotency key');

    // a's execution ends first: the run is as a read it but for the lease, and the lease fences a out.
    probe.release();
    await untilIdle(a);
    const taken = await stored(run.runId);
    assert.equal(taken.leaseOwner, 'b');
    assert.equal(taken.version, run.version, 'a committed nothing');
    assert.deepEqual(await store.events.list(run.runId), []);
    assert.deepEqual(errors, [], 'a lost commit is not an error: the worker lets the run go');

    probe.release();
    await untilStatus(run.runId, 'completed');
    assert.equal(await completions(run.runId, 'p'), 1);
  });

  it('a crash between execute and commit commits nothing and keeps the lease; after it expires the node runs again with the same key', async () => {
    const def = lineOf('w', [['p', 'test.probe']]);
    const run = await insertPending(def);
    // The worker's process dies after the node executed, before its commit reached the database.
    const transaction = store.transaction.bind(store);
    let crashed = false;
    store.transaction = (async (fn: Parameters<typeof transaction>[0]) => {
      if (!crashed && probe.executions.length === 1) {
        crashed = true;
        throw new Error('the process died before its commit');
      }
      return transaction(fn);
    }) as typeof store.transaction;
    const a = worker('a', def);
    a.start();
    await until('the crash', () => crashed);
    await untilIdle(a);
    const left = await stored(run.runId);
    assert.equal(left.status, 'pending', 'nothing committed');
    assert.equal(left.leaseOwner, 'a', 'the lease stays until it expires');
    assert.deepEqual(await store.events.list(run.runId), []);
    assert.deepEqual(errors, ['run execution failed: the process died before its commit']);

    const b = worker('b', def);
    b.start();
    clock.advance(LEASE_MS);
    assert.deepEqual((await nextPass('b', () => b.kick())).runIds, [], 'not before the lease expires');
    clock.advance(1);
    assert.deepEqual((await nextPass('b', () => b.kick())).runIds, [run.runId]);
    await untilStatus(run.runId, 'completed');
    const key = `${run.runId}:p:0`;
    assert.deepEqual(probe.keys, [key, key]);
    assert.equal(await completions(run.runId, 'p'), 1);
  });
});

/** A pino line as `msg: err.message`. */
function logged(line: string): string {
  const { msg, err } = JSON.parse(line) as { msg: string; err?: { message: string } };
  return err ? `${msg}: ${err.message}` : msg;
}
