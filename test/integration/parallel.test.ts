// Parallel work in one run: core.parallel forks it into branches, core.join (all / any / count)
// merges them; several interrupts are open at once and a reply names its node; a join satisfied
// without a branch withdraws it. Real hosts on SQLite, and PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateWorkflow, WorkflowValidationError } from '../../src/engine/workflow/loader.js';
import { dataMessage, rpc } from '../support/a2a.js';
import { node, workflowOf } from '../support/call-workflows.js';
import { openA2AStream, openSse, results } from '../support/sse-client.js';
import { DIALECTS, type Json, type TestHost, startTestHost } from '../support/host.js';
import { until } from '../support/until.js';

const TERMINAL = ['completed', 'failed', 'cancelled'];

const gate = (id: string) => node(id, 'core.approvalGate', { title: `${id} decides`, actions: ['accept', 'reject'] });
const say = (id: string, text: string, extra: Record<string, unknown> = {}) =>
  node(id, 'core.transform', { output: { text } }, extra);

/** Three gates in parallel; the first `count` decisions satisfy the join, the rest are withdrawn. */
const firstTwo = workflowOf(
  'first-two',
  [
    node('fork', 'core.parallel', {}),
    gate('a'),
    gate('b'),
    gate('c'),
    node('two', 'core.join', { mode: 'count', count: 2 }),
    say('done', '{{ $join(nodes.two.arrived, ",") }}', { outputRole: 'artifact' }),
  ],
  [
    ['fork', 'a'],
    ['fork', 'b'],
    ['fork', 'c'],
    ['a', 'two'],
    ['b', 'two'],
    ['c', 'two'],
    ['two', 'done'],
  ],
);

/** Two http.request branches against one server: both must be in flight at once to finish. */
const bothCalls = workflowOf(
  'both-calls',
  [
    node('fork', 'core.parallel', {}),
    node('left', 'http.request', { method: 'GET', url: '{{ inputs.url }}/left', retry: { attempts: 1 } }),
    node('right', 'http.request', { method: 'GET', url: '{{ inputs.url }}/right', retry: { attempts: 1 } }),
    node('all', 'core.join', { mode: 'all' }),
    say('done', 'ok', { outputRole: 'artifact' }),
  ],
  [
    ['fork', 'left'],
    ['fork', 'right'],
    ['left', 'all'],
    ['right', 'all'],
    ['all', 'done'],
  ],
);

/** Transforms only: a fork with a condition, a nested fork, and a branch that fails. */
const nested = workflowOf(
  'nested',
  [
    node('outer', 'core.parallel', {}),
    say('x', 'x'),
    node('inner', 'core.parallel', {}),
    say('y1', 'y1'),
    say('y2', 'y2'),
    say('skipped', 'never'),
    node('innerJoin', 'core.join', { mode: 'all' }),
    node('outerJoin', 'core.join', { mode: 'all' }),
    say('done', '{{ $join(nodes.outerJoin.arrived, ",") }}|{{ $join(nodes.innerJoin.arrived, ",") }}', {
      outputRole: 'artifact',
    }),
  ],
  [
    ['outer', 'x'],
    ['outer', 'inner'],
    ['outer', 'skipped', 'false'],
    ['inner', 'y1'],
    ['inner', 'y2'],
    ['y1', 'innerJoin'],
    ['y2', 'innerJoin'],
    ['x', 'outerJoin'],
    ['innerJoin', 'outerJoin'],
    ['skipped', 'outerJoin'],
    ['outerJoin', 'done'],
  ],
);

/** A gate beside a forEach of echo children, joined (all): the children finish while the gate waits. */
const gateAndChildren = workflowOf(
  'gate-and-children',
  [
    node('fork', 'core.parallel', {}),
    gate('sign'),
    node('each', 'core.forEach', {
      items: '{{ [1, 2, 3] }}',
      workflowId: 'echo',
      inputs: { prompt: 'item {{ item }}' },
      concurrency: 2,
    }),
    node('all', 'core.join', { mode: 'all' }),
    say('done', '{{ $count(nodes.each.results) }}', { outputRole: 'artifact' }),
  ],
  [
    ['fork', 'sign'],
    ['fork', 'each'],
    ['sign', 'all'],
    ['each', 'all'],
    ['all', 'done'],
  ],
);

