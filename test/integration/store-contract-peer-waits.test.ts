// The store contract: the peerWaits repository and run wake-ups (a2a.invoke). Run on SQLite, and on
// PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Clock, newRun, insert, storeContract } from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('peer waits and run wake-ups (a2a.invoke)', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('upsert makes one wait per (run, node, ordinal), keeping its id when the call is made again', async () => {
      const run = await insert(store(), newRun(clock, { status: 'running' }));
      const key = { runId: run.runId, nodeId: 'call', ordinal: 0 };
      const first = await store().peerWaits.upsert({ ...key, target: { agent: 'reviewer' } });
      assert.match(first.waitId, /^pw_[A-Za-z0-9_-]{22}$/);
      assert.deepEqual(
        { state: first.state, target: first.target, peerTaskId: first.peerTaskId, tokenHash: first.tokenHash },
        { state: 'waiting', target: { agent: 'reviewer' }, peerTaskId: undefined, tokenHash: undefined },
      );
      const linked = await store().peerWaits.upsert({
        ...key,
        target: { agent: 'reviewer' },
        peerTaskId: 't1',
        tokenHash: 'ab',
      });
      assert.equal(linked.waitId, first.waitId);
      assert.equal(linked.peerTaskId, 't1');
      assert.equal(linked.tokenHash, 'ab');
      // A re-executed call without a token keeps the one registered.
      const again = await store().peerWaits.upsert({ ...key, target: { agent: 'reviewer' }, peerTaskId: 't1' });
      assert.equal(again.tokenHash, 'ab');
      const next = await store().peerWaits.upsert({ ...key, ordinal: 1, target: { url: 'https://x.example' } });
      assert.notEqual(next.waitId, first.waitId);
      assert.deepEqual(
        (await store().peerWaits.forRun(run.runId)).map((w) => w.waitId).sort(),
        [first.waitId, next.waitId].sort(),
      );
      assert.deepEqual(await store().peerWaits.get(first.waitId), again);
      assert.equal(await store().peerWaits.get('pw_unknown'), undefined);
    });

    it("requestCancel marks the run's waiting waits, linked or not, in the caller's transaction; finish and retry", async () => {
      const run = await insert(store(), newRun(clock, { status: 'running' }));
      const other = await insert(store(), newRun(clock, { status: 'running' }));
      const linked = await store().peerWaits.upsert({
        runId: run.runId,
        nodeId: 'a',
        ordinal: 0,
        target: { agent: 'b' },
        peerTaskId: 't',
      });
      const unlinked = await store().peerWaits.upsert({
        runId: run.runId,
        nodeId: 'b',
        ordinal: 0,
        target: { agent: 'b' },
      });
      const others = await store().peerWaits.upsert({
        runId: other.runId,
        nodeId: 'a',
        ordinal: 0,
        target: { agent: 'b' },
        peerTaskId: 'u',
      });
      await assert.rejects(
        store().transaction(async (tx) => {
          assert.equal(await tx.peerWaits.requestCancel(run.runId), 2);
          throw new Error('rolled back');
        }),
      );
      assert.equal(
        (await store().peerWaits.get(linked.waitId))?.state,
        'waiting',
        'a rolled-back cancel marks nothing',
      );
      assert.equal(await store().transaction((tx) => tx.peerWaits.requestCancel(run.runId)), 2);
      // A wait with no peer task: its send may have made one whose answer was lost (src/peers/cancels.ts).
      assert.equal((await store().peerWaits.get(unlinked.waitId))?.state, 'cancel');
      assert.equal((await store().peerWaits.get(others.waitId))?.state, 'waiting');
      const due = await store().peerWaits.dueCancels(10);
      assert.deepEqual(due.map((w) => w.waitId).sort(), [linked.waitId, unlinked.waitId].sort());
      await store().peerWaits.finish(unlinked.waitId);
      assert.equal(await store().peerWaits.nextCancelAt(), clock.ms);
      await store().peerWaits.retryCancel(linked.waitId, clock.ms + 5_000);
      assert.deepEqual(await store().peerWaits.dueCancels(10), [], 'not due before its retry time');
      assert.equal((await store().peerWaits.get(linked.waitId))?.attempts, 1);
      assert.equal(await store().peerWaits.nextCancelAt(), clock.ms + 5_000);
      await store().peerWaits.finish(linked.waitId);
      assert.equal((await store().peerWaits.get(linked.waitId))?.state, 'done');
      assert.equal(await store().peerWaits.nextCancelAt(), undefined);
    });

    it("runs.wake brings a sleeping run's timer to now; a leased, due, or not running run is left alone", async () => {
      const later = clock.ms + 60_000;
      const sleeping = await insert(store(), newRun(clock, { status: 'running', wakeAt: later }));
      const leased = await insert(
        store(),
        newRun(clock, { status: 'running', wakeAt: later, leaseOwner: 'w', leaseExpiresAt: clock.ms + 10_000 }),
      );
      const due = await insert(store(), newRun(clock, { status: 'running' }));
      const waiting = await insert(store(), newRun(clock, { status: 'waiting-input', wakeAt: later }));
      assert.equal(await store().runs.wake(sleeping.runId, 0), true);
      assert.equal((await store().runs.get(sleeping.runId))?.wakeAt, clock.ms);
      for (const r of [leased, due, waiting]) {
        assert.equal(await store().runs.wake(r.runId, 0), false, r.status);
        assert.deepEqual(await store().runs.get(r.runId), r, 'unchanged');
      }
      assert.equal(await store().runs.wake('run_unknown', 0), false);
    });

    it("runs.wake never brings a read closer than the spacing to the run's last commit; once due, wakes do nothing", async () => {
      const later = clock.ms + 60_000;
      const run = await insert(store(), newRun(clock, { status: 'running', wakeAt: later }));
      clock.advance(400); // committed 400 ms ago: a 1 s spacing puts the read 1 s from now
      assert.equal(await store().runs.wake(run.runId, 1_000), true);
      assert.equal((await store().runs.get(run.runId))?.wakeAt, clock.ms + 1_000);
      assert.equal(await store().runs.wake(run.runId, 1_000), false, 'already due by then');
      clock.advance(700); // 1.1 s since the commit: now
      assert.equal(await store().runs.wake(run.runId, 1_000), true);
      assert.equal((await store().runs.get(run.runId))?.wakeAt, clock.ms);
      assert.equal(await store().runs.wake(run.runId, 1_000), false, 'due: nothing to bring forward');
    });
  });
});
