// Many Handoff instances on one PostgreSQL: THREE real compiled server processes
// (`handoff serve`, instances a, b and c) share one database schema, one vault key
// (HANDOFF_SECRET_KEY) and one API key; see test/support/cluster.ts. What is checked, end to end:
//
//   1. Work spreads: 30 runs started through all three instances all complete with clean logs, and
//      their durable-timer wake-ups were executed by more than one instance. Nothing in the API
//      says which instance executed a node, so the spread is read from each process's own
//      /metrics: `handoff_node_executions_total{type="core.delay",outcome="completed"}` counts
//      only timers that fired in a worker that claimed the run (a delay never completes inline in
//      the request that created it).
//   2. One task, three instances: an approval task started on A is read on B (`tasks/get`),
//      streamed on C (`tasks/resubscribe`), approved through B; C's stream sees the completion,
//      every update once, ids strictly increasing, exactly what the run's log says; A replays it.
//   3. Failover: `steps` runs with push configs are started on A and followed by streams on A and
//      on C; an approval task on A has its input-required push delivered. A is then caught holding
//      the lease of a run mid-run (frozen with SIGSTOP the moment PostgreSQL shows
//      `runs.lease_owner = 'a'` and checked again, so the SIGKILL provably lands while A holds it)
//      and killed. Every run completes on B/C after A's lease expires; every log is clean (gap-free,
//      one `run.started`, each (node, ordinal) started and completed once); each `completed` push
//      reaches the receiver exactly once with the token A stored (B/C decrypt it with the shared
//      key); the approval task, approved through C, gets its two pushes once each, in order; C's
//      streams saw every update once across the failover, and A's cut streams, re-attached on B
//      with Last-Event-ID, add up to the same.
//   4. A push in flight on an instance that dies (the receiver holds the request) is sent again by
//      the survivor with the same delivery id once the push lease (HANDOFF_PUSH_LEASE_MS) expires.
//
// Skipped without HANDOFF_TEST_PG_URL. Nothing waits by sleeping: every wait polls a condition
// (the run, the log, the database, the receiver, a stream) until a deadline.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  assertCleanLog,
  CLUSTER_KEY,
  type Cluster,
  type ClusterNode,
  deliveries,
  getRun,
  type Json,
  metricSamples,
  reply,
  rpcOk,
  type RunEventDoc,
  runEvents,
  skillData,
  startCluster,
  startRun,
  until,
  userMessage,
} from '../support/cluster.js';
import {
  type Behaviour,
  type HttpsReceiver,
  type ReceivedRequest,
  startHttpsReceiver,
} from '../support/https-receiver.js';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';
import { killAllServers } from '../support/server-process.js';
import { expectedA2AUpdates, openA2AStream, type SseConnection } from '../support/sse-client.js';

const PG_URL = pgTestUrl();
const schemas = PG_URL ? pgTestSchemas(PG_URL, 'handoff_test_multi') : undefined;

const CASE_TIMEOUT_MS = 120_000;
const WAIT_MS = 60_000;