/** A gate racing a child run waiting at its own gate (join any): deciding the first withdraws the child. */
const gateOrChild = workflowOf(
  'gate-or-child',
  [
    node('fork', 'core.parallel', {}),
    gate('quick'),
    node('sub', 'core.subWorkflow', { workflowId: 'approval', inputs: { prompt: 'slow' } }),
    node('first', 'core.join', { mode: 'any' }),
  ],
  [
    ['fork', 'quick'],
    ['fork', 'sub'],
    ['quick', 'first'],
    ['sub', 'first'],
  ],
);

const failing = workflowOf(
  'branch-fails',
  [
    node('fork', 'core.parallel', {}),
    gate('wait'),
    node('boom', 'core.fail', { code: 'boom', message: 'a branch failed' }),
    node('all', 'core.join', { mode: 'all' }),
  ],
  [
    ['fork', 'wait'],
    ['fork', 'boom'],
    ['wait', 'all'],
    ['boom', 'all'],
  ],
);

interface Barrier {
  server: Server;
  url: string;
  maxInFlight: () => number;
  inFlight: () => number;
  /** Answer every request held now. */
  release: () => void;
}

/** A server that answers each request only once `n` are in flight together (or 503 after 20 s). */
function barrierServer(n: number): Promise<Barrier> {
  let waiting: Array<ServerResponse> = [];
  let max = 0;
  const release = () => {
    for (const r of waiting) r.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    waiting = [];
  };
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    waiting.push(res);
    max = Math.max(max, waiting.length);
    if (waiting.length >= n) {
      release();
      return;
    }
    setTimeout(() => {
      if (!res.writableEnded) res.writeHead(503).end();
    }, 20_000).unref();
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        server,
        url: `http://127.0.0.1:${port}`,
        maxInFlight: () => max,
        inFlight: () => waiting.length,
        release,
      });
    }),
  );
}

