// The host's transition pipeline (src/host.ts `pipeline()`): the ordered list of what every run
// change does, and what that order buys. Inside the transaction: the A2A task record, then the
// push outbox. After the commit: the tasks/get cache (SQLite only) drops the task and the Task logs
// (SQLite only) take the new events before anything wakes a reader, then metrics, the bus, and the
// push worker's wake-up.
import { renderPush } from '../../src/a2a/push.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { assertRpcResult, dataMessage, getTask, rpc, sendOk, skillMessage } from '../support/a2a.js';
import { DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';

/** A push URL the egress guard accepts here (loopback allowed below); nothing needs to answer it. */
const HOOK = 'https://127.0.0.1:9/hook';

for (const dialect of DIALECTS) {
  describe(`the host's transition pipeline (${dialect})`, () => {
    let t: TestHost;
    before(async () => {
      t = await startTestHost({
        pg: dialect === 'postgres',
        env: { HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8', HANDOFF_PUSH_RETRY_SCHEDULE: '1h' },
      });
    });
    after(() => t?.close());

    it('is in the documented order (no tasks/get cache on PostgreSQL)', () => {
      assert.deepEqual(t.host.store.pipelineOrder, {
        steps: ['a2a-task-record', 'push-outbox', 'notify-outbox', 'webhook-outbox', 'child-cascade'],
        listeners: [
          ...(dialect === 'sqlite' ? ['task-cache'] : []),
          'metrics',
          'bus',
          'push-worker-wake',
          'notify-worker-wake',
          'peer-cancel-wake',
          'child-wake',
          'webhook-worker-wake',
        ],
      });
    });

    it('a push enqueued for a transition carries the contextId that tasks/get shows', async () => {
      // Started over A2A with the caller's contextId, and over REST (the host derives one).
      const contextId = `ctx-${randomUUID()}`;
      const push = { configuration: { pushNotificationConfig: { url: HOOK } } };
      const overA2A = await sendOk(t, skillMessage('approval', 'over A2A', { contextId }), push);
      assert.equal(overA2A.status.state, 'input-required');
      const overRest = await t.createRun('approval', { prompt: 'over REST' });
      await t.waitForStatus(overRest, ['waiting-approval']);
      const set = { taskId: overRest, pushNotificationConfig: { url: HOOK } };
      assertRpcResult(await rpc(t, 'tasks/pushNotificationConfig/set', set));
      const approved = await t.post(`/v1/runs/${overRest}/interrupts/review`, { resumeValue: { action: 'accept' } });
      assert.equal(approved.status, 200, approved.text);
      await t.waitForStatus(overRest, ['completed']);

      assert.equal((await getTask(t, overA2A.id)).contextId, contextId);
      for (const taskId of [overA2A.id, overRest]) {
        const shown = (await getTask(t, taskId)).contextId;
        // Written in the transition's own transaction: there once the transition is visible.
        const pushes = await t.host.store.outbox.list('default', { taskId });
        assert.ok(pushes.length >= 1, `a push was enqueued for ${taskId}`);
        // As sent: the stored event encoded for the config's version (0.3 here).
        for (const d of pushes) {
          assert.equal(JSON.parse(renderPush(d).body).contextId, shown, `the push of ${taskId} at ${d.seq}`);
        }
      }
    });
  });
}

describe('the tasks/get cache and the bus (SQLite)', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost();
  });
  after(() => t?.close());

  it('a tasks/get issued from a bus notice handler never sees the cached Task of before the transition', async () => {
    const cache = t.host.taskCache;
    assert.ok(cache, 'a SQLite host has a task cache');
    const start = await sendOk(t, skillMessage('approval', 'draft this'));
    assert.equal(start.status.state, 'input-required');
    await getTask(t, start.id);
    assert.ok(cache.get(start.id, 'default', undefined), 'the waiting Task is held');

    // What a reader woken by the bus would get from the cache at that moment, and what it reads.
    const heldAtNotice: Array<string | undefined> = [];
    const reads: Array<Promise<Json>> = [];
    const off = t.host.bus.subscribeRun(start.id, () => {
      heldAtNotice.push(cache.get(start.id, 'default', undefined));
      reads.push(getTask(t, start.id));
    });
    try {
      const done = await sendOk(t, dataMessage({ action: 'accept' }, { taskId: start.id }));
      assert.equal(done.status.state, 'completed');
    } finally {
      off();
    }
    assert.ok(heldAtNotice.length >= 1, 'the bus announced the transition');
    assert.deepEqual(
      heldAtNotice,
      heldAtNotice.map(() => undefined),
      'the cache dropped the Task before the bus spoke',
    );
    for (const task of await Promise.all(reads)) assert.notEqual(task.status.state, 'input-required');
  });
});