const dirs: string[] = [];
after(async () => {
  await killAllServers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// The push receiver: one HTTPS server, one path per task, every request logged.

class Hooks {
  private readonly hits = new Map<string, ReceivedRequest[]>();
  private readonly answers = new Map<string, (req: ReceivedRequest, nth: number) => Behaviour>();
  constructor(private readonly rx: HttpsReceiver) {
    rx.behave((req) => {
      const log = this.hits.get(req.path) ?? [];
      log.push(req);
      this.hits.set(req.path, log);
      return this.answers.get(req.path)?.(req, log.length - 1) ?? { status: 200 };
    });
  }
  /** A fresh path; `answer` decides each response (default 200 at once). */
  endpoint(
    name: string,
    answer?: (req: ReceivedRequest, nth: number) => Behaviour,
  ): { url: string; hits: () => ReceivedRequest[] } {
    const path = `/hook/${name}-${randomUUID().slice(0, 8)}`;
    if (answer) this.answers.set(path, answer);
    return { url: this.rx.urlFor('127.0.0.1', path), hits: () => this.hits.get(path) ?? [] };
  }
}

// ---------------------------------------------------------------------------------------------
// Streams: what a client saw, checked against the run's own log.

interface Seen {
  id: number | undefined;
  result: Json;
}

function seenOf(s: SseConnection): Seen[] {
  return s.events.map((e) => {
    assert.equal(e.json?.jsonrpc, '2.0', `not a JSON-RPC response: ${e.data}`);
    assert.ok(!('error' in e.json), `error event in the stream: ${e.data}`);
    return { id: e.id === undefined ? undefined : Number(e.id), result: e.json.result };
  });
}

/**
 * The updates of `seen` (after any leading Task snapshot) are exactly those the log maps to,
 * in order, once each, with strictly increasing ids, ending in `completed` with `final: true`.
 */
function assertStreamMatchesLog(
  seen: Seen[],
  log: RunEventDoc[],
  opts: { after: number; initialState: string },
  label: string,
): void {
  const updates = seen.filter((s) => s.result.kind !== 'task');
  const ids = updates.map((u) => u.id);
  assert.ok(
    ids.every((id) => typeof id === 'number' && Number.isInteger(id)),
    `${label}: every update has a numeric SSE id: ${JSON.stringify(ids)}`,
  );
  for (let i = 1; i < ids.length; i++)
    assert.ok(ids[i]! > ids[i - 1]!, `${label}: SSE ids strictly increasing: ${JSON.stringify(ids)}`);
  const expected = expectedA2AUpdates(
    log.filter((e) => e.sequence > opts.after),
    opts.initialState,
  );
  const got = updates.map((u) => ({
    seq: u.id,
    kind: u.result.kind,
    ...(u.result.kind === 'status-update' ? { state: u.result.status.state } : {}),
  }));
  assert.deepEqual(got, expected, `${label}: the stream carried exactly the log's updates, no gap, no duplicate`);
  const last = updates.at(-1)?.result;
  assert.equal(last?.kind, 'status-update', `${label}: ends with a status update`);
  assert.equal(last.status.state, 'completed', `${label}: ends completed`);
  assert.equal(last.final, true, `${label}: the last update is final`);
  assert.ok(
    updates.slice(0, -1).every((u) => u.result.final !== true),
    `${label}: only the last update is final`,
  );
}

// ---------------------------------------------------------------------------------------------

describe('many Handoff instances on one PostgreSQL', {
  skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set (three servers on one PostgreSQL)',
}, () => {
  let cluster: Cluster;
  let a: ClusterNode;
  let b: ClusterNode;
  let c: ClusterNode;
  let rx: HttpsReceiver;
  let hooks: Hooks;

  before(async () => {
    rx = await startHttpsReceiver();
    hooks = new Hooks(rx);
    const caDir = mkdtempSync(join(tmpdir(), 'handoff-multi-ca-'));
    dirs.push(caDir);
    const caFile = join(caDir, 'ca.pem');
    writeFileSync(caFile, rx.caPem);
    cluster = await startCluster({
      pgUrl: PG_URL!,
      schema: schemas!.fresh(),
      names: ['a', 'b', 'c'],
      env: {
        HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8',
        HANDOFF_PUSH_CA_FILE: caFile,
        HANDOFF_PUSH_RETRY_SCHEDULE: '100ms,200ms,400ms,800ms',
        // A dead instance's claimed deliveries are retried by another after this (default 60 s;
        // it must exceed the 5 s attempt timeout). See the last case.
        HANDOFF_PUSH_LEASE_MS: '6000',
      },
    });
    [a, b, c] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
  });

  after(async () => {
    await cluster?.close();
    await killAllServers();
    await rx?.close();
    await schemas?.dropAll();
  });

  it('runs started through all three instances all complete; their timers fire on more than one instance', {
    timeout: CASE_TIMEOUT_MS,
  }, async (t) => {
    const N = 30;
    const STEPS = 3;
    const nodes = [a, b, c];
    const wakeups = () =>
      Promise.all(
        nodes.map(async (n) => {
          const samples = await metricSamples(n, 'handoff_node_executions_total', {
            type: 'core.delay',
            outcome: 'completed',
          });
          // Where the host labels its samples with its instance id, each process names itself.
          for (const s of samples)
            assert.ok(
              s.labels.instance === undefined || s.labels.instance === n.name,
              `${n.name}'s /metrics: ${JSON.stringify(s.labels)}`,
            );
          return samples.reduce((sum, s) => sum + s.value, 0);
        }),
      );
    const before = await wakeups();

    const ids = await Promise.all(
      Array.from({ length: N }, (_, i) => startRun(nodes[i % 3]!, 'steps', { steps: STEPS, stepMs: 100 })),
    );
    assert.equal(new Set(ids).size, N);

    // Each run is watched through an instance other than the one that started it.
    const open = new Set(ids.map((_, i) => i));
    await until(
      `all ${N} runs completed`,
      async () => {
        for (const i of [...open]) {
          const run = await getRun(nodes[(i + 1) % 3]!, ids[i]!);
          assert.ok(
            !['failed', 'cancelled'].includes(run.status),
            `run ${ids[i]} ended ${run.status}: ${JSON.stringify(run.error)}`,
          );
          if (run.status === 'completed') open.delete(i);
        }
        return open.size === 0;
      },
      WAIT_MS,
      100,
    );

    for (const [i, id] of ids.entries()) {
      const log = await runEvents(nodes[(i + 2) % 3]!, id);
      const completed = assertCleanLog(log, id);
      assert.deepEqual(
        Object.fromEntries(completed),
        { init: 1, step: STEPS, count: STEPS, done: 1 },
        `${id}: node completions`,
      );
      assert.deepEqual(log.at(-1)?.payload?.outputs, { done: { steps: STEPS } }, `${id}: output`);
    }

    const delta = (await wakeups()).map((n, i) => n - before[i]!);
    t.diagnostic(`timer wake-ups executed per instance (a, b, c): ${delta.join(', ')}`);
    assert.ok(
      delta.reduce((x, y) => x + y, 0) >= N * STEPS,
      `every one of the ${N * STEPS} timers fired somewhere: ${delta.join(', ')}`,
    );
    assert.ok(
      delta.filter((d) => d > 0).length >= 2,
      `the timers fired on more than one instance: ${delta.join(', ')}`,
    );
  });

  it('a task started on A is read on B, streamed on C, approved through B: C sees the completion once, in order', {
    timeout: CASE_TIMEOUT_MS,
  }, async () => {
    const task = await rpcOk(a, 'message/send', {
      message: userMessage([{ kind: 'text', text: 'draft me on A' }], { metadata: { skillId: 'approval' } }),
    });
    assert.equal(task.kind, 'task');
    assert.equal(task.status.state, 'input-required');

    const onB = await rpcOk(b, 'tasks/get', { id: task.id });
    assert.equal(onB.id, task.id);
    assert.equal(onB.contextId, task.contextId);
    assert.deepEqual(onB.status, task.status, 'B says what A said');
    assert.equal(onB.metadata?.openwop?.interrupt?.kind, 'approval');

    const stream = await openA2AStream(
      c.url,
      'tasks/resubscribe',
      { id: task.id },
      { token: CLUSTER_KEY, deadlineMs: WAIT_MS },
    );
    assert.ok(stream.isSse, `resubscribe on C: ${stream.status} ${stream.text ?? ''}`);
    const [first] = await stream.waitForCount(1);
    const snapshot = first!.json.result;
    assert.equal(snapshot.kind, 'task');
    assert.equal(snapshot.status.state, 'input-required');
    assert.equal(snapshot.metadata?.openwop?.interrupt?.kind, 'approval');
    const snapshotId = Number(first!.id);
    assert.ok(Number.isInteger(snapshotId) && snapshotId >= 0, `the snapshot carries the cursor: ${first!.id}`);

    const done = await rpcOk(b, 'message/send', { message: reply(task, { action: 'accept' }) });
    assert.equal(done.status.state, 'completed');

    const end = await stream.waitForEnd(WAIT_MS);
    assert.equal(end.reason, 'end', `C's stream ended by the server: ${stream.describe()}`);
    const log = await runEvents(c, task.id);
    assert.equal(log.at(-1)?.type, 'run.completed');
    assert.ok(snapshotId < log.length);
    assertStreamMatchesLog(
      seenOf(stream),
      log,
      { after: snapshotId, initialState: 'input-required' },
      'resubscribe on C',
    );

    // Any instance replays the whole task from the log, from the first event.
    const replay = await openA2AStream(
      a.url,
      'tasks/resubscribe',
      { id: task.id },
      { token: CLUSTER_KEY, lastEventId: -1, deadlineMs: WAIT_MS },
    );
    await replay.waitForEnd(WAIT_MS);
    assertStreamMatchesLog(seenOf(replay), log, { after: -1, initialState: 'submitted' }, 'replay on A');
  });

  it('SIGKILL of A while it holds a run: B and C finish every run once, push each transition once, \
streams see every update once', {
    timeout: CASE_TIMEOUT_MS,
  }, async (t) => {
    const t0 = Date.now();
    const mark = (what: string) => t.diagnostic(`${what} at ${Date.now() - t0} ms`);
    const K = 6;
    const STEPS = 40;
    const STEP_MS = 150;

    const eps = Array.from({ length: K }, (_, i) => hooks.endpoint(`failover-${i}`));
    const tasks: Json[] = await Promise.all(
      eps.map((ep, i) =>
        rpcOk(a, 'message/send', {
          message: skillData('steps', { steps: STEPS, stepMs: STEP_MS }),
          configuration: { blocking: false, pushNotificationConfig: { url: ep.url, token: `tok-failover-${i}` } },
        }),
      ),
    );
    const ids: string[] = tasks.map((task) => task.id);
    assert.equal(new Set(ids).size, K);
    mark('started on A');

    // C follows every task from its first event (Last-Event-ID: -1), across the failover; so does
    // A, whose streams die with it and are re-attached on B from the last id they delivered.
    const follow = (n: ClusterNode) =>
      Promise.all(
        ids.map((id) =>
          openA2AStream(
            n.url,
            'tasks/resubscribe',
            { id },
            { token: CLUSTER_KEY, lastEventId: -1, deadlineMs: 90_000 },
          ),
        ),
      );
    const [streams, onA] = await Promise.all([follow(c), follow(a)]);
    for (const s of [...streams, ...onA]) assert.ok(s.isSse, `resubscribe: ${s.status} ${s.text ?? ''}`);

    // An approval task on A, with its input-required push delivered before A dies; it is approved
    // through C afterwards, and its completed push comes from B or C.
    const gateEp = hooks.endpoint('failover-gate');
    const gate = await rpcOk(a, 'message/send', {
      message: userMessage([{ kind: 'text', text: 'approve me after the failover' }], {
        metadata: { skillId: 'approval' },
      }),
      configuration: { pushNotificationConfig: { url: gateEp.url, token: 'tok-failover-gate' } },
    });
    assert.equal(gate.status.state, 'input-required');
    await until(
      'the input-required push delivered',
      async () => (await deliveries(b, gate.id)).some((d) => d.state === 'delivered'),
      WAIT_MS,
      50,
    );

    // Mid-run: every run has counted at least one step.
    await until(
      'every run mid-run',
      async () => {
        const logs = await Promise.all(ids.map((id) => runEvents(b, id)));
        return logs.every((log) => log.some((e) => e.type === 'node.completed' && e.nodeId === 'count'));
      },
      WAIT_MS,
      50,
    );
    mark('all mid-run');

    // Catch A holding a lease: PostgreSQL shows runs.lease_owner = 'a'; freeze A, look again, and
    // kill it frozen if it still holds one (else let it go on and look again).
    let held: Array<{ runId: string; status: string }> = [];
    let freezes = 0;
    await until(
      "A holding the lease of a run (runs.lease_owner = 'a')",
      async () => {
        if ((await cluster.leasesHeldBy('a', ids)).length === 0) return false;
        a.child.kill('SIGSTOP');
        freezes++;
        held = await cluster.leasesHeldBy('a', ids);
        if (held.length > 0) return true;
        a.child.kill('SIGCONT');
        return false;
      },
      WAIT_MS,
      2,
    );
    const killed = await a.kill();
    assert.equal(killed.signal, 'SIGKILL');
    mark(`A killed holding ${held.length} run lease(s) after ${freezes} freeze(s)`);
    for (const h of held)
      assert.ok(['pending', 'running', 'cancelling'].includes(h.status), `A held ${h.runId} mid-run: ${h.status}`);
    const pushesHeld = await cluster.pushLeasesHeldBy('a', ids);
    if (pushesHeld.length > 0)
      t.diagnostic(`A died holding push deliveries ${JSON.stringify(pushesHeld)} (their lease outlives it)`);
    const unfinished = (await Promise.all(ids.map((id) => getRun(b, id)))).filter(
      (r) => r.status !== 'completed',
    ).length;
    t.diagnostic(`${unfinished} of ${K} runs unfinished when A died`);

    // A's streams are cut; their clients re-attach on B after the last id each one received.
    const reattached = await Promise.all(
      onA.map(async (s, i) => {
        await s.waitForEnd(WAIT_MS);
        const seen = seenOf(s);
        const last = seen.at(-1)?.id ?? -1;
        return {
          seen,
          again: await openA2AStream(
            b.url,
            'tasks/resubscribe',
            { id: ids[i] },
            { token: CLUSTER_KEY, lastEventId: last, deadlineMs: 90_000 },
          ),
        };
      }),
    );
    t.diagnostic(`updates A's streams delivered before it died: ${reattached.map((r) => r.seen.length).join(', ')}`);

    // B and C finish every run, including those A held (after its lease expires).
    const open = new Set(ids);
    await until(
      'every run completed on B/C',
      async () => {
        for (const id of [...open]) {
          const task = await rpcOk(b, 'tasks/get', { id });
          assert.ok(['working', 'submitted', 'completed'].includes(task.status.state), `${id} is ${task.status.state}`);
          if (task.status.state === 'completed') open.delete(id);
        }
        return open.size === 0;
      },
      WAIT_MS,
      100,
    );
    mark('all completed');
    const approved = await rpcOk(c, 'message/send', { message: reply(gate, { action: 'accept' }) });
    assert.equal(approved.status.state, 'completed');

    // Every log is clean: no node re-completed, one run.started, one run.completed.
    const logs = new Map<string, RunEventDoc[]>();
    for (const id of ids) {
      const log = await runEvents(c, id);
      logs.set(id, log);
      const completed = assertCleanLog(log, id);
      assert.deepEqual(
        Object.fromEntries(completed),
        { init: 1, step: STEPS, count: STEPS, done: 1 },
        `${id}: node completions`,
      );
      assert.deepEqual(log.at(-1)?.payload?.outputs, { done: { steps: STEPS } }, `${id}: output`);
    }

    // C's streams: every update of the run once, from the first to `completed`.
    for (const [i, s] of streams.entries()) {
      const end = await s.waitForEnd(WAIT_MS);
      assert.equal(end.reason, 'end', `stream ${i} on C ended by the server: ${s.describe()}`);
      assertStreamMatchesLog(
        seenOf(s),
        logs.get(ids[i]!)!,
        { after: -1, initialState: 'submitted' },
        `stream of ${ids[i]} on C`,
      );
    }
    for (const [i, r] of reattached.entries()) {
      const end = await r.again.waitForEnd(WAIT_MS);
      assert.equal(end.reason, 'end', `re-attached stream ${i} on B ended by the server: ${r.again.describe()}`);
      const union = [...r.seen, ...seenOf(r.again)];
      assertStreamMatchesLog(
        union,
        logs.get(ids[i]!)!,
        { after: -1, initialState: 'submitted' },
        `stream of ${ids[i]} on A, then re-attached on B`,
      );
    }
    mark('streams checked');

    // Pushes: one `completed` per task, delivered once, with the token A stored.
    await until(
      'every completed push delivered',
      async () => {
        const all = await Promise.all(ids.map((id) => deliveries(b, id)));
        return all.every((ds) => ds.length >= 1 && ds.every((d) => d.state === 'delivered')) && all;
      },
      WAIT_MS,
      100,
    );
    const gateDs = await until(
      "the approval task's two pushes delivered",
      async () => {
        const ds = (await deliveries(b, gate.id)).reverse();
        return ds.length === 2 && ds.every((d) => d.state === 'delivered') && ds;
      },
      WAIT_MS,
      100,
    );
    mark('pushes delivered');
    const gateHits = gateEp.hits();
    assert.deepEqual(
      gateHits.map((h) => [
        h.headers['x-handoff-delivery-id'],
        JSON.parse(h.body).status.state,
        h.headers['x-a2a-notification-token'],
      ]),
      [
        [gateDs[0].deliveryId, 'input-required', 'tok-failover-gate'],
        [gateDs[1].deliveryId, 'completed', 'tok-failover-gate'],
      ],
      'each transition of the approval task pushed once, in order, across the failover',
    );
    for (const [i, id] of ids.entries()) {
      const ds = await deliveries(c, id);
      assert.equal(ds.length, 1, `${id}: one delivery (the completed transition): ${JSON.stringify(ds)}`);
      const [d] = ds;
      assert.deepEqual(
        [d.state, d.final, d.attempts, d.lastStatus],
        ['delivered', true, 1, 200],
        `${id}: ${JSON.stringify(d)}`,
      );
      const hits = eps[i]!.hits();
      assert.equal(
        hits.length,
        1,
        `${id}: the receiver got exactly one request: ${JSON.stringify(hits.map((h) => h.body))}`,
      );
      const [hit] = hits;
      assert.equal(hit!.headers['x-handoff-delivery-id'], d.deliveryId);
      assert.equal(hit!.headers['x-a2a-task-id'], id);
      assert.equal(
        hit!.headers['x-a2a-notification-token'],
        `tok-failover-${i}`,
        'the token A stored, decrypted by B or C',
      );
      assert.equal(hit!.headers.authorization, `Bearer tok-failover-${i}`);
      const body = JSON.parse(hit!.body);
      assert.equal(body.kind, 'status-update');
      assert.equal(body.taskId, id);
      assert.equal(body.contextId, tasks[i].contextId);
      assert.equal(body.status.state, 'completed');
      assert.equal(body.final, true);
    }
  });

  // A push an instance has sent but not yet recorded when it dies stays leased to it: another
  // instance sends it again (same delivery id: at-least-once, the receiver dedups) once that lease
  // expires, HANDOFF_PUSH_LEASE_MS (6 s here; the default 60 s would hold it, and every later push
  // of the task queued behind it, for a minute).
  it('a push in flight on an instance that dies is sent again by another one after the push lease, \
with the same delivery id', {
    timeout: CASE_TIMEOUT_MS,
  }, async (t) => {
    const alive = [b, c];
    // The first request hangs (the instance dies before the answer); later ones succeed at once.
    const ep = hooks.endpoint('in-flight', (_req, nth) =>
      nth === 0 ? { status: 200, delayMs: 4_000 } : { status: 200 },
    );
    const task = await rpcOk(b, 'message/send', {
      message: userMessage([{ kind: 'text', text: 'push me' }], { metadata: { skillId: 'approval' } }),
      configuration: { pushNotificationConfig: { url: ep.url, token: 'tok-in-flight' } },
    });
    assert.equal(task.status.state, 'input-required');
    await until('the input-required push in flight', () => ep.hits().length >= 1, WAIT_MS, 5);
    const holders = await Promise.all(
      alive.map(async (n) => ({ n, rows: await cluster.pushLeasesHeldBy(n.name, [task.id]) })),
    );
    const victim = holders.find((h) => h.rows.length > 0)?.n;
    assert.ok(
      victim,
      `an instance holds the delivery in flight: ${JSON.stringify(holders.map((h) => [h.n.name, h.rows]))}`,
    );
    const survivor = alive.find((n) => n !== victim)!;
    await victim.kill();
    const killedAt = Date.now();
    t.diagnostic(`${victim.name} killed with the push in flight; ${survivor.name} remains`);

    const done = await rpcOk(survivor, 'message/send', { message: reply(task, { action: 'accept' }) });
    assert.equal(done.status.state, 'completed');
    const ds = await until(
      'both pushes delivered by the survivor',
      async () => {
        const rows = (await deliveries(survivor, task.id)).reverse();
        return rows.length === 2 && rows.every((d) => d.state === 'delivered') && rows;
      },
      30_000,
      100,
    );
    t.diagnostic(`redelivered ${Date.now() - killedAt} ms after the kill`);
    const [ir, cd] = ds as [Json, Json];
    const hits = ep.hits();
    const ids = hits.map((h) => String(h.headers['x-handoff-delivery-id']));
    // The dead instance's attempt, then the same delivery again (a receiver dedups by the id),
    // then the completed push, once, after it.
    assert.deepEqual(ids, [ir.deliveryId, ir.deliveryId, cd.deliveryId], JSON.stringify(hits.map((h) => h.body)));
    assert.deepEqual(
      hits.map((h) => JSON.parse(h.body).status.state),
      ['input-required', 'input-required', 'completed'],
    );
    for (const h of hits) assert.equal(h.headers['x-a2a-notification-token'], 'tok-in-flight');
  });
});
