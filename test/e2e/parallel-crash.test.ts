// A forked run survives a crash: a real server process is SIGKILLed while branches' calls are in
// flight, while a join is being satisfied, and while two gates wait; each time it restarts on the
// same database. After the restart every branch's node completes exactly once in a gap-free log,
// and a call's Idempotency-Key is repeated only by re-executions of calls whose completion was not
// committed before the kill — never after. The kills come on conditions (a call is held open by
// the called server, a completion is in the log), never after a sleep. SQLite always, PostgreSQL
// when HANDOFF_TEST_PG_URL is set (a fresh schema per test).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it, type TestContext } from 'node:test';
import { node, workflowOf } from '../support/call-workflows.js';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

const PG_URL = pgTestUrl();
const pgSchemas = PG_URL ? pgTestSchemas(PG_URL, 'pcrash') : undefined;
const DIALECTS = PG_URL ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
const dirs: string[] = [];

// Event payloads and snapshots are read field by field.
type Json = any;

afterEach(async () => {
  await killAllServers();
});

after(async () => {
  await killAllServers();
  await pgSchemas?.dropAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

// ---------------------------------------------------------------------------------------------
// Workflows

/** One attempt per execution: every request the called server sees is a separate execution. */
const call = (id: string) =>
  node(id, 'http.request', {
    method: 'GET',
    url: `{{ inputs.url }}/${id}`,
    timeoutMs: 120_000,
    retry: { attempts: 1 },
  });

const FAN = ['b0', 'b1', 'b2', 'b3', 'b4'];

/** FAN calls in parallel, all joined; the artifact names them in arrival order. */
const fanOut = workflowOf(
  'fan-out',
  [
    node('fork', 'core.parallel', {}),
    ...FAN.map(call),
    node('all', 'core.join', { mode: 'all' }),
    node('done', 'core.transform', { output: { arrived: '{{ nodes.all.arrived }}' } }, { outputRole: 'artifact' }),
  ],
  [...FAN.map((b): [string, string] => ['fork', b]), ...FAN.map((b): [string, string] => [b, 'all']), ['all', 'done']],
);

/** Three calls in parallel, the first two to answer win; then one more call after the join. */
const firstTwo = workflowOf(
  'first-two-calls',
  [
    node('fork', 'core.parallel', {}),
    call('a'),
    call('b'),
    call('c'),
    node('two', 'core.join', { mode: 'count', count: 2 }),
    call('after'),
    node('done', 'core.transform', { output: { arrived: '{{ nodes.two.arrived }}' } }, { outputRole: 'artifact' }),
  ],
  [
    ['fork', 'a'],
    ['fork', 'b'],
    ['fork', 'c'],
    ['a', 'two'],
    ['b', 'two'],
    ['c', 'two'],
    ['two', 'after'],
    ['after', 'done'],
  ],
);

// ---------------------------------------------------------------------------------------------
// The called server: counts requests per Idempotency-Key and per incarnation of the host, and
// answers a node's request at once or holds it open until told to answer (or the caller dies).

interface Call {
  /** Which incarnation of the host made it (0 = the first process). */
  life: number;
  node: string;
  key: string;
  /** Its answer was written out whole (the host may have died before committing it). */
  delivered: boolean;
}

interface CallServer {
  url: string;
  calls: Call[];
  /** The host's incarnation the next requests belong to. */
  life: number;
  /** Answer requests of these nodes at once; hold the others. */
  answer: Set<string>;
  /** A request of `node` in the current incarnation is held open now. */
  holding(node: string): boolean;
  /** Answer every held request of `node` (and later ones of it at once). */
  release(node: string): void;
  close(): Promise<void>;
}

async function startCallServer(): Promise<CallServer> {
  const held = new Map<Call, ServerResponse>();
  const respond = (c: Call, res: ServerResponse) => {
    held.delete(c);
    res.on('finish', () => {
      c.delivered = true;
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ node: c.node, life: c.life }));
  };
  const cs: CallServer = {
    url: '',
    calls: [],
    life: 0,
    answer: new Set(),
    holding: (n) => [...held.keys()].some((c) => c.node === n && c.life === cs.life),
    release(n) {
      cs.answer.add(n);
      for (const [c, res] of [...held]) if (c.node === n) respond(c, res);
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
  const server: Server = createServer((req, res) => {
    const c: Call = {
      life: cs.life,
      node: (req.url ?? '').slice(1),
      key: String(req.headers['idempotency-key'] ?? ''),
      delivered: false,
    };
    cs.calls.push(c);
    // The host died with the request open: nothing will read an answer.
    res.on('close', () => held.delete(c));
    if (cs.answer.has(c.node)) respond(c, res);
    else held.set(c, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  cs.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return cs;
}

// ---------------------------------------------------------------------------------------------
// A host that is killed and restarted on the same database; each process is one incarnation.

interface Life {
  startedAt: number;
  exitedAt?: number;
}

class CrashingHost {
  srv: ServerProcess | undefined;
  readonly lives: Life[] = [];

  constructor(
    private readonly dataDir: string,
    private readonly env: Record<string, string>,
    private readonly calls?: CallServer,
  ) {}

  get url(): string {
    return (this.srv as ServerProcess).url;
  }

  async start(): Promise<void> {
    if (this.calls) this.calls.life = this.lives.length;
    const startedAt = Date.now();
    this.srv = await startServer({ dataDir: this.dataDir, env: this.env });
    this.lives.push({ startedAt });
  }

  async kill(): Promise<void> {
    const exit = await (this.srv as ServerProcess).kill();
    assert.equal(exit.signal, 'SIGKILL');
    (this.lives.at(-1) as Life).exitedAt = Date.now();
  }

  /** The incarnation that committed an event (its timestamp lies within that process's life). */
  lifeOf(timestamp: string): number {
    const at = Date.parse(timestamp);
    const i = this.lives.findIndex((l) => l.startedAt <= at && at <= (l.exitedAt ?? Number.POSITIVE_INFINITY));
    assert.ok(i >= 0, `no incarnation was alive at ${timestamp}`);
    return i;
  }

  async run(runId: string): Promise<Json> {
    const res = await getJson(`${this.url}/v1/runs/${runId}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  }

  async events(runId: string): Promise<Json[]> {
    const res = await getJson(`${this.url}/v1/runs/${runId}/events/poll?lastSequence=-1&timeout=0&limit=1000`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.events;
  }

  async completed(runId: string): Promise<Set<string>> {
    return new Set((await this.events(runId)).filter((e) => e.type === 'node.completed').map((e) => e.nodeId));
  }

  /** Poll `probe` until it holds; fail at once if the server exits, with its output. */
  waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, deadlineMs = 30_000): Promise<T> {
    const srv = this.srv as ServerProcess;
    return until(
      what,
      () => {
        if (srv.child.exitCode !== null || srv.child.signalCode !== null) {
          throw new Error(`server exited while waiting for ${what}:\n${srv.logs().slice(-4000)}`);
        }
        return probe();
      },
      { deadlineMs, intervalMs: 50, detail: () => srv.logs().slice(-4000) },
    );
  }

  async finished(runId: string): Promise<Json> {
    return this.waitFor(`run ${runId} to end`, async () => {
      const r = await this.run(runId);
      return ['completed', 'failed', 'cancelled'].includes(r.status) && r;
    });
  }
}

function freshHost(dialect: 'sqlite' | 'postgres', workflows: object[], calls?: CallServer): CrashingHost {
  const wfDir = tempDir('handoff-pcrash-wf-');
  for (const wf of workflows) writeFileSync(join(wfDir, `${(wf as { id: string }).id}.json`), JSON.stringify(wf));
  const env: Record<string, string> = { HANDOFF_WORKFLOWS: wfDir, HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1' };
  // On PostgreSQL a killed process's leases expire after HANDOFF_LEASE_MS (SQLite frees them at start).
  if (dialect === 'postgres' && pgSchemas) {
    Object.assign(env, {
      HANDOFF_DATABASE_URL: pgSchemas.url,
      HANDOFF_PG_SCHEMA: pgSchemas.fresh(),
      HANDOFF_LEASE_MS: '1500',
    });
  }
  return new CrashingHost(tempDir('handoff-pcrash-data-'), env, calls);
}

async function startRun(host: CrashingHost, workflowId: string, inputs: Record<string, unknown>): Promise<string> {
  const res = await postJson(`${host.url}/v1/runs`, { workflowId, inputs });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId as string;
}

// ---------------------------------------------------------------------------------------------
// What must hold after the crashes

const ofType = (events: Json[], type: string, nodeId?: string): Json[] =>
  events.filter((e) => e.type === type && (nodeId === undefined || e.nodeId === nodeId));

/** One gap-free sequence; one run.started; one node.started and node.completed per (node, ordinal). */
function assertLogIntegrity(runId: string, events: Json[]): void {
  assert.deepEqual(
    events.map((e) => e.sequence),
    events.map((_, i) => i),
    `${runId}: sequences 0..n-1 without gap or duplicate`,
  );
  assert.equal(ofType(events, 'run.started').length, 1, 'exactly one run.started');
  for (const type of ['node.started', 'node.completed']) {
    const seen = new Map<string, number>();
    for (const e of ofType(events, type)) {
      const key = `${e.nodeId}#${e.payload.ordinal}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    assert.deepEqual(
      [...seen].filter(([, n]) => n > 1),
      [],
      `each (node, ordinal) has exactly one ${type}`,
    );
  }
}

/**
 * The calls of `nodeId` (its ordinal 0), against the incarnation that committed its completion:
 * one call by that incarnation, at most one by each incarnation before it (a call whose
 * completion was never committed, executed again), none after. Returns the lives that called.
 */
function assertCalledUntilCommitted(host: CrashingHost, calls: Call[], runId: string, events: Json[], nodeId: string) {
  const mine = calls.filter((c) => c.node === nodeId);
  for (const c of mine) assert.equal(c.key, `${runId}:${nodeId}:0`, 'the same Idempotency-Key every time');
  const done = ofType(events, 'node.completed', nodeId);
  assert.equal(done.length, 1, `${nodeId} completed once`);
  const committedIn = host.lifeOf(done[0].timestamp);
  const lives = mine.map((c) => c.life);
  assert.deepEqual(
    lives.filter((l) => l > committedIn),
    [],
    `${nodeId}: a call after its completion was committed (in life ${committedIn})`,
  );
  assert.deepEqual(
    lives,
    [...new Set(lives)].sort((x, y) => x - y),
    `${nodeId}: at most one call per incarnation, in order`,
  );
  assert.ok(lives.includes(committedIn), `${nodeId}: the committing incarnation made the call it committed`);
  return lives;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

// ---------------------------------------------------------------------------------------------

for (const dialect of DIALECTS) {
  describe(`parallel branches across SIGKILL (${dialect})`, () => {
    it('a fan-out of calls killed three times with calls in flight: each branch completes once, \
no call repeated after its completion was committed', async (t: TestContext) => {
      const calls = await startCallServer();
      try {
        const host = freshHost(dialect, [fanOut], calls);
        // Incarnation i answers the branches below answered[i] and holds the others; it is killed
        // once those answers are committed and the others' calls are held open. The last answers all.
        const answered = [1, 3, 4, FAN.length];
        await host.start();
        const runId = await startRun(host, 'fan-out', { url: calls.url });
        for (const [life, upTo] of answered.entries()) {
          for (const b of FAN.slice(0, upTo)) calls.release(b);
          if (life === answered.length - 1) break;
          const committed = FAN.slice(0, upTo);
          const inFlight = FAN.slice(upTo);
          await host.waitFor(`life ${life}: ${committed} committed, ${inFlight} in flight`, async () => {
            const done = await host.completed(runId);
            return committed.every((b) => done.has(b)) && inFlight.every((b) => calls.holding(b));
          });
          await host.kill();
          await host.start();
        }
        const run = await host.finished(runId);
        assert.equal(run.status, 'completed', JSON.stringify(run.error));
        assert.equal(run.branches, undefined, 'the run is no longer forked');
        assert.deepEqual([...run.nodeStates.all.arrived].sort(), FAN);

        const events = await host.events(runId);
        assertLogIntegrity(runId, events);
        const livesOf = FAN.map((b) => assertCalledUntilCommitted(host, calls.calls, runId, events, b));
        // Each branch was called once in every incarnation up to the one that answered it.
        assert.deepEqual(livesOf, [range(0, 1), range(0, 2), range(0, 2), range(0, 3), range(0, 4)]);
        assert.equal(ofType(events, 'node.completed', 'all').length, 1, 'the join fired once');
        assert.equal(ofType(events, 'run.completed').length, 1);
        assert.equal(events.at(-1).type, 'run.completed');
        for (const b of FAN) {
          assert.equal(ofType(events, 'node.completed', b)[0].payload.branch, `fork#0/${b}`);
        }
        t.diagnostic(`calls per branch: ${JSON.stringify(livesOf.map((l) => l.length))}`);
      } finally {
        await calls.close();
      }
    });

    it('killed with one branch arrived, then as the join is satisfied, then after it: the join fires \
once, the withdrawn branch is never called again', async (t: TestContext) => {
      const calls = await startCallServer();
      try {
        const host = freshHost(dialect, [firstTwo], calls);
        // Life 0: a answers, b and c are held; killed with a arrived at the join and b, c in flight.
        calls.release('a');
        await host.start();
        const runId = await startRun(host, 'first-two-calls', { url: calls.url });
        await host.waitFor('a arrived, b and c in flight', async () => {
          const done = await host.completed(runId);
          return done.has('a') && calls.holding('b') && calls.holding('c');
        });
        const arrivedBefore = (await host.run(runId)).branches;
        assert.equal(arrivedBefore.length, 2, JSON.stringify(arrivedBefore));
        await host.kill();

        // Life 1: b is answered, and the host killed as soon as the answer is out — while the
        // commit that satisfies the join (and withdraws c) is being made, or before it.
        await host.start();
        await host.waitFor('b and c called again', async () => calls.holding('b') && calls.holding('c'));
        calls.release('b');
        const bAnswer = calls.calls.find((c) => c.node === 'b' && c.life === 1) as Call;
        await host.waitFor('the answer to b written out', async () => bAnswer.delivered);
        await host.kill();

        // Life 2: everything held at first. Either b is called again (its completion was not
        // committed) or the join had fired and `after` is called; never both.
        calls.answer.clear();
        await host.start();
        const path = await host.waitFor('b again or after', async () =>
          calls.holding('b') ? 'b again' : calls.holding('after') ? 'after' : undefined,
        );
        t.diagnostic(`the kill at the join's commit left: ${path}`);
        if (path === 'b again') {
          assert.equal((await host.completed(runId)).has('b'), false, 'b was called again after it committed');
          calls.release('b');
          await host.waitFor('the join fired, after in flight', async () => calls.holding('after'));
        }
        assert.equal(calls.holding('b'), false);
        assert.ok((await host.completed(runId)).has('two'), 'after is called only once the join has fired');
        // Killed again with the continuation's call in flight and c withdrawn.
        await host.kill();

        // Life 3: everything answered.
        for (const n of ['a', 'b', 'c', 'after']) calls.release(n);
        await host.start();
        const run = await host.finished(runId);
        assert.equal(run.status, 'completed', JSON.stringify(run.error));
        assert.deepEqual(run.nodeStates.two.arrived, ['a', 'b']);
        assert.deepEqual(run.nodeStates.done.arrived, ['a', 'b']);

        const events = await host.events(runId);
        assertLogIntegrity(runId, events);
        for (const n of ['a', 'b']) assertCalledUntilCommitted(host, calls.calls, runId, events, n);
        // after: in flight at the third kill, called once more by the last incarnation (and perhaps
        // by the second, if the join's commit beat the kill there).
        const afterLives = assertCalledUntilCommitted(host, calls.calls, runId, events, 'after');
        assert.deepEqual(afterLives.slice(-2), [2, 3]);
        assert.equal(ofType(events, 'node.completed', 'two').length, 1, 'the join fired once');
        assert.equal(ofType(events, 'node.completed', 'c').length, 0, 'c never completed');
        const withdrawn = ofType(events, 'branch.withdrawn');
        assert.deepEqual(
          withdrawn.map((e) => [e.nodeId, e.payload.branch]),
          [['c', 'fork#0/c']],
        );
        // c was called in every incarnation until the one whose commit withdrew it, never after.
        const withdrawnIn = host.lifeOf(withdrawn[0].timestamp);
        const cLives = calls.calls.filter((c) => c.node === 'c').map((c) => c.life);
        assert.deepEqual(cLives, range(0, withdrawnIn + 1), `c called in ${cLives}, withdrawn in ${withdrawnIn}`);
      } finally {
        await calls.close();
      }
    });

    it('no crash: a join satisfied while a withdrawn sibling call is still in flight goes on at once', async () => {
      const calls = await startCallServer();
      try {
        const host = freshHost(dialect, [firstTwo], calls);
        for (const n of ['a', 'b', 'after']) calls.release(n);
        await host.start();
        const runId = await startRun(host, 'first-two-calls', { url: calls.url });
        const run = await host.finished(runId);
        assert.equal(run.status, 'completed', JSON.stringify(run.error));
        assert.deepEqual([...run.nodeStates.two.arrived].sort(), ['a', 'b']);
        assert.ok(calls.holding('c'), "c's call is still open: the run did not wait for its answer");
        const events = await host.events(runId);
        assertLogIntegrity(runId, events);
        assert.deepEqual(
          ofType(events, 'branch.withdrawn').map((e) => e.nodeId),
          ['c'],
        );
        assert.equal(ofType(events, 'node.completed', 'c').length, 0);
      } finally {
        await calls.close();
      }
    });

    it('a forked run waiting at two gates survives two kills; both stay decidable', async () => {
      const host = freshHost(dialect, []);
      await host.start();
      const runId = await startRun(host, 'two-reviewers', { prompt: 'crash' });
      const waiting = await host.waitFor('both gates open', async () => {
        const r = await host.run(runId);
        return r.status === 'waiting-approval' && r.interrupts?.length === 2 && r;
      });
      const idOf = (snap: Json) =>
        Object.fromEntries(snap.interrupts.map((i: Json) => [i.nodeId, i.interruptId])) as Record<string, string>;
      const ids = idOf(waiting);
      await host.kill();

      await host.start();
      const restarted = await host.run(runId);
      assert.equal(restarted.status, 'waiting-approval');
      assert.deepEqual(idOf(restarted), ids, 'the same two interrupts after the restart');
      assert.equal(restarted.branches.length, 2);
      const legal = await postJson(`${host.url}/v1/runs/${runId}/interrupts/legal`, {
        resumeValue: { action: 'accept' },
      });
      assert.equal(legal.status, 200, JSON.stringify(legal.body));
      assert.equal(legal.body.interrupt?.interruptId, ids.legal);
      const oneLeft = await host.waitFor('legal arrived at the join, finance still open', async () => {
        const r = await host.run(runId);
        return r.interrupts?.length === 1 && r;
      });
      assert.equal(oneLeft.status, 'waiting-approval');
      assert.equal(oneLeft.interrupts[0].interruptId, ids.finance);
      await host.kill();

      await host.start();
      const again = await host.run(runId);
      assert.equal(again.status, 'waiting-approval');
      assert.deepEqual(
        again.interrupts.map((i: Json) => i.interruptId),
        [ids.finance],
      );
      const late = await postJson(`${host.url}/v1/runs/${runId}/interrupts/legal`, {
        resumeValue: { action: 'accept' },
      });
      assert.ok([404, 409].includes(late.status), `deciding legal twice: ${late.status} ${JSON.stringify(late.body)}`);
      const finance = await postJson(`${host.url}/v1/runs/${runId}/interrupts/finance`, {
        resumeValue: { action: 'accept' },
      });
      assert.equal(finance.status, 200, JSON.stringify(finance.body));
      const done = await host.finished(runId);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      assert.deepEqual(done.nodeStates.publish.order, ['legal', 'finance']);
      assert.deepEqual(done.nodeStates.publish.approvedBy, { legal: 'local', finance: 'local' });

      const events = await host.events(runId);
      assertLogIntegrity(runId, events);
      for (const gate of ['legal', 'finance']) {
        assert.equal(ofType(events, 'interrupt.requested', gate).length, 1, `${gate} opened once`);
        assert.equal(ofType(events, 'interrupt.resolved', gate).length, 1, `${gate} resolved once`);
      }
      assert.equal(ofType(events, 'node.completed', 'both').length, 1);
      assert.equal(ofType(events, 'run.completed').length, 1);
    });
  });
}
