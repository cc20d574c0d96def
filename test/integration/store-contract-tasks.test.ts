// The store contract: the tasks repository: A2A task records, replies, and the ListTasks pages. Run on
// SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RunRecord, TaskRecord } from '../../src/store/model.js';
import {
  Clock,
  uid,
  range,
  newRun,
  newInterrupt,
  newTask,
  insertTask,
  storeContract,
} from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('tasks: A2A task records and replies', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('insert then get round-trips; absent optional fields stay absent; another tenant sees nothing', async () => {
      const tenantId = uid('tenant');
      const full = await insertTask(store(), clock, {
        tenantId,
        messageId: uid('msg'),
        state: 'input-required',
        interruptKind: 'approval',
      });
      const bare = await insertTask(store(), clock, { tenantId });
      assert.deepEqual(await store().tasks.get(full.taskId, tenantId), full);
      const read = await store().tasks.get(bare.taskId, tenantId);
      assert.deepEqual(read, bare);
      for (const key of ['messageId', 'interruptKind'] as const) assert.equal(key in (read ?? {}), false, key);
      assert.equal(await store().tasks.get('run_unknown', tenantId), undefined);

      const other = uid('tenant');
      assert.equal(await store().tasks.get(full.taskId, other), undefined);
      assert.equal(await store().tasks.getWithRun(full.taskId, other), undefined);
      assert.equal(await store().tasks.findByMessage(other, full.principalId, full.messageId ?? ''), undefined);
      assert.deepEqual((await store().tasks.list(other, { limit: 10 })).tasks, []);
    });

    it('state changes in one transaction: the last one is stored, and a read in the transaction sees it', async () => {
      const rec = await insertTask(store(), clock, { tenantId: uid('tenant'), state: 'input-required' });
      await store().transaction(async (tx) => {
        await tx.tasks.updateState(rec.taskId, 'working', undefined, clock.iso());
        assert.equal((await tx.tasks.get(rec.taskId, rec.tenantId))?.state, 'working');
        await tx.tasks.updateState(rec.taskId, 'input-required', 'approval', '2030-01-02T00:00:00.000Z');
        await tx.tasks.updateState(rec.taskId, 'completed', undefined, '2030-01-03T00:00:00.000Z');
      });
      assert.deepEqual(await store().tasks.get(rec.taskId, rec.tenantId), {
        ...rec,
        state: 'completed',
        updatedAt: '2030-01-03T00:00:00.000Z',
      });
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.tasks.updateState(rec.taskId, 'failed', undefined, clock.iso());
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.equal((await store().tasks.get(rec.taskId, rec.tenantId))?.state, 'completed');
    });

    it('getWithRun returns the record with its run', async () => {
      const rec = await insertTask(store(), clock, { tenantId: uid('tenant') });
      const both = await store().tasks.getWithRun(rec.taskId, rec.tenantId);
      assert.deepEqual(both, { rec, run: await store().runs.get(rec.taskId) });
      assert.equal(await store().tasks.getWithRun('run_unknown', rec.tenantId), undefined);
    });

    it('getForReply: the record, its run and its open interrupt in one read; stateSet: the last state set', async () => {
      const rec = await insertTask(store(), clock, { tenantId: uid('tenant') });
      const run = await store().runs.get(rec.taskId);
      assert.deepEqual(await store().tasks.getForReply(rec.taskId, rec.tenantId), { rec, run });
      const open = newInterrupt(clock, rec.taskId);
      const resolved = newInterrupt(clock, rec.taskId, { nodeId: 'earlier', status: 'resolved' });
      await store().transaction(async (tx) => {
        await tx.interrupts.insert(resolved);
        await tx.interrupts.insert(open);
      });
      await store().transaction(async (tx) => {
        assert.deepEqual(await tx.tasks.getForReply(rec.taskId, rec.tenantId), { rec, run, open });
        assert.equal(tx.tasks.stateSet(rec.taskId), undefined);
        await tx.tasks.updateState(rec.taskId, 'completed', undefined, '2030-01-03T00:00:00.000Z');
        // A read in between writes the pending state; what was set is still known.
        assert.equal((await tx.tasks.getForReply(rec.taskId, rec.tenantId))?.rec.state, 'completed');
        assert.deepEqual(tx.tasks.stateSet(rec.taskId), {
          state: 'completed',
          interruptKind: undefined,
          updatedAt: '2030-01-03T00:00:00.000Z',
        });
      });
      assert.equal(await store().tasks.getForReply(rec.taskId, uid('tenant')), undefined);
      assert.equal(await store().tasks.getForReply('run_unknown', rec.tenantId), undefined);
    });

    it('getWithRun reads one snapshot: each read pairs a record with the run committed with it', async () => {
      const rec = await insertTask(store(), clock, { tenantId: uid('tenant') });
      const stateOf = (step: number) => (step % 2 === 0 ? 'working' : 'input-required');
      const reads: Array<{ rec: TaskRecord; run: RunRecord }> = [];
      const read = async () => {
        const both = await store().tasks.getWithRun(rec.taskId, rec.tenantId);
        assert.ok(both);
        reads.push(both);
      };
      // Each transaction changes the run and its record together; reads race every commit.
      for (let step = 1; step <= 12; step++) {
        clock.advance(1000);
        const write = store().transaction(async (tx) => {
          const cur = await tx.getRun(rec.taskId);
          assert.ok(cur);
          const { run } = await tx.commitRun(cur, { metadata: { step } }, [{ type: 'node.started' }]);
          await tx.tasks.updateState(rec.taskId, stateOf(step), undefined, run.updatedAt);
        });
        await Promise.all([read(), write, read()]);
      }
      await read();
      for (const both of reads) {
        assert.equal(both.rec.updatedAt, both.run.updatedAt, 'a record and a run from different commits');
        const step = both.run.metadata.step as number | undefined;
        assert.equal(both.rec.state, step === undefined ? 'submitted' : stateOf(step));
      }
      assert.equal(reads.at(-1)?.run.metadata.step, 12);
    });

    it('findByMessage finds the task a message started, for its tenant and principal only', async () => {
      const tenantId = uid('tenant');
      const messageId = uid('msg');
      const rec = await insertTask(store(), clock, { tenantId, principalId: 'alice', messageId });
      assert.deepEqual(await store().tasks.findByMessage(tenantId, 'alice', messageId), rec);
      assert.equal(await store().tasks.findByMessage(tenantId, 'bob', messageId), undefined);
      assert.equal(await store().tasks.findByMessage(uid('tenant'), 'alice', messageId), undefined);
      assert.equal(await store().tasks.findByMessage(tenantId, 'alice', uid('msg')), undefined);
      // Bob's message with the same id is his own task.
      const bobs = await insertTask(store(), clock, { tenantId, principalId: 'bob', messageId });
      assert.deepEqual(await store().tasks.findByMessage(tenantId, 'bob', messageId), bobs);
    });

    it('a second task for one (tenant, principal, messageId) fails; tasks without one never collide', async () => {
      const tenantId = uid('tenant');
      const messageId = uid('msg');
      await insertTask(store(), clock, { tenantId, messageId });
      const twin = newRun(clock, { tenantId });
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.insertRun(twin, [{ type: 'run.started' }]);
          await tx.tasks.insert(newTask(clock, twin, { messageId }));
        }),
      );
      assert.equal(await store().runs.get(twin.runId), undefined, 'the run of the refused task is not written');
      // Runs started over REST have no messageId: they never collide.
      await insertTask(store(), clock, { tenantId });
      await insertTask(store(), clock, { tenantId });
      assert.equal((await store().tasks.list(tenantId, { limit: 10 })).tasks.length, 3);
    });

    it('recordReply marks a reply applied; findReply finds it for that tenant and principal only', async () => {
      const tenantId = uid('tenant');
      const rec = await insertTask(store(), clock, { tenantId });
      const other = await insertTask(store(), clock, { tenantId });
      const messageId = uid('msg');
      assert.equal(await store().tasks.findReply(tenantId, 'alice', messageId), undefined);
      await store().transaction((tx) => tx.tasks.recordReply(tenantId, 'alice', messageId, rec.taskId));
      assert.equal(await store().tasks.findReply(tenantId, 'alice', messageId), rec.taskId);
      assert.equal(await store().tasks.findReply(tenantId, 'bob', messageId), undefined);
      assert.equal(await store().tasks.findReply(uid('tenant'), 'alice', messageId), undefined);
      await store().transaction((tx) => tx.tasks.recordReply(tenantId, 'bob', messageId, other.taskId));
      assert.equal(await store().tasks.findReply(tenantId, 'bob', messageId), other.taskId);
      await assert.rejects(
        store().transaction((tx) => tx.tasks.recordReply(tenantId, 'alice', messageId, other.taskId)),
        'the same reply applied twice',
      );
      assert.equal(await store().tasks.findReply(tenantId, 'alice', messageId), rec.taskId, 'the first is kept');
    });

    it('a concurrent duplicate reply: one transaction applies it, the others fail and leave nothing', async () => {
      const rec = await insertTask(store(), clock, { tenantId: uid('tenant') });
      const messageId = uid('msg');
      const attempts = range(4).map(() => newInterrupt(clock, rec.taskId));
      const results = await Promise.allSettled(
        attempts.map((interrupt) =>
          store().transaction(async (tx) => {
            await tx.interrupts.insert(interrupt);
            await tx.tasks.recordReply(rec.tenantId, rec.principalId, messageId, rec.taskId);
            return interrupt.interruptId;
          }),
        ),
      );
      const applied = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      assert.equal(applied.length, 1, 'exactly one transaction applies the reply');
      const kept = (await store().interrupts.listByRun(rec.taskId)).map((i) => i.interruptId);
      assert.deepEqual(kept, applied, 'the failed transactions wrote nothing');
      assert.equal(await store().tasks.findReply(rec.tenantId, rec.principalId, messageId), rec.taskId);
    });

    describe('list', () => {
      /** `n` tasks of `tenantId`, one second apart, and three more sharing the last moment. */
      async function seed(tenantId: string, n: number, over: Partial<TaskRecord> = {}): Promise<TaskRecord[]> {
        const out: TaskRecord[] = [];
        for (let i = 0; i < n; i++) {
          clock.advance(1000);
          out.push(await insertTask(store(), clock, { tenantId, ...over }));
        }
        for (let i = 0; i < 3; i++) out.push(await insertTask(store(), clock, { tenantId, ...over }));
        return out;
      }
      const newestFirst = (tasks: TaskRecord[]): TaskRecord[] =>
        [...tasks].sort((a, b) =>
          a.updatedAt === b.updatedAt ? b.taskId.localeCompare(a.taskId) : b.updatedAt.localeCompare(a.updatedAt),
        );
      /** Every page of `tenantId`'s list, `between` called after each page but the last. */
      async function pages(tenantId: string, limit: number, between?: () => Promise<void>): Promise<TaskRecord[][]> {
        const out: TaskRecord[][] = [];
        let cursor: string | undefined;
        do {
          const page = await store().tasks.list(tenantId, { limit, ...(cursor ? { cursor } : {}) });
          out.push(page.tasks);
          cursor = page.nextCursor;
          if (cursor) await between?.();
        } while (cursor);
        return out;
      }

      it('is newest first (ties by task id), in keyset pages that neither repeat nor skip', async () => {
        const tenantId = uid('tenant');
        const tasks = await seed(tenantId, 7);
        const got = await pages(tenantId, 3);
        assert.deepEqual(
          got.map((p) => p.length),
          [3, 3, 3, 1],
        );
        assert.deepEqual(got.flat(), newestFirst(tasks));
        const whole = await store().tasks.list(tenantId, { limit: tasks.length });
        assert.deepEqual(whole, { tasks: newestFirst(tasks) }, 'a page that holds the rest has no nextCursor');
      });

      it('pages stay stable when tasks are added between them', async () => {
        const tenantId = uid('tenant');
        const tasks = await seed(tenantId, 5);
        const added: TaskRecord[] = [];
        const got = await pages(tenantId, 3, async () => {
          clock.advance(1000);
          added.push(await insertTask(store(), clock, { tenantId }));
        });
        assert.deepEqual(got.flat(), newestFirst(tasks), 'newer tasks come before the cursor, never into a page');
        assert.equal(added.length, 2);
        assert.deepEqual(
          (await store().tasks.list(tenantId, { limit: 2 })).tasks,
          newestFirst(added),
          'a new first page shows them',
        );
      });

      it('filters by state and by contextId', async () => {
        const tenantId = uid('tenant');
        const contextId = uid('ctx');
        const waiting = await seed(tenantId, 2, { state: 'input-required', interruptKind: 'approval' });
        const inContext = await seed(tenantId, 1, { contextId });
        const both = await insertTask(store(), clock, { tenantId, contextId, state: 'input-required' });
        const list = (filter: { state?: string; contextId?: string }) =>
          store().tasks.list(tenantId, { limit: 100, ...filter });
        assert.deepEqual((await list({ state: 'input-required' })).tasks, newestFirst([...waiting, both]));
        assert.deepEqual((await list({ contextId })).tasks, newestFirst([...inContext, both]));
        assert.deepEqual((await list({ state: 'input-required', contextId })).tasks, [both]);
        assert.deepEqual((await list({ state: 'completed' })).tasks, []);
      });

      it('page and count (ListTasks): keyset after a position, filters incl. since, the tenant only', async () => {
        const tenantId = uid('tenant');
        const contextId = uid('ctx');
        const tasks = await seed(tenantId, 4, { contextId });
        await seed(uid('tenant'), 2, { contextId });
        const all = newestFirst(tasks);
        const first = await store().tasks.page(tenantId, { contextId }, 3);
        assert.deepEqual(first, { tasks: all.slice(0, 3), more: true });
        const last = all[2] as TaskRecord;
        const rest = await store().tasks.page(tenantId, { contextId }, 10, last);
        assert.deepEqual(rest, { tasks: all.slice(3), more: false });
        assert.equal(await store().tasks.count(tenantId, { contextId }), tasks.length);
        const since = (all[1] as TaskRecord).updatedAt;
        const recent = all.filter((t) => t.updatedAt >= since);
        assert.deepEqual((await store().tasks.page(tenantId, { since }, 100)).tasks, recent, 'since is inclusive');
        assert.equal(await store().tasks.count(tenantId, { since }), recent.length);
        assert.equal(await store().tasks.count(tenantId, { state: 'failed' }), 0);
      });

      it('a malformed cursor is a RangeError', async () => {
        const tenantId = uid('tenant');
        await seed(tenantId, 1);
        const encode = (v: string) => Buffer.from(v).toString('base64url');
        const bad = ['%%%', 'not a cursor', encode('{}'), encode('null'), encode('[1,2]'), encode('["only"]')];
        for (const cursor of bad) {
          await assert.rejects(store().tasks.list(tenantId, { limit: 2, cursor }), RangeError, cursor);
        }
      });
    });
  });
});
