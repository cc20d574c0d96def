// Child runs (core.subWorkflow, core.forEach) in a real host: the child's artifact comes back,
// results in item order, at most `concurrency` children unfinished (from the stored runs and the
// parent's log), failures, gates decided over REST and over A2A, cancel cascading to children and
// grandchildren, the depth and item limits, tenants, and an execution repeated after a crash that
// starts no second child. The poll floor is an hour: every parent here is woken by its children.
// Runs on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { ChildRuns } from '../../src/engine/children.js';
import { ConflictError } from '../../src/store/errors.js';
import { forEach } from '../../src/engine/nodes/child-runs/index.js';
import type { NodeContext, NodeResult } from '../../src/engine/nodes/types.js';
import { a2aClient, API_KEYS, dataPart, KEY_ALICE, KEY_EVE, message, rpc } from '../support/a2a.js';
import { writeChildWorkflows } from '../support/child-workflows.js';
import { bearer, DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';
import { newRun } from '../support/runs.js';
import { until } from '../support/until.js';

const ALICE = bearer(KEY_ALICE);
const EVE = bearer(KEY_EVE);
const ENV = { HANDOFF_CHILD_POLL_MS: '3600000', HANDOFF_MAX_CHILD_DEPTH: '2' };

interface StoredChild {
  run_id: string;
  parent_node_id: string;
  status: string;
  created_at: string;
  completed_at: string | null;
}

for (const dialect of DIALECTS) {
  describe(`child runs (${dialect})`, () => {
    let dir: string;
    let t: TestHost;

    before(async () => {
      dir = writeChildWorkflows();
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, workflows: [dir], env: ENV });
    });
    after(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const start = (workflowId: string, inputs: Record<string, unknown> = {}) => t.createRun(workflowId, inputs, ALICE);
    const settle = (runId: string) => t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], ALICE);
    const snapshot = async (runId: string, headers = ALICE): Promise<Json> =>
      (await t.get(`/v1/runs/${runId}`, headers)).body;
    const events = (runId: string) => t.events(runId, ALICE);

    /** Every stored child of `parentRunId`, oldest first (the table itself, not the API). */
    const storedChildren = async (parentRunId: string): Promise<StoredChild[]> =>
      (await t.host.store.db
        .selectFrom('runs')
        .select(['run_id', 'parent_node_id', 'status', 'created_at', 'completed_at'])
        .where('parent_run_id', '=', parentRunId)
        .orderBy('created_at')
        .orderBy('run_id')
        .execute()) as StoredChild[];

    /** The indexes of the child.started (or child.ended) events of the parent's log, in order. */
    const childEvents = (log: Json[], type: string) => log.filter((e) => e.type === type).map((e) => e.payload);

    /** Replay the parent's log: how many children it counted unfinished at most. */
    function mostUnfinished(log: Json[]): number {
      let open = 0;
      let most = 0;
      for (const e of log) {
        if (e.type === 'child.started') open++;
        if (e.type === 'child.ended') open--;
        most = Math.max(most, open);
      }
      return most;
    }

    /**
     * From the stored runs alone: when each child was created, how many others had been created
     * and had not completed yet. The parent starts a child only after reading an earlier one's end
     * (committed, stamped before the read), so this never undercounts.
     */
    function mostUnfinishedStored(children: StoredChild[]): number {
      return Math.max(
        ...children.map(
          (k) =>
            children.filter(
              (j) => j.created_at <= k.created_at && (j.completed_at === null || j.completed_at > k.created_at),
            ).length,
        ),
      );
    }

    it('core.subWorkflow: one child run, named by its parent, whose artifact comes back', async () => {
      const runId = await start('sub-echo', { value: 'hi' });
      const done = await settle(runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      const sub = done.nodeStates.sub;
      assert.equal(sub.status, 'completed');
      assert.deepEqual(sub.output, { value: 'hi', index: 0 });
      assert.deepEqual(done.nodeStates.done, { child: sub.runId, status: 'completed', got: { value: 'hi', index: 0 } });
      assert.equal(done.children, undefined, 'an ended run lists no children');

      const child = await snapshot(sub.runId);
      assert.equal(child.parentRunId, runId);
      assert.equal(child.parentNodeId, 'sub');
      assert.equal(child.workflowId, 'kid-echo');
      assert.deepEqual(child.owner, { tenant: 't1', principal: 'alice' });
      assert.deepEqual(
        (await storedChildren(runId)).map((c) => c.run_id),
        [sub.runId],
      );
      // The child is an A2A task of its own.
      const task = await a2aClient(t, ALICE).getTask(sub.runId);
      assert.equal(task.status.state, 'completed');
      const log = await events(runId);
      assert.deepEqual(childEvents(log, 'child.started'), [{ index: 0, runId: sub.runId, workflowId: 'kid-echo' }]);
      assert.deepEqual(childEvents(log, 'child.ended'), [{ index: 0, runId: sub.runId, status: 'completed' }]);
    });

    it('core.forEach: one child per item, the results in item order', async () => {
      const items = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
      const runId = await start('each-echo', { items });
      const done = await settle(runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      const results = done.nodeStates.each.results as Json[];
      assert.deepEqual(
        results.map((r) => r.output),
        items.map((value, index) => ({ value, index })),
      );
      assert.ok(results.every((r) => r.status === 'completed'));
      const stored = await storedChildren(runId);
      assert.equal(stored.length, items.length, 'one child run per item');
      assert.deepEqual(new Set(stored.map((c) => c.run_id)), new Set(results.map((r) => r.runId)));
      assert.ok(stored.every((c) => c.parent_node_id === 'each'));
      const started = childEvents(await events(runId), 'child.started');
      assert.deepEqual(
        started.map((p) => p.index),
        items.map((_, i) => i),
      );
      assert.ok(mostUnfinished(await events(runId)) <= 3);
    });

    it('core.forEach over no items completes at once with no results', async () => {
      const done = await settle(await start('each-echo', { items: [] }));
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.nodeStates.each, { results: [] });
    });

    it('core.forEach with gates: never more than `concurrency` unfinished; each gate decided over REST \
or A2A, and the parent goes on', async () => {
      const prompts = ['p0', 'p1', 'p2', 'p3', 'p4'];
      const runId = await start('each-approval', { items: prompts });
      const alice = a2aClient(t, ALICE);
      const decided: string[] = [];
      for (let round = 0; decided.length < prompts.length; round++) {
        const left = prompts.length - decided.length;
        const waiting = await until(
          `round ${round}: the parent lists ${Math.min(2, left)} waiting children`,
          async () => {
            const snap = await snapshot(runId);
            assert.ok((snap.children ?? []).length <= 2, `more than 2 unfinished: ${JSON.stringify(snap.children)}`);
            const kids = (snap.children ?? []) as Json[];
            return kids.length === Math.min(2, left) && kids.every((c) => c.status === 'waiting-approval') && kids;
          },
        );
        for (const c of waiting) assert.equal(c.nodeId, 'each');
        // The newest first: the children end out of item order.
        const child = waiting.at(-1).runId as string;
        if (round % 2 === 0) {
          const res = await t.post(`/v1/runs/${child}/interrupts/review`, { resumeValue: { action: 'accept' } }, ALICE);
          assert.equal(res.status, 200, res.text);
        } else {
          const task = await alice.getTask(child);
          assert.equal(task.status.state, 'input-required');
          const answered = await alice.sendOk(
            message([dataPart({ action: 'accept' })], { taskId: child, contextId: task.contextId }),
          );
          assert.equal(answered.status.state, 'completed');
        }
        decided.push(child);
      }
      const done = await settle(runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.deepEqual(
        (done.nodeStates.each.results as Json[]).map((r) => r.output),
        prompts.map((p) => ({ text: `Draft: ${p}`, approvedBy: 'alice' })),
      );
      const stored = await storedChildren(runId);
      assert.equal(stored.length, prompts.length);
      assert.equal(mostUnfinishedStored(stored), 2, 'the stored runs: at most 2 unfinished, and 2 at times');
      assert.equal(mostUnfinished(await events(runId)), 2, "the parent's log: at most 2 unfinished");
    });

    it('a failed child fails core.forEach `child_failed`; its unfinished siblings are cancelled', async () => {
      // concurrency 2: item 0 waits at its gate when item 1 fails; item 2 never starts.
      const runId = await start('each-fail', { items: [false, true, false] });
      const done = await settle(runId);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'child_failed');
      assert.equal(done.error.details.index, 1);
      assert.equal(done.error.details.status, 'failed');
      assert.equal(done.error.details.error.code, 'kid_broke');
      assert.match(done.error.message, /\(item 1\) ended failed: kid_broke: asked to fail/);
      const stored = await storedChildren(runId);
      assert.equal(stored.length, 2);
      const waiting = stored.find((c) => c.run_id !== done.error.details.runId) as StoredChild;
      const sibling = await settle(waiting.run_id);
      assert.equal(sibling.status, 'cancelled');
      const why = (await events(waiting.run_id)).find((e: Json) => e.type === 'run.cancelled');
      assert.equal(why.payload.reason, 'parent-cancelled');
      assert.equal(why.payload.parentRunId, runId);
      assert.equal(why.payload.parentStatus, 'failed');
    });

    it('continueOnError: every child runs, the failures are in the results', async () => {
      const runId = await start('each-fail-continue', { items: [true, false, true] });
      const done = await settle(runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      const results = done.nodeStates.each.results as Json[];
      assert.deepEqual(
        results.map((r) => [r.status, r.output, r.error?.code ?? null]),
        [
          ['failed', null, 'kid_broke'],
          ['completed', { ok: true }, null],
          ['failed', null, 'kid_broke'],
        ],
      );
    });

    it('cancelling a parent cancels its children and theirs', async () => {
      const runId = await start('each-nested', { items: ['x', 'y', 'z'] });
      // Two children, each waiting on a grandchild at its gate.
      const grandchildren = await until('two grandchildren at their gates', async () => {
        const kids = (await snapshot(runId)).children as Json[] | undefined;
        if (kids?.length !== 2) return false;
        const grand = await Promise.all(kids.map(async (k) => ((await snapshot(k.runId)).children ?? []) as Json[]));
        const flat = grand.flat();
        return flat.length === 2 && flat.every((g) => g.status === 'waiting-approval') && flat;
      });
      const children = (await snapshot(runId)).children as Json[];
      const res = await t.post(`/v1/runs/${runId}/cancel`, { reason: 'enough' }, ALICE);
      assert.equal(res.status, 200, res.text);
      assert.equal((await settle(runId)).status, 'cancelled');
      for (const r of [...children, ...grandchildren]) {
        const snap = await settle(r.runId);
        assert.equal(snap.status, 'cancelled', `${r.runId}: ${JSON.stringify(snap)}`);
        const cancelled = (await events(r.runId)).find((e: Json) => e.type === 'run.cancelled');
        assert.equal(cancelled.payload.reason, 'parent-cancelled');
        assert.match(cancelled.payload.parentRunId, /^run_/);
        assert.equal(cancelled.payload.parentStatus, 'cancelled');
      }
      // A grandchild's gate is closed: deciding it now is refused.
      const late = await t.post(
        `/v1/runs/${grandchildren[0].runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        ALICE,
      );
      assert.equal(late.status, 410, late.text);
      assert.equal(late.body.error, 'interrupt_gone');
      assert.equal((await a2aClient(t, ALICE).getTask(grandchildren[0].runId)).status.state, 'canceled');
    });

    it('a child deeper than HANDOFF_MAX_CHILD_DEPTH is refused with a clear error', async () => {
      const runId = await start('deep-1');
      const done = await settle(runId);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'child_failed');
      // deep-1 (0) → deep-2 (1) → deep-3 (2): its child would stand 3 levels down, past 2.
      const deep2 = done.error.details.runId as string;
      const deep3 = (await snapshot(deep2)).error.details.runId as string;
      const refused = await snapshot(deep3);
      assert.equal(refused.workflowId, 'deep-3');
      assert.equal(refused.error.code, 'child_depth_exceeded');
      assert.match(refused.error.message, /would stand 3 levels below its top run; HANDOFF_MAX_CHILD_DEPTH is 2/);
      assert.deepEqual(await storedChildren(deep3), []);
    });

    it('core.forEach refuses more than 1,000 items, starting none', async () => {
      const runId = await start('each-echo', { items: Array.from({ length: 1001 }, (_, i) => String(i)) });
      const done = await settle(runId);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'too_many_items');
      assert.match(done.error.message, /gave 1001 items; core\.forEach takes at most 1000/);
      assert.deepEqual(await storedChildren(runId), []);
    });

    it("another tenant sees none of a run's children, nor can it decide their gates", async () => {
      const runId = await start('each-approval', { items: ['secret'] });
      const child = await until('the child at its gate', async () => {
        const kids = (await snapshot(runId)).children as Json[] | undefined;
        return kids?.[0]?.status === 'waiting-approval' && (kids[0].runId as string);
      });
      assert.equal((await t.get(`/v1/runs/${child}`, EVE)).status, 404);
      assert.equal((await t.get(`/v1/runs/${runId}`, EVE)).status, 404);
      const decide = await t.post(`/v1/runs/${child}/interrupts/review`, { resumeValue: { action: 'accept' } }, EVE);
      assert.equal(decide.status, 404);
      const listed = (await t.get('/v1/runs?limit=100', EVE)).body.runs as Json[];
      assert.ok(!listed.some((r) => r.runId === child || r.parentRunId === runId));
      const got = await rpc(t, 'tasks/get', { id: child }, { headers: EVE });
      assert.equal(got.body.error?.code, -32001, got.text);
      assert.equal((await snapshot(child)).status, 'waiting-approval', 'untouched');
      // The engine starts a child only as its parent's tenant: an id that is another run's is refused.
      const eveRun = await t.createRun('approval', { prompt: 'mine' }, EVE);
      await assert.rejects(
        t.host.engine.startChildren(runId, 'each', [{ runId: eveRun, workflowId: 'kid-echo', inputs: {} }]),
        { code: 'conflict' },
      );
      assert.equal((await t.get(`/v1/runs/${eveRun}`, EVE)).body.parentRunId, undefined);
      await t.post(`/v1/runs/${runId}/cancel`, {}, ALICE);
    });

    it('a child started while its parent is being cancelled is cancelled with it', {
      skip: dialect === 'sqlite' && 'SQLite runs one transaction at a time',
    }, async () => {
      const store = t.host.store;
      const owner = { tenantId: 't1', principalId: 'alice' };
      const later = Date.now() + 3_600_000;
      const at = (nodeId: string) => ({ nodeId, ordinals: {} });
      const top = newRun({ ...owner, workflowId: 'each-nested', status: 'running', wakeAt: later, cursor: at('each') });
      const kid = newRun({ ...owner, workflowId: 'sub-approval', status: 'running', wakeAt: later, cursor: at('sub') });
      Object.assign(kid, { parentRunId: top.runId, parentNodeId: 'each' });
      const grandchild = newRun({ ...owner, workflowId: 'approval', inputs: { prompt: '' }, cursor: at('draft') });
      Object.assign(grandchild, { parentRunId: kid.runId, parentNodeId: 'sub' });
      for (const r of [top, kid]) await store.transaction((tx) => tx.insertRun(r, []));
      // The grandchild is being started (its parent's row locked, as Engine.startChildren does)…
      let release = () => {};
      const held = new Promise<void>((r) => (release = r));
      let locked = () => {};
      const holding = new Promise<void>((r) => (locked = r));
      const starting = store.transaction(async (tx) => {
        await tx.getRun(kid.runId, { forUpdate: true });
        await tx.insertRun(grandchild, []);
        locked();
        await held;
      });
      await holding;
      // …when the top run is cancelled: its cascade waits for that start, then sees the grandchild.
      const cancelling = t.host.engine.cancelRun(owner, top.runId);
      await until('the cancel to wait for the lock', async () => {
        const { rows } = await sql<{ n: number }>`select count(*) as "n" from pg_stat_activity
          where wait_event_type = 'Lock' and query like '%"runs"%'`.execute(store.db);
        return Number(rows[0]?.n) > 0;
      });
      release();
      await starting;
      assert.equal((await cancelling).status, 'cancelled');
      // (a worker may have taken the new grandchild meanwhile: it then ends it, through `cancelling`)
      for (const r of [kid, grandchild]) assert.equal((await settle(r.runId)).status, 'cancelled', r.workflowId);
    });

    it("children count in the tenant's open runs, and are not refused by that quota themselves", async () => {
      const env = { ...ENV, HANDOFF_TENANT_MAX_ACTIVE_RUNS: '2' };
      const capped = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, workflows: [dir], env });
      try {
        const runId = await capped.createRun('each-approval', { items: ['a', 'b'] }, ALICE);
        await until('both children at their gates', async () => {
          const kids = ((await capped.get(`/v1/runs/${runId}`, ALICE)).body.children ?? []) as Json[];
          return kids.length === 2 && kids.every((k) => k.status === 'waiting-approval');
        });
        const refused = await capped.post('/v1/runs', { workflowId: 'echo', inputs: {} }, ALICE);
        assert.equal(refused.status, 429, refused.text);
        assert.equal(refused.body.error, 'too_many_active_runs');
        assert.match(refused.body.message, /already has 3 runs that are not finished/);
      } finally {
        await capped.close();
      }
    });

    /** A host whose worker does not run: a parent stays where the test puts it, its children pending. */
    const quietHost = () =>
      startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, workflows: [dir], env: ENV, startRunner: false });

    it("a child's end makes a commit of its parent read before it fail, so the parent reads its children again", async () => {
      const quiet = await quietHost();
      try {
        const runId = await quiet.createRun('each-approval', { items: ['one'] }, ALICE);
        const read = await quiet.host.engine.getRun({ tenantId: 't1', principalId: 'alice' }, runId);
        const asleep = { status: 'running' as const, wakeAt: Date.now() + 3_600_000 };
        const sleeping = (await quiet.host.store.transaction((tx) => tx.commitRun(read, asleep, []))).run;
        assert.equal(await quiet.host.store.runs.wakeParent(runId), true);
        await assert.rejects(
          quiet.host.store.transaction((tx) => tx.commitRun(sleeping, { wakeAt: Date.now() + 3_600_000 }, [])),
          ConflictError,
        );
        const woken = (await quiet.host.store.runs.get(runId))!;
        assert.ok(woken.wakeAt! <= Date.now(), 'the timer was brought forward');
        assert.equal(woken.version, sleeping.version + 1);
      } finally {
        await quiet.close();
      }
    });

    it('an execution repeated after a crash (same state, same key) finds its children, starts none twice', async () => {
      const quiet = await quietHost();
      try {
        const runId = await quiet.createRun('each-echo', { items: ['a', 'b', 'c', 'd', 'e'] }, ALICE);
        const run = await quiet.host.engine.getRun({ tenantId: 't1', principalId: 'alice' }, runId);
        const def = quiet.host.workflows.get('each-echo')!;
        const node = def.nodes.find((n) => n.id === 'each')!;
        const ctx = (state?: Record<string, unknown>): NodeContext<any> => ({
          runId,
          workflowId: 'each-echo',
          node,
          config: node.config,
          ordinal: 0,
          scope: { inputs: run.inputs, vars: {}, nodes: {}, carry: {}, run: { runId, workflowId: 'each-echo' } },
          now: Date.now(),
          idempotencyKey: `${runId}:each:0`,
          services: { children: new ChildRuns(quiet.host.engine, 3_600_000) },
          ...(state ? { state } : {}),
        });
        const first = (await forEach.execute(ctx())) as Extract<NodeResult, { kind: 'sleep' }>;
        assert.equal(first.kind, 'sleep');
        assert.deepEqual(first.state, { started: 3, open: [0, 1, 2] });
        // The crash: the sleep above was never committed; the execution runs again from nothing.
        const again = (await forEach.execute(ctx())) as Extract<NodeResult, { kind: 'sleep' }>;
        assert.deepEqual(again.state, first.state);
        assert.deepEqual(again.events, first.events, 'the same children, by the same ids');
        const stored = await quiet.host.store.db
          .selectFrom('runs')
          .select('run_id')
          .where('parent_run_id', '=', runId)
          .execute();
        assert.equal(stored.length, 3, 'one child per started item, not two');
        // From the committed state: its children still run, so nothing more starts.
        const next = (await forEach.execute(ctx(first.state))) as Extract<NodeResult, { kind: 'sleep' }>;
        assert.deepEqual(next.state, first.state);
        assert.deepEqual(next.events, []);
      } finally {
        await quiet.close();
      }
    });
  });
}
