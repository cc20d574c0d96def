// The store contract: the purge of terminal runs: a purged run's rows in every table. Run on SQLite,
// and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RunRecord, TaskRecord } from '../../src/store/model.js';
import type { NewRun, Store } from '../../src/store/store.js';
import {
  T0,
  HOUR,
  DAY,
  Clock,
  uid,
  ids,
  newRun,
  newInterrupt,
  newTask,
  newConfig,
  newDelivery,
  insert,
  onPurge,
  storeContract,
} from '../support/store-contract.js';

storeContract(({ withStore }) => {
  describe('purge', () => {
    /** A run with two events and one interrupt. */
    async function seed(store: Store, clock: Clock, over: Partial<NewRun>): Promise<RunRecord> {
      const run = await insert(store, newRun(clock, over), [{ type: 'run.started' }, { type: 'run.started' }]);
      await store.transaction((tx) => tx.interrupts.insert(newInterrupt(clock, run.runId)));
      return run;
    }
    const gone = async (store: Store, runId: string): Promise<void> => {
      assert.equal(await store.runs.get(runId), undefined, `${runId} deleted`);
      assert.deepEqual(await store.events.list(runId), [], `${runId} events deleted`);
      assert.deepEqual(await store.interrupts.listByRun(runId), [], `${runId} interrupts deleted`);
    };
    const kept = async (store: Store, run: RunRecord): Promise<void> => {
      assert.deepEqual(await store.runs.get(run.runId), run, `${run.runId} kept`);
      assert.equal((await store.events.list(run.runId)).length, 2);
      assert.equal((await store.interrupts.listByRun(run.runId)).length, 1);
    };

    /** A run with everything a run can have in every table: its log, an interrupt, its A2A task
     * record and an applied reply, two push configs (one with a token and credentials) and a
     * delivery for each. */
    interface Seeded {
      run: RunRecord;
      task: TaskRecord;
      replyId: string;
      secretIds: string[];
    }
    async function seedAll(store: Store, clock: Clock, over: Partial<NewRun>): Promise<Seeded> {
      const run = await seed(store, clock, over);
      const task = newTask(clock, run);
      const replyId = uid('msg');
      const secretIds = await store.transaction(async (tx) => {
        const token = await tx.secrets.put(`token of ${run.runId}`);
        const credentials = await tx.secrets.put(`credentials of ${run.runId}`);
        const configs = [
          newConfig(clock, run.runId, { tokenSecretId: token, credentialsSecretId: credentials }),
          newConfig(clock, run.runId),
        ];
        await tx.tasks.insert(task);
        await tx.tasks.recordReply(run.tenantId, run.principalId, replyId, run.runId);
        for (const c of configs) await tx.pushConfigs.insert(c);
        await tx.outbox.enqueue(configs.map((c) => newDelivery(run.runId, 1, { configId: c.configId })));
        await tx.peerWaits.upsert({ runId: run.runId, nodeId: 'call', ordinal: 0, target: { agent: 'b' } });
        return [token, credentials];
      });
      return { run, task, replyId, secretIds };
    }
    /** What the repositories hold of a seeded run, table by table. */
    const holdings = async (store: Store, { run, task, replyId, secretIds }: Seeded) => ({
      runs: (await store.runs.get(run.runId)) === undefined ? 0 : 1,
      events: (await store.events.list(run.runId)).length,
      interrupts: (await store.interrupts.listByRun(run.runId)).length,
      a2a_tasks: (await store.tasks.get(task.taskId, task.tenantId)) === undefined ? 0 : 1,
      a2a_messages: (await store.tasks.findReply(run.tenantId, run.principalId, replyId)) === undefined ? 0 : 1,
      push_configs: (await store.pushConfigs.list(run.runId)).length,
      secrets: (await Promise.all(secretIds.map((id) => store.secrets.get(id)))).filter((c) => c !== undefined).length,
      push_outbox: (await store.outbox.list(run.tenantId, { taskId: run.runId })).length,
      peer_waits: (await store.peerWaits.forRun(run.runId)).length,
    });
    const everything = {
      runs: 1,
      events: 2,
      interrupts: 1,
      a2a_tasks: 1,
      a2a_messages: 1,
      push_configs: 2,
      secrets: 2,
      push_outbox: 2,
      peer_waits: 1,
    };

    it('purgeTerminalBefore deletes a purged run’s rows in every table and keeps other runs’ rows', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const long = new Date(T0 - 3 * DAY).toISOString();
        const old = await seedAll(store, clock, { status: 'completed', completedAt: long });
        const young = await seedAll(store, clock, { status: 'completed', completedAt: clock.iso() });
        const live = await seedAll(store, clock, { status: 'waiting-approval', createdAt: long });
        const unrelated = await store.transaction((tx) => tx.secrets.put('no config refers to this one'));
        for (const s of [old, young, live]) assert.deepEqual(await holdings(store, s), everything);
        assert.equal(await store.purgeTerminalBefore(new Date(T0 - DAY)), 1);
        const none = Object.fromEntries(Object.keys(everything).map((table) => [table, 0]));
        assert.deepEqual(await holdings(store, old), none);
        for (const s of [young, live]) assert.deepEqual(await holdings(store, s), everything);
        assert.equal(await store.secrets.get(unrelated), 'no config refers to this one');
      });
    });

    it('purgeTerminalBefore deletes terminal runs completed before the cutoff, with their events and interrupts, \
and tells the pipeline listeners', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const hooked: string[][] = [];
        onPurge(store, (runIds) => hooked.push([...runIds].sort()));
        const long = new Date(T0 - 3 * DAY).toISOString();
        const old = [
          await seed(store, clock, { status: 'completed', completedAt: long }),
          await seed(store, clock, { status: 'failed', completedAt: long, error: { code: 'e', message: 'm' } }),
          await seed(store, clock, { status: 'cancelled', completedAt: new Date(T0 - DAY - 1).toISOString() }),
        ];
        const keep = [
          await seed(store, clock, { status: 'completed', completedAt: new Date(T0 - HOUR).toISOString() }),
          // exactly at the cutoff
          await seed(store, clock, { status: 'completed', completedAt: new Date(T0 - DAY).toISOString() }),
          await seed(store, clock, { status: 'running' }),
          await seed(store, clock, { status: 'waiting-approval', createdAt: long }),
        ];
        const cutoff = new Date(T0 - DAY);
        assert.equal(await store.purgeTerminalBefore(cutoff), 3);
        assert.deepEqual(hooked.flat().sort(), ids(old));
        for (const run of old) await gone(store, run.runId);
        for (const run of keep) await kept(store, run);
        assert.equal(await store.runs.count(), keep.length);
        assert.equal(await store.purgeTerminalBefore(cutoff), 0);
        assert.equal(hooked.length, 1, 'no listener call when nothing is purged');
      });
    });

    it('purgeTerminalBefore works through more runs than one batch', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const batches: number[] = [];
        onPurge(store, (runIds) => batches.push(runIds.length));
        const old: RunRecord[] = [];
        for (let i = 0; i < 5; i++)
          old.push(await seed(store, clock, { status: 'completed', completedAt: new Date(T0 - DAY).toISOString() }));
        const young = await seed(store, clock, { status: 'completed', completedAt: clock.iso() });
        assert.equal(await store.purgeTerminalBefore(new Date(T0 - 1), 2), 5);
        assert.ok(batches.every((n) => n <= 2));
        assert.equal(
          batches.reduce((a, b) => a + b, 0),
          5,
        );
        for (const run of old) await gone(store, run.runId);
        await kept(store, young);
      });
    });

    it('purgeTerminalBefore never deletes a non-terminal run, even one carrying a completedAt', {}, async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const odd = await seed(store, clock, {
          status: 'running',
          completedAt: new Date(T0 - 3 * DAY).toISOString(),
        });
        assert.equal(await store.purgeTerminalBefore(new Date(T0)), 0);
        await kept(store, odd);
      });
    });
  });
});