for (const dialect of DIALECTS) {
  describe(`parallel branches (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    let barrier: Barrier;
    /** Holds every request until released. */
    let hold: Barrier;
    /** A host allowing two live branches per run (HANDOFF_MAX_BRANCHES). */
    let limited: TestHost | undefined;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-parallel-'));
      for (const wf of [firstTwo, bothCalls, nested, failing, gateAndChildren, gateOrChild]) {
        writeFileSync(join(dir, `${wf.id}.json`), JSON.stringify(wf));
      }
      barrier = await barrierServer(2);
      hold = await barrierServer(1_000);
      t = await startTestHost({
        pg: dialect === 'postgres',
        workflows: [dir],
        env: { HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1' },
      });
    });
    after(async () => {
      await t?.close();
      await limited?.close();
      barrier?.server.close();
      hold?.release();
      hold?.server.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    let url: string | undefined;
    /** The host on a real port: streams need real HTTP. */
    const listening = async (): Promise<string> => {
      if (!url) {
        await t.app.listen({ host: '127.0.0.1', port: 0 });
        url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
      }
      return url;
    };
    const decide = (runId: string, nodeId: string, action = 'accept') =>
      t.post(`/v1/runs/${runId}/interrupts/${nodeId}`, { resumeValue: { action } });
    const snapshot = async (runId: string): Promise<Json> => (await t.get(`/v1/runs/${runId}`)).body;

    /** The log is one gap-free sequence; every event of a branch's node names its branch. */
    async function checkLog(runId: string): Promise<Json[]> {
      const events = await t.events(runId);
      assert.deepEqual(
        events.map((e) => e.sequence),
        events.map((_, i) => i),
      );
      return events;
    }

    it('two-reviewers: both gates open at once; each decision names its node; both accepted → published', async () => {
      const runId = await t.createRun('two-reviewers', { prompt: 'launch' });
      let snap = await t.waitForStatus(runId, ['waiting-approval']);
      assert.deepEqual(snap.interrupts.map((i: Json) => i.nodeId).sort(), ['finance', 'legal']);
      assert.equal(snap.interrupt.nodeId, snap.interrupts[0].nodeId, 'interrupt is the oldest open one');
      assert.equal(snap.branches.length, 2);

      const finance = await decide(runId, 'finance');
      assert.equal(finance.status, 200, finance.text);
      snap = await snapshot(runId);
      assert.equal(snap.status, 'waiting-approval');
      assert.deepEqual(
        snap.interrupts.map((i: Json) => i.nodeId),
        ['legal'],
      );

      const legal = await decide(runId, 'legal');
      assert.equal(legal.status, 200, legal.text);
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'completed');
      assert.equal(done.branches, undefined, 'the run is no longer forked');
      assert.deepEqual(done.nodeStates.publish.order, ['finance', 'legal']);
      assert.deepEqual(done.nodeStates.publish.approvedBy, { legal: 'local', finance: 'local' });
      assert.deepEqual(done.nodeStates.both, {
        arrived: ['finance', 'legal'],
        outputs: { finance: done.nodeStates.finance, legal: done.nodeStates.legal },
      });

      const events = await checkLog(runId);
      const branchOf = (type: string, nodeId: string) =>
        events.find((e) => e.type === type && e.nodeId === nodeId)?.payload.branch;
      assert.equal(branchOf('approval.requested', 'legal'), 'fork#0/legal');
      assert.equal(branchOf('node.completed', 'finance'), 'fork#0/finance');
      assert.equal(branchOf('node.completed', 'draft'), undefined, 'events before the fork name no branch');
      assert.equal(events.filter((e) => e.type === 'node.completed' && e.nodeId === 'both').length, 1);
    });

    it('A2A: the task lists every open interrupt; a reply naming no node is -32602 and changes nothing', async () => {
      const runId = await t.createRun('two-reviewers', { prompt: 'a2a' });
      await t.waitForStatus(runId, ['waiting-approval']);
      const got = await rpc(t, 'tasks/get', { id: runId });
      const meta = got.body.result.metadata.openwop;
      assert.equal(got.body.result.status.state, 'input-required');
      assert.deepEqual(meta.interrupts.map((i: Json) => [i.nodeId, i.kind, i.title]).sort(), [
        ['finance', 'approval', 'Finance: review the draft'],
        ['legal', 'approval', 'Legal: review the draft'],
      ]);
      const before = { events: (await t.events(runId)).length, snap: await snapshot(runId) };

      const unnamed = await rpc(t, 'message/send', { message: dataMessage({ action: 'accept' }, { taskId: runId }) });
      assert.equal(unnamed.body.error?.code, -32602, unnamed.text);
      assert.match(unnamed.body.error.message, /several nodes \((legal, finance|finance, legal)\)/);
      // A2A 1.0 over HTTP+JSON: the same refusal, as 400 INVALID_ARGUMENT.
      const rest = await t.request(
        'POST',
        '/v1/a2a/rest/message:send',
        {
          message: {
            messageId: `rest-${runId}`,
            taskId: runId,
            role: 'ROLE_USER',
            parts: [{ data: { action: 'accept' } }],
          },
        },
        { 'a2a-version': '1.0' },
      );
      assert.equal(rest.status, 400, rest.text);
      assert.equal(rest.body.error.status, 'INVALID_ARGUMENT');
      assert.match(rest.body.error.message, /several nodes/);
      const wrong = await rpc(t, 'message/send', {
        message: dataMessage({ action: 'accept', nodeId: 'draft' }, { taskId: runId }),
      });
      assert.equal(wrong.body.error?.code, -32602, wrong.text);
      assert.equal((await t.events(runId)).length, before.events, 'refused replies append nothing');
      assert.deepEqual(await snapshot(runId), before.snap);

      const named = await rpc(t, 'message/send', {
        message: dataMessage({ action: 'accept', nodeId: 'legal' }, { taskId: runId }),
      });
      assert.equal(named.body.error, undefined, named.text);
      assert.deepEqual(
        named.body.result.metadata.openwop.interrupts.map((i: Json) => i.nodeId),
        ['finance'],
      );
      const byMeta = await rpc(t, 'message/send', {
        message: dataMessage({ action: 'accept' }, { taskId: runId, metadata: { openwop: { nodeId: 'finance' } } }),
      });
      assert.equal(byMeta.body.error, undefined, byMeta.text);
      assert.equal((await t.waitForStatus(runId, TERMINAL)).status, 'completed');
    });

    it('count 2 of 3: the third branch is withdrawn, its interrupt closed (deciding it is 409)', async () => {
      const runId = await t.createRun('first-two', {});
      const snap = await t.waitForStatus(runId, ['waiting-approval']);
      assert.equal(snap.interrupts.length, 3);
      assert.equal((await decide(runId, 'c')).status, 200);
      assert.equal((await decide(runId, 'a')).status, 200);
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'completed');
      assert.equal(done.nodeStates.done.text, 'c,a');
      const late = await decide(runId, 'b');
      assert.equal(late.status, 409, late.text);
      assert.equal(late.body.error, 'interrupt_withdrawn');
      const events = await checkLog(runId);
      const withdrawn = events.filter((e) => e.type === 'branch.withdrawn');
      assert.deepEqual(
        withdrawn.map((e) => [e.nodeId, e.payload.branch]),
        [['b', 'fork#0/b']],
      );
    });

    it('I/O nodes of sibling branches are in flight at the same time', async () => {
      const runId = await t.createRun('both-calls', { url: barrier.url });
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      assert.equal(barrier.maxInFlight(), 2);
      assert.equal(done.nodeStates.left.status, 200);
      assert.equal(done.nodeStates.right.status, 200);
      await checkLog(runId);
    });

    it('nested forks join inside out; a branch whose edge does not hold is not started', async () => {
      const runId = await t.createRun('nested', {});
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      const [outer, inner] = String(done.nodeStates.done.text).split('|');
      assert.deepEqual(outer?.split(',').sort(), ['innerJoin', 'x']);
      assert.deepEqual(inner?.split(',').sort(), ['y1', 'y2']);
      assert.equal(done.nodeStates.skipped, undefined);
      await checkLog(runId);
    });

    it('a failing branch fails the run and withdraws its siblings (their gates close)', async () => {
      const runId = await t.createRun('branch-fails', {});
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'boom');
      const late = await decide(runId, 'wait');
      assert.ok([404, 409].includes(late.status), late.text);
      const events = await checkLog(runId);
      assert.equal(events.at(-1).type, 'run.failed');
    });

    it('streams resume across branches: REST and A2A from a Last-Event-ID see every later event once', async () => {
      const url = await listening();
      const runId = await t.createRun('two-reviewers', { prompt: 'stream' });
      await t.waitForStatus(runId, ['waiting-approval']);
      const cursor = (await t.events(runId)).length - 1;
      assert.equal((await decide(runId, 'legal')).status, 200);
      const rest = await openSse(`${url}/v1/runs/${runId}/events`, { lastEventId: cursor });
      const a2a = await openA2AStream(url, 'tasks/resubscribe', { id: runId }, { lastEventId: cursor });
      await rest.waitFor((e) => e.event === 'node.completed', 'legal completed');
      assert.equal((await decide(runId, 'finance')).status, 200);
      await rest.waitFor((e) => e.event === 'run.completed', 'the run completed');
      await a2a.waitForEnd();
      const ids = rest.events.filter((e) => e.id !== undefined).map((e) => Number(e.id));
      const all = await t.events(runId);
      assert.deepEqual(
        ids,
        all.slice(cursor + 1).map((e) => e.sequence),
      );
      const states = results(a2a).map((r) => r?.status?.state);
      assert.equal(states.at(-1), 'completed');
      assert.equal(results(a2a).at(-1).final, true);
      rest.abort();
    });

    it('a fork past HANDOFF_MAX_BRANCHES fails the run too_many_branches, opening nothing', async () => {
      limited = await startTestHost({
        pg: dialect === 'postgres',
        workflows: [dir],
        env: { HANDOFF_MAX_BRANCHES: '2' },
      });
      const runId = await limited.createRun('first-two', {});
      const done = await limited.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'too_many_branches');
      assert.match(done.error.message, /3 branches .* allows 2 \(HANDOFF_MAX_BRANCHES\)/);
      assert.equal(done.interrupts, undefined);
      const events = await limited.events(runId);
      assert.equal(events.filter((e: Json) => e.type === 'approval.requested').length, 0);
      // Within the limit the same workflow runs: two-reviewers forks into two.
      const ok = await limited.createRun('two-reviewers', {});
      assert.equal((await limited.waitForStatus(ok, ['waiting-approval'])).interrupts.length, 2);
    });

    it('a cancel while sibling calls are in flight wins: their results are dropped', async () => {
      const runId = await t.createRun('both-calls', { url: hold.url });
      await until('both calls in flight', async () => hold.inFlight() === 2 || undefined);
      const res = await t.post(`/v1/runs/${runId}/cancel`, {});
      assert.equal(res.status, 200, res.text);
      hold.release();
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'cancelled');
      assert.equal(done.nodeStates.left, undefined);
      assert.equal(done.nodeStates.right, undefined);
      const events = await checkLog(runId);
      assert.equal(events.filter((e) => e.type === 'node.completed' && ['left', 'right'].includes(e.nodeId)).length, 0);
      assert.equal(events.at(-1).type, 'run.cancelled');
    });

    it('a forEach branch finishes its children while a sibling gate waits; the gate completes the run', async () => {
      const runId = await t.createRun('gate-and-children', {});
      const waiting = await until('the forEach finished beside the open gate', async () => {
        const snap = await snapshot(runId);
        return snap.nodeStates.each && snap.status === 'waiting-approval' ? snap : undefined;
      });
      assert.deepEqual(
        waiting.nodeStates.each.results.map((r: Json) => [r.status, r.output]),
        [1, 2, 3].map((i) => ['completed', { echo: `item ${i}` }]),
      );
      assert.equal((await decide(runId, 'sign')).status, 200);
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'completed');
      assert.equal(done.nodeStates.done.text, 3);
      await checkLog(runId);
    });

    it('a withdrawn branch cancels the child run it started', async () => {
      const runId = await t.createRun('gate-or-child', {});
      const child = await until('the child waits at its gate', async () => {
        const snap = await snapshot(runId);
        const c = snap.children?.find((x: Json) => x.nodeId === 'sub');
        return c && (await snapshot(c.runId)).status === 'waiting-approval' ? c.runId : undefined;
      });
      assert.equal((await decide(runId, 'quick')).status, 200);
      assert.equal((await t.waitForStatus(runId, TERMINAL)).status, 'completed');
      const ended = await t.waitForStatus(child, TERMINAL);
      assert.equal(ended.status, 'cancelled');
      assert.equal(ended.parentRunId, runId);
    });

    it('cancelling a forked run closes every open interrupt', async () => {
      const runId = await t.createRun('two-reviewers', { prompt: 'cancel' });
      await t.waitForStatus(runId, ['waiting-approval']);
      const res = await t.post(`/v1/runs/${runId}/cancel`, {});
      assert.equal(res.status, 200, res.text);
      const done = await t.waitForStatus(runId, TERMINAL);
      assert.equal(done.status, 'cancelled');
      const events = await checkLog(runId);
      assert.deepEqual(
        events
          .filter((e) => e.type === 'node.cancelled')
          .map((e) => e.nodeId)
          .sort(),
        ['finance', 'legal'],
      );
      assert.equal((await decide(runId, 'legal')).status, 422);
    });
  });
}

describe('the loader refuses parallel graphs it could not run', () => {
  const problems = (wf: object): string[] => {
    try {
      validateWorkflow(wf, 'wf.json');
      return [];
    } catch (err) {
      assert.ok(err instanceof WorkflowValidationError);
      return err.problems;
    }
  };

  it('accepts the demos above', () => {
    for (const wf of [firstTwo, bothCalls, nested, failing]) assert.deepEqual(problems(wf), [], wf.id);
  });

  it('a join no core.parallel feeds', () => {
    const wf = workflowOf('w', [say('a', 'a'), node('j', 'core.join', { mode: 'all' })], [['a', 'j']]);
    assert.deepEqual(problems(wf), ['node "j": no core.parallel leads into this join']);
  });

  it('a branch that can reach neither the join nor an end', () => {
    const wf = workflowOf(
      'w',
      [
        node('p', 'core.parallel', {}),
        say('a', 'a'),
        say('b', 'b'),
        say('c', 'c'),
        node('j', 'core.join', { mode: 'all' }),
      ],
      [
        ['p', 'a'],
        ['p', 'b'],
        ['a', 'j'],
        ['b', 'c'],
        ['c', 'b'],
      ],
    );
    assert.deepEqual(problems(wf), ['node "p": the branch from "b" can reach neither a join nor an end']);
  });

  it('branches leading into different joins, two branches sharing a node, count without count', () => {
    const wf = workflowOf(
      'w',
      [
        node('p', 'core.parallel', {}),
        say('a', 'a'),
        say('b', 'b'),
        say('shared', 's'),
        node('j1', 'core.join', { mode: 'all' }),
        node('j2', 'core.join', { mode: 'count' }),
      ],
      [
        ['p', 'a'],
        ['p', 'b'],
        ['a', 'shared'],
        ['b', 'shared'],
        ['shared', 'j1'],
        ['a', 'j2'],
      ],
    );
    const found = problems(wf);
    assert.ok(found.includes('node "j2": config.mode "count" needs config.count'), found.join('\n'));
  });

  it('two branches reaching the same node before their join', () => {
    const wf = workflowOf(
      'w',
      [
        node('p', 'core.parallel', {}),
        say('a', 'a'),
        say('b', 'b'),
        say('shared', 's'),
        node('j', 'core.join', { mode: 'all' }),
      ],
      [
        ['p', 'a'],
        ['p', 'b'],
        ['a', 'shared'],
        ['b', 'shared'],
        ['shared', 'j'],
      ],
    );
    assert.deepEqual(problems(wf), ['node "shared": reached by two branches of "p" (from "a" and "b")']);
  });
});
