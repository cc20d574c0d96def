// The store contract: transactions: started together (group commit on SQLite), the onCommit listeners,
// and the transition hooks that run inside them. Run on SQLite, and on PostgreSQL when
// HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError } from '../../src/store/errors.js';
import type { RunRecord } from '../../src/store/model.js';
import type { NewRun, RunChange } from '../../src/store/store.js';
import {
  Clock,
  seqs,
  newRun,
  newInterrupt,
  insert,
  commit,
  mustGet,
  assertGapFree,
  onCommit,
  addStep,
  storeContract,
} from '../support/store-contract.js';

storeContract(({ sharedStore, withStore }) => {
  describe('transactions started together (group commit on SQLite)', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('each commits or fails alone: failures leave nothing, successes all commit, \
listeners hear each success once', async () => {
      const runs = Array.from({ length: 12 }, () => newRun(clock));
      const taken = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const heard: string[] = [];
      const off = onCommit(store(), (changes) => heard.push(...changes.map((c) => c.run.runId)));
      try {
        const outcomes = await Promise.allSettled(
          runs.map((run, i) =>
            store().transaction(async (tx) => {
              await tx.insertRun(run, [{ type: 'run.started' }, { type: 'run.started' }]);
              if (i % 4 === 1) throw new Error(`abort ${i}`);
              // A constraint violation fails only its own transaction.
              if (i % 4 === 2) await tx.insertRun({ ...run, runId: taken.runId }, []);
              return i;
            }),
          ),
        );
        for (const [i, outcome] of outcomes.entries()) {
          const run = runs[i] as NewRun;
          if (i % 4 === 1 || i % 4 === 2) {
            assert.equal(outcome.status, 'rejected', `transaction ${i} must fail`);
            assert.equal(await store().runs.get(run.runId), undefined, `transaction ${i} left its run`);
            assert.deepEqual(await store().events.list(run.runId), [], `transaction ${i} left events`);
          } else {
            assert.deepEqual(outcome, { status: 'fulfilled', value: i });
            assert.equal((await mustGet(store(), run.runId)).version, 1);
            await assertGapFree(store(), run.runId, 2);
          }
        }
      } finally {
        off();
      }
      const succeeded = runs.filter((_, i) => i % 4 === 0 || i % 4 === 3).map((r) => r.runId);
      assert.deepEqual(
        [...heard].sort(),
        [...succeeded].sort(),
        'one notification per committed transaction, none for failed ones',
      );
      assert.equal(
        (await mustGet(store(), taken.runId)).version,
        1,
        'the run the violations collided with is untouched',
      );
    });

    it('a later transaction of the same group sees what an earlier one committed', async (t) => {
      // PostgreSQL runs them on two connections at once; the optimistic check decides there.
      if (store().dialect !== 'sqlite') return t.skip('SQLite only: PostgreSQL transactions are concurrent');
      const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const results = await Promise.all([
        store().transaction(
          async (tx) => (await tx.commitRun(run, { status: 'running' }, [{ type: 'run.started' }])).run,
        ),
        store().transaction(async (tx) => {
          const current = await tx.getRun(run.runId);
          assert.ok(current);
          return (await tx.commitRun(current, { status: 'completed' }, [{ type: 'run.completed' }])).run;
        }),
      ]);
      assert.deepEqual(
        results.map((r) => r.version),
        [2, 3],
      );
      assert.equal((await mustGet(store(), run.runId)).status, 'completed');
      await assertGapFree(store(), run.runId, 3);
    });
  });

  describe('onCommit listeners', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('are called once, after commit, with the changes of the transaction in order', async () => {
      const calls: RunChange[][] = [];
      const reads: Array<Promise<RunRecord | undefined>> = [];
      const other = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const fresh = newRun(clock);
      const off = onCommit(store(), (changes) => {
        calls.push(changes);
        // Whatever a listener reads (e.g. a stream catching up) must already be committed.
        reads.push(store().runs.get(other.runId));
      });
      try {
        await store().transaction(async (tx) => {
          await tx.insertRun(fresh, [{ type: 'run.started' }]);
          await tx.commitRun(other, { status: 'running' }, [
            { type: 'run.started' },
            { type: 'node.started', nodeId: 'n' },
          ]);
          assert.equal(calls.length, 0, 'not called before commit');
        });
      } finally {
        off();
      }
      assert.equal(calls.length, 1);
      const [changes] = calls as [RunChange[]];
      assert.equal(changes.length, 2);
      const [ins, upd] = changes as [RunChange, RunChange];
      assert.equal(ins.before, undefined);
      assert.equal(ins.run.runId, fresh.runId);
      assert.deepEqual(seqs(ins.events), [0]);
      assert.deepEqual(upd.before, other);
      assert.deepEqual(upd.run, await store().runs.get(other.runId));
      assert.deepEqual(upd.events, await store().events.list(other.runId, 0));
      assert.equal((await reads[0])?.version, 2, 'a read started by the listener sees the committed change');
    });

    it('are not called for a rolled-back transaction, a conflict, or a transaction without run changes', async () => {
      const calls: RunChange[][] = [];
      const off = onCommit(store(), (changes) => calls.push(changes));
      try {
        const run = await insert(store(), newRun(clock));
        assert.equal(calls.length, 1);
        await assert.rejects(
          store().transaction(async (tx) => {
            await tx.commitRun(run, { status: 'running' }, [{ type: 'node.started' }]);
            throw new Error('rollback');
          }),
        );
        await assert.rejects(
          store().transaction(async (tx) => {
            await tx.insertRun(newRun(clock), []);
            throw new Error('rollback');
          }),
        );
        await commit(store(), run, {}, []);
        assert.equal(calls.length, 2);
        await assert.rejects(
          store().transaction((tx) => tx.commitRun(run, {}, [{ type: 'node.failed' }])),
          ConflictError,
        );
        await store().transaction((tx) =>
          tx.idempotency.put({
            tenantId: 't',
            scope: 'listeners',
            key: run.runId,
            bodyHash: 'h',
            statusCode: 200,
            response: null,
          }),
        );
        assert.equal(calls.length, 2);
      } finally {
        off();
      }
    });

    it('run in pipeline order; a throwing listener neither fails the commit nor starves the next', async () => {
      const order: string[] = [];
      await withStore(clock, async (own) => {
        own.setPipeline({
          steps: [],
          listeners: [
            { name: 'first', committed: () => order.push('first') },
            {
              name: 'broken',
              committed: () => {
                throw new Error('listener bug');
              },
            },
            { name: 'last', committed: () => order.push('last') },
          ],
        });
        assert.deepEqual(own.pipelineOrder, { steps: [], listeners: ['first', 'broken', 'last'] });
        const run = await insert(own, newRun(clock));
        assert.deepEqual(order, ['first', 'last']);
        assert.equal((await mustGet(own, run.runId)).version, 1);
        assert.throws(() => own.setPipeline({ steps: [], listeners: [] }), /set once/);
      });
    });
  });

  describe('transition hooks', () => {
    const clock = new Clock();
    const store = sharedStore(clock);
    const seen: Array<{ runId: string; version: number; readInside: number | undefined }> = [];
    /** A derived record written by the hook, keyed by the run version it was derived from. */
    const derived = (run: RunRecord) =>
      store().transaction((tx) => tx.idempotency.get(run.tenantId, 'derived', `${run.runId}@${run.version}`));

    before(() => {
      addStep(store(), async (tx, change) => {
        if (change.run.metadata.explode === true) throw new Error('hook refused the transition');
        seen.push({
          runId: change.run.runId,
          version: change.run.version,
          readInside: (await tx.getRun(change.run.runId))?.version,
        });
        await tx.idempotency.put({
          tenantId: change.run.tenantId,
          scope: 'derived',
          key: `${change.run.runId}@${change.run.version}`,
          bodyHash: change.run.status,
          statusCode: 200,
          response: { status: change.run.status, events: seqs(change.events) },
        });
      });
    });

    it('run inside the transaction of every insert and commit, and their writes commit with it', async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const next = await commit(store(), run, { status: 'running' }, [
        { type: 'run.started' },
        { type: 'node.started' },
      ]);
      assert.deepEqual(
        seen.filter((s) => s.runId === run.runId),
        [
          { runId: run.runId, version: 1, readInside: 1 },
          { runId: run.runId, version: 2, readInside: 2 },
        ],
        'the hook sees the new snapshot through its transaction',
      );
      assert.deepEqual((await derived(run))?.response, { status: 'pending', events: [0] });
      assert.deepEqual((await derived(next))?.response, { status: 'running', events: [1, 2] });
    });

    it('their writes roll back with a failed transaction', async () => {
      const run = await insert(store(), newRun(clock));
      const ran = seen.length;
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.commitRun(run, { status: 'running' }, [{ type: 'run.started' }]);
          throw new Error('later failure');
        }),
      );
      assert.equal(seen.length, ran + 1, 'the hook did run');
      assert.equal(await derived({ ...run, version: 2 }), undefined, 'but what it wrote is gone');
    });

    it('a hook that throws rolls back the whole change and no listener hears of it', async () => {
      const calls: RunChange[][] = [];
      const off = onCommit(store(), (c) => calls.push(c));
      try {
        const doomed = newRun(clock, { metadata: { explode: true } });
        await assert.rejects(
          store().transaction((tx) => tx.insertRun(doomed, [{ type: 'run.started' }])),
          /hook refused/,
        );
        assert.equal(await store().runs.get(doomed.runId), undefined);
        assert.deepEqual(await store().events.list(doomed.runId), []);

        const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
        assert.equal(calls.length, 1);
        await assert.rejects(
          store().transaction(async (tx) => {
            await tx.interrupts.insert(newInterrupt(clock, run.runId));
            return tx.commitRun(run, { status: 'running', metadata: { explode: true } }, [{ type: 'run.started' }]);
          }),
          /hook refused/,
        );
        assert.deepEqual(await store().runs.get(run.runId), run);
        await assertGapFree(store(), run.runId, 1);
        assert.deepEqual(await store().interrupts.listByRun(run.runId), []);
        assert.equal(calls.length, 1);
      } finally {
        off();
      }
    });
  });
});
