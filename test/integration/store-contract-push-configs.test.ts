// The store contract: the pushConfigs repository: push notification configs of a task. Run on SQLite,
// and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Clock, uid, newRun, insertTask, newConfig, storeContract } from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('pushConfigs', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('a run created in a transaction lists the configs registered with it in that transaction', async () => {
      const run = newRun(clock);
      const config = newConfig(clock, run.runId);
      const [before, after] = await store().transaction(async (tx) => {
        await tx.insertRun(run, []);
        const none = await tx.pushConfigs.list(run.runId);
        await tx.pushConfigs.insert(config);
        return [none, await tx.pushConfigs.list(run.runId)];
      });
      assert.deepEqual(before, []);
      assert.deepEqual(after, [config]);
      assert.deepEqual(await store().pushConfigs.list(run.runId), [config]);
    });

    it('a task the reply’s read found without configs lists none until one is inserted, \
also by another transaction committing with it', async () => {
      const rec = await insertTask(store(), clock);
      const config = newConfig(clock, rec.taskId);
      const [before, after] = await store().transaction(async (tx) => {
        await tx.tasks.getForReply(rec.taskId, rec.tenantId);
        const none = await tx.pushConfigs.list(rec.taskId);
        await tx.pushConfigs.insert(config);
        return [none, await tx.pushConfigs.list(rec.taskId)];
      });
      assert.deepEqual(before, []);
      assert.deepEqual(after, [config]);
      // Started together on SQLite: one group, one database transaction, when the first members
      // finish within the group's time budget (on PostgreSQL they run concurrently, and the
      // list may come first).
      if (store().dialect !== 'sqlite') return;
      const other = await insertTask(store(), clock);
      const added = newConfig(clock, other.taskId);
      await new Promise((resolve) => setImmediate(resolve)); // the earlier group is done
      const [, , listed] = await Promise.all([
        store().transaction((tx) => tx.tasks.getForReply(other.taskId, other.tenantId)),
        store().transaction((tx) => tx.pushConfigs.insert(added)),
        store().transaction((tx) => tx.pushConfigs.list(other.taskId)),
      ]);
      assert.deepEqual(listed, [added]);
    });

    it('insert then get round-trips every field; absent optional fields stay absent', async () => {
      const taskId = uid('run');
      const full = newConfig(clock, taskId, {
        authSchemes: ['Bearer', 'Basic'],
        tokenSecretId: uid('sec'),
        credentialsSecretId: uid('sec'),
        tokenFingerprint: 'sha256:abc',
        protocolVersion: '1.0',
      });
      const bare = newConfig(clock, taskId);
      await store().transaction(async (tx) => {
        await tx.pushConfigs.insert(full);
        await tx.pushConfigs.insert(bare);
      });
      assert.deepEqual(await store().pushConfigs.get(taskId, full.configId), full);
      const read = await store().pushConfigs.get(taskId, bare.configId);
      assert.deepEqual(read, bare);
      for (const key of ['authSchemes', 'tokenSecretId', 'credentialsSecretId', 'tokenFingerprint'] as const)
        assert.equal(key in (read ?? {}), false, key);
      assert.equal(await store().pushConfigs.get(taskId, 'cfg_unknown'), undefined);
      assert.equal(await store().pushConfigs.get(uid('run'), full.configId), undefined);
    });

    it("list is one task's configs, oldest first, ties by config id", async () => {
      const taskId = uid('run');
      const later = newConfig(clock, taskId, {
        configId: 'a-later',
        createdAt: new Date(clock.ms + 1).toISOString(),
      });
      const second = newConfig(clock, taskId, { configId: 'c' });
      const first = newConfig(clock, taskId, { configId: 'b' });
      await store().transaction(async (tx) => {
        for (const c of [later, second, first, newConfig(clock, uid('run'))]) await tx.pushConfigs.insert(c);
      });
      assert.deepEqual(await store().pushConfigs.list(taskId), [first, second, later]);
      assert.deepEqual(await store().pushConfigs.list(uid('run')), []);
    });

    it('(task, config) is unique: a second insert fails, keeps the first; another task may reuse it', async () => {
      const taskId = uid('run');
      const config = newConfig(clock, taskId, { configId: 'default' });
      await store().transaction((tx) => tx.pushConfigs.insert(config));
      await assert.rejects(
        store().transaction((tx) => tx.pushConfigs.insert({ ...config, url: 'https://elsewhere.example.com/' })),
      );
      assert.deepEqual(await store().pushConfigs.list(taskId), [config]);
      const elsewhere = newConfig(clock, uid('run'), { configId: 'default' });
      await store().transaction((tx) => tx.pushConfigs.insert(elsewhere));
      assert.deepEqual(await store().pushConfigs.get(elsewhere.taskId, 'default'), elsewhere);
    });

    it('delete removes one config; clearSecrets forgets its secret references and keeps the rest', async () => {
      const taskId = uid('run');
      const keep = newConfig(clock, taskId, { tokenSecretId: uid('sec'), tokenFingerprint: 'sha256:k' });
      const secret = {
        authSchemes: ['Bearer'],
        tokenSecretId: uid('sec'),
        credentialsSecretId: uid('sec'),
        tokenFingerprint: 'sha256:c',
      };
      const cleared = newConfig(clock, taskId, secret);
      const gone = newConfig(clock, taskId);
      await store().transaction(async (tx) => {
        for (const c of [keep, cleared, gone]) await tx.pushConfigs.insert(c);
      });
      await store().transaction(async (tx) => {
        await tx.pushConfigs.delete(taskId, gone.configId);
        await tx.pushConfigs.clearSecrets(taskId, cleared.configId);
      });
      const { tokenSecretId: _t, credentialsSecretId: _c, ...withoutSecrets } = cleared;
      assert.deepEqual(await store().pushConfigs.get(taskId, cleared.configId), withoutSecrets);
      assert.equal(await store().pushConfigs.get(taskId, gone.configId), undefined);
      assert.deepEqual(await store().pushConfigs.list(taskId), [keep, withoutSecrets]);
      await store().transaction((tx) => tx.pushConfigs.delete(taskId, 'cfg_unknown'));
      assert.equal((await store().pushConfigs.list(taskId)).length, 2, 'deleting an unknown config changes nothing');
    });
  });
});
