// Push configs per task are capped: HANDOFF_PUSH_MAX_CONFIGS_PER_TASK (default
// 10), one more is -32602 (400 on the RFC 0100 seam) and writes nothing, replacing an existing id
// is fine; a task with many configs still moves (its outbox rows are written in batches). Before,
// any principal could register thousands, and ~2,730 made the task impossible to approve or
// cancel on SQLite ("too many SQL variables"). SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRpcError, assertRpcResult, dataMessage, rpc, send, sendOk, skillMessage } from '../support/a2a.js';
import { DIALECTS, footprint, startTestHost, type TestHost } from '../support/host.js';

const config = (i: number | string) => ({ id: `cfg-${i}`, url: `https://hooks.example.com/h/${i}` });

for (const dialect of DIALECTS) {
  describe(`push configs per task (${dialect})`, () => {
    let t: TestHost;
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', env: { HANDOFF_TEST_SEAMS: '1' } });
    });
    after(async () => {
      await t?.close();
    });

    const set = (taskId: string, c: Record<string, unknown>, id: string | number = 1) =>
      rpc(t, 'tasks/pushNotificationConfig/set', { taskId, pushNotificationConfig: c }, { id });

    it('ten configs are accepted; an eleventh id → -32602 naming the setting, nothing written; the same id replaces', async () => {
      const taskId = (await sendOk(t, skillMessage('approval', 'x'))).id;
      for (let i = 0; i < 10; i++) assertRpcResult(await set(taskId, config(i)));
      const before = await footprint(t);
      const err = assertRpcError(await set(taskId, config(10), 'over'), -32602, 'over');
      assert.match(err.message, /HANDOFF_PUSH_MAX_CONFIGS_PER_TASK/);
      assert.deepEqual(await footprint(t), before);
      // Replacing an existing id is not one more.
      const replaced = assertRpcResult(await set(taskId, { ...config(3), url: 'https://hooks.example.com/new' }));
      assert.equal(replaced.pushNotificationConfig.url, 'https://hooks.example.com/new');
      const list = assertRpcResult(await rpc(t, 'tasks/pushNotificationConfig/list', { id: taskId }));
      assert.equal(list.length, 10);
      // After a delete there is room again.
      assertRpcResult(
        await rpc(t, 'tasks/pushNotificationConfig/delete', { id: taskId, pushNotificationConfigId: 'cfg-0' }),
      );
      assertRpcResult(await set(taskId, config(10)));
    });

    it('a reply carrying an eleventh config inline is refused whole: -32602, the task still waits', async () => {
      const taskId = (await sendOk(t, skillMessage('approval', 'x'))).id;
      for (let i = 0; i < 10; i++) assertRpcResult(await set(taskId, config(i)));
      const before = await footprint(t);
      const reply = await send(t, dataMessage({ action: 'accept' }, { taskId }), {
        configuration: { pushNotificationConfig: config('inline') },
      });
      assert.match(assertRpcError(reply, -32602, reply.body.id).message, /HANDOFF_PUSH_MAX_CONFIGS_PER_TASK/);
      assert.deepEqual(await footprint(t), before);
      assert.equal((await t.get(`/v1/runs/${taskId}`)).body.status, 'waiting-approval');
    });

    it('the RFC 0100 seam answers 400 validation_error for one config too many', async () => {
      const taskId = (await sendOk(t, skillMessage('approval', 'x'))).id;
      for (let i = 0; i < 10; i++) assertRpcResult(await set(taskId, config(i)));
      const res = await t.post('/v1/host/sample/a2a/tasks/push-config', { taskId, url: 'https://hooks.example.com/s' });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error, 'validation_error');
      assert.match(res.body.message, /HANDOFF_PUSH_MAX_CONFIGS_PER_TASK/);
    });
  });

  describe(`a task with many push configs still moves (${dialect})`, () => {
    const MANY = 300;
    let t: TestHost;
    before(async () => {
      t = await startTestHost({
        pg: dialect === 'postgres',
        env: { HANDOFF_PUSH_MAX_CONFIGS_PER_TASK: String(MANY) },
      });
    });
    after(async () => {
      await t?.close();
    });

    it(`${MANY} configs: the approval commits and writes one delivery per config for the transition`, async () => {
      const taskId = (await sendOk(t, skillMessage('approval', 'x'))).id;
      for (let i = 0; i < MANY; i++) {
        assertRpcResult(
          await rpc(t, 'tasks/pushNotificationConfig/set', { taskId, pushNotificationConfig: config(i) }),
        );
      }
      const done = await sendOk(t, dataMessage({ action: 'accept' }, { taskId }));
      assert.equal(done.status.state, 'completed');
      const deliveries = await t.get(`/v1/a2a/deliveries?taskId=${taskId}&limit=1000`);
      const final = (deliveries.body.deliveries as Array<{ final: boolean }>).filter((d) => d.final);
      assert.equal(final.length, MANY);
    });
  });
}
