// The store contract: the events repository: a run's log, paged by cursor and by type. Run on SQLite,
// and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { NewEvent, RunEvent, RunRecord } from '../../src/store/model.js';
import { Clock, range, seqs, newRun, insert, commit, storeContract } from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('events', () => {
    const clock = new Clock();
    const store = sharedStore(clock);
    let a: RunRecord;
    let b: RunRecord;

    before(async () => {
      // Two runs whose commits interleave: 10 events on `a`, 4 on `b`.
      a = await insert(store(), newRun(clock), [{ type: 'run.started', payload: { i: 0 } }]);
      b = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      let i = 1;
      const ev = (): NewEvent => ({
        type: i % 3 === 0 ? 'artifact.created' : 'node.started',
        nodeId: `n${i}`,
        payload: { i: i++ },
      });
      a = await commit(store(), a, {}, [ev(), ev(), ev()]);
      b = await commit(store(), b, {}, [{ type: 'node.started' }, { type: 'artifact.created' }]);
      a = await commit(store(), a, {}, [ev(), ev()]);
      b = await commit(store(), b, {}, [{ type: 'node.started' }]);
      a = await commit(store(), a, {}, [ev(), ev(), ev(), ev()]);
    });

    it('listEvents returns one run’s events in sequence order', async () => {
      const all = await store().events.list(a.runId);
      assert.deepEqual(seqs(all), range(10));
      assert.ok(all.every((e) => e.runId === a.runId));
      assert.deepEqual(
        all.map((e) => e.payload.i),
        range(10),
      );
      assert.deepEqual(seqs(await store().events.list(b.runId)), range(4));
      assert.deepEqual(await store().events.list('run_unknown'), []);
    });

    it('listEvents(afterSeq, limit) pages by cursor without gaps or repeats', async () => {
      assert.deepEqual(seqs(await store().events.list(a.runId, 3, 4)), [4, 5, 6, 7]);
      assert.deepEqual(seqs(await store().events.list(a.runId, 7)), [8, 9]);
      assert.deepEqual(await store().events.list(a.runId, 9), []);
      assert.deepEqual(await store().events.list(a.runId, 42), []);
      const paged: RunEvent[] = [];
      for (let cursor = -1; ; ) {
        const page = await store().events.list(a.runId, cursor, 3);
        assert.ok(page.length <= 3);
        if (page.length === 0) break;
        paged.push(...page);
        cursor = page[page.length - 1]!.sequence;
      }
      assert.deepEqual(paged, await store().events.list(a.runId));
    });

    it('events.listOfTypes returns only those types, in order', async () => {
      const fizz = await store().events.listOfTypes(a.runId, ['artifact.created']);
      assert.deepEqual(seqs(fizz), [3, 6, 9]);
      assert.ok(fizz.every((e) => e.type === 'artifact.created' && e.runId === a.runId));
      assert.deepEqual(seqs(await store().events.listOfTypes(a.runId, ['node.started'])), [1, 2, 4, 5, 7, 8]);
      assert.deepEqual(seqs(await store().events.listOfTypes(b.runId, ['artifact.created'])), [2]);
      assert.deepEqual(await store().events.listOfTypes(a.runId, ['nope']), []);
    });
  });
});
