// The store contract: the runs repository's leases and timers: claim, renew, release, nextWakeAt. Run
// on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError } from '../../src/store/errors.js';
import { RUN_STATUSES, type RunRecord, type RunStatus } from '../../src/store/model.js';
import {
  T0,
  DAY,
  Clock,
  range,
  ids,
  newRun,
  insert,
  commit,
  mustGet,
  assertGapFree,
  storeContract,
} from '../support/store-contract.js';

storeContract(({ withStore }) => {
  describe('leases: claimRuns / renewLease / releaseLease / releaseAllLeases', () => {
    it('claims only pending/running/cancelling runs that are due, and waiting runs past a gate deadline, \
unleased (or whose lease expired)', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const byStatus = new Map<RunStatus, RunRecord>();
        for (const status of RUN_STATUSES) byStatus.set(status, await insert(store, newRun(clock, { status })));
        const duePast = await insert(store, newRun(clock, { status: 'running', wakeAt: clock.ms - 10_000 }));
        const dueNow = await insert(store, newRun(clock, { status: 'pending', wakeAt: clock.ms }));
        const notDue = await insert(store, newRun(clock, { status: 'running', wakeAt: clock.ms + 1 }));
        // A waiting run's timer is its gate's deadline: due, the worker expires the gate.
        const deadlinePassed = await insert(store, newRun(clock, { status: 'waiting-approval', wakeAt: clock.ms - 1 }));
        const deadlineNow = await insert(store, newRun(clock, { status: 'waiting-input', wakeAt: clock.ms }));
        const deadlineAhead = await insert(store, newRun(clock, { status: 'waiting-approval', wakeAt: clock.ms + 1 }));
        const deadlineLeased = await insert(
          store,
          newRun(clock, {
            status: 'waiting-input',
            wakeAt: clock.ms - 1,
            leaseOwner: 'other',
            leaseExpiresAt: clock.ms + 1,
          }),
        );
        const leased = await insert(
          store,
          newRun(clock, { status: 'running', leaseOwner: 'other', leaseExpiresAt: clock.ms + 1 }),
        );
        const expired = await insert(
          store,
          newRun(clock, { status: 'running', leaseOwner: 'other', leaseExpiresAt: clock.ms - 1 }),
        );

        const claimed = await store.runs.claim('w1', 1000, 100);
        const want = [
          byStatus.get('pending')!,
          byStatus.get('running')!,
          byStatus.get('cancelling')!,
          duePast,
          dueNow,
          expired,
          deadlinePassed,
          deadlineNow,
        ];
        assert.deepEqual(ids(claimed), ids(want));
        for (const run of claimed) {
          assert.equal(run.leaseOwner, 'w1');
          assert.equal(run.leaseExpiresAt, clock.ms + 1000);
          assert.equal(typeof run.leaseExpiresAt, 'number');
          assert.deepEqual(run, await store.runs.get(run.runId), 'claimRuns returns the stored, leased record');
        }
        for (const run of [...byStatus.values(), notDue, deadlineAhead, deadlineLeased, leased]) {
          if (want.some((w) => w.runId === run.runId)) continue;
          assert.deepEqual(await store.runs.get(run.runId), run, `${run.status} run untouched`);
        }
      });
    });

    it('claiming changes only the lease', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const run = await insert(store, newRun(clock, { inputs: { a: 1 }, metadata: { m: true } }), [
          { type: 'run.started' },
        ]);
        clock.advance(10);
        const [claimed] = await store.runs.claim('w1', 500, 10);
        assert.ok(claimed);
        const strip = ({ leaseOwner: _o, leaseExpiresAt: _e, version: _v, updatedAt: _u, ...rest }: RunRecord) => rest;
        assert.deepEqual(strip(claimed), strip(run));
        await assertGapFree(store, run.runId, 1);
      });
    });

    it('respects the limit', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        for (let i = 0; i < 5; i++) await insert(store, newRun(clock));
        const first = await store.runs.claim('w1', 1000, 2);
        const second = await store.runs.claim('w2', 1000, 10);
        assert.equal(first.length, 2);
        assert.equal(second.length, 3);
        assert.equal(new Set([...ids(first), ...ids(second)]).size, 5);
        assert.deepEqual(await store.runs.claim('w3', 1000, 10), []);
      });
    });

    it('a claimed run is not claimed again, by anyone, until its lease expires', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const run = await insert(store, newRun(clock));
        assert.deepEqual(ids(await store.runs.claim('w1', 1000, 10)), [run.runId]);
        assert.deepEqual(await store.runs.claim('w2', 1000, 10), []);
        assert.deepEqual(await store.runs.claim('w1', 1000, 10), [], 'not even by its holder');
        clock.advance(999);
        assert.deepEqual(await store.runs.claim('w2', 1000, 10), []);
        clock.advance(2);
        const [taken] = await store.runs.claim('w2', 1000, 10);
        assert.equal(taken?.runId, run.runId);
        assert.equal(taken?.leaseOwner, 'w2');
        assert.equal(taken?.leaseExpiresAt, clock.ms + 1000);
        assert.equal(await store.runs.renewLease(run.runId, 'w1', 1000), false, 'the old holder has lost it');
        assert.deepEqual(await store.runs.claim('w1', 1000, 10), []);
      });
    });

    it('a durable timer makes the run claimable only once due', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const run = await insert(store, newRun(clock, { status: 'running', wakeAt: clock.ms + 5000 }));
        assert.deepEqual(await store.runs.claim('w1', 1000, 10), []);
        clock.advance(4999);
        assert.deepEqual(await store.runs.claim('w1', 1000, 10), []);
        clock.advance(1);
        assert.deepEqual(ids(await store.runs.claim('w1', 1000, 10)), [run.runId]);
      });
    });

    it('renewLease extends a lease its owner holds, and only that', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const run = await insert(store, newRun(clock));
        await store.runs.claim('w1', 1000, 10);
        clock.advance(500);
        assert.equal(await store.runs.renewLease(run.runId, 'w1', 2000), true);
        assert.equal((await mustGet(store, run.runId)).leaseExpiresAt, clock.ms + 2000);
        clock.advance(1500); // past the first expiry, within the renewed one
        assert.deepEqual(await store.runs.claim('w2', 1000, 10), []);
        assert.equal(await store.runs.renewLease(run.runId, 'w2', 60_000), false, 'not the holder');
        assert.equal((await mustGet(store, run.runId)).leaseExpiresAt, clock.ms + 500);
        assert.equal(await store.runs.renewLease('run_unknown', 'w1', 1000), false);
        await store.runs.releaseLease(run.runId, 'w1');
        assert.equal(await store.runs.renewLease(run.runId, 'w1', 1000), false, 'a released lease cannot be renewed');
      });
    });

    it('releaseLease frees the run at once, but only for its owner', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const run = await insert(store, newRun(clock));
        await store.runs.claim('w1', 60_000, 10);
        await store.runs.releaseLease(run.runId, 'w2');
        assert.equal((await mustGet(store, run.runId)).leaseOwner, 'w1', 'a non-owner cannot release');
        await store.runs.releaseLease(run.runId, 'w1');
        const freed = await mustGet(store, run.runId);
        assert.equal('leaseOwner' in freed, false);
        assert.equal('leaseExpiresAt' in freed, false);
        assert.deepEqual(ids(await store.runs.claim('w2', 1000, 10)), [run.runId], 'claimable without waiting');
      });
    });

    it('releaseAllLeases frees every lease of one owner and returns how many', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        for (let i = 0; i < 5; i++) await insert(store, newRun(clock));
        const mine = await store.runs.claim('w1', 60_000, 3);
        const theirs = await store.runs.claim('w2', 60_000, 10);
        assert.equal(mine.length, 3);
        assert.equal(theirs.length, 2);
        assert.equal(await store.runs.releaseLeases('w1'), 3);
        for (const run of mine) assert.equal('leaseOwner' in (await mustGet(store, run.runId)), false);
        for (const run of theirs) assert.equal((await mustGet(store, run.runId)).leaseOwner, 'w2');
        assert.equal(await store.runs.releaseLeases('w1'), 0);
        assert.equal(await store.runs.releaseLeases('nobody'), 0);
        assert.deepEqual(ids(await store.runs.claim('w3', 1000, 10)), ids(mine));
      });
    });

    it('concurrent claimers never get the same run and together get all of them', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        for (const [owners, limit] of [
          [2, 10],
          [2, 10],
          [2, 10],
          [4, 5],
          [4, 5],
          [5, 6], // more room than runs: still no run twice
        ] as const) {
          const runs: RunRecord[] = [];
          for (let i = 0; i < 20; i++) runs.push(await insert(store, newRun(clock)));
          const claims = await Promise.all(range(owners).map((o) => store.runs.claim(`owner-${o}`, 60_000, limit)));
          const all = claims.flatMap((c) => c.map((r) => r.runId));
          assert.equal(new Set(all).size, all.length, `no run returned twice (${owners} owners × ${limit})`);
          assert.deepEqual([...all].sort(), ids(runs), 'together they claimed all 20');
          for (const [o, claim] of claims.entries()) {
            assert.ok(claim.length <= limit);
            for (const r of claim) assert.equal((await mustGet(store, r.runId)).leaseOwner, `owner-${o}`);
          }
          // Retire this round's runs so the next round starts from exactly 20 runnable ones.
          for (const r of runs) {
            const cur = await mustGet(store, r.runId);
            await commit(store, cur, {
              status: 'completed',
              completedAt: clock.iso(),
              leaseOwner: undefined,
              leaseExpiresAt: undefined,
            });
          }
        }
      });
    });

    it('commitRun keeps a lease renewed after its `before` was read', {}, async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        await insert(store, newRun(clock));
        const [claimed] = await store.runs.claim('w1', 1000, 10); // lease until T0+1000
        assert.ok(claimed);
        clock.advance(800);
        assert.equal(await store.runs.renewLease(claimed.runId, 'w1', 1000), true); // until T0+1800
        const after = await commit(store, claimed, { status: 'running' }, [{ type: 'run.started' }]);
        assert.equal(after.leaseExpiresAt, T0 + 1800, 'returned record');
        assert.equal((await mustGet(store, claimed.runId)).leaseExpiresAt, T0 + 1800, 'stored record');
        clock.advance(400); // T0+1200: past the stale expiry, inside the renewed one
        assert.deepEqual(await store.runs.claim('w2', 1000, 10), [], 'no second worker while w1 holds a live lease');
      });
    });

    it('a commit from a worker whose lease was taken over does not hand the lease back to it', {}, async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        await insert(store, newRun(clock));
        const [mine] = await store.runs.claim('w1', 1000, 10);
        assert.ok(mine);
        clock.advance(1001);
        const [theirs] = await store.runs.claim('w2', 1000, 10);
        assert.equal(theirs?.runId, mine.runId);
        // w1 still believes it holds the run and commits from its old snapshot.
        await commit(store, mine, { status: 'running' }, [{ type: 'run.started' }]).catch((err: unknown) => {
          if (!(err instanceof ConflictError)) throw err; // rejecting the stale holder is fine too
        });
        const now = await mustGet(store, mine.runId);
        assert.equal(now.leaseOwner, 'w2');
        assert.equal(now.leaseExpiresAt, clock.ms + 1000);
        assert.equal(await store.runs.renewLease(mine.runId, 'w1', 1000), false);
      });
    });
  });

  describe('nextWakeAt', () => {
    it('is the earliest timer among runnable runs and gate deadlines, as a number, or undefined', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        assert.equal(await store.runs.nextWakeAt(), undefined);
        await insert(store, newRun(clock, { status: 'pending' }));
        await insert(store, newRun(clock, { status: 'waiting-approval' }));
        // A stale lease on a waiting run without a deadline is nobody's work: no wake-up for it.
        await insert(
          store,
          newRun(clock, { status: 'waiting-input', leaseOwner: 'gone', leaseExpiresAt: clock.ms - 1 }),
        );
        await insert(store, newRun(clock, { status: 'completed', wakeAt: T0 + 500, completedAt: clock.iso() }));
        assert.equal(await store.runs.nextWakeAt(), undefined, 'no runnable run has a timer');
        await insert(store, newRun(clock, { status: 'waiting-approval', wakeAt: T0 + 90 * DAY + 1000 }));
        assert.equal(await store.runs.nextWakeAt(), T0 + 90 * DAY + 1000, 'a gate deadline is a timer');
        await insert(store, newRun(clock, { status: 'running', wakeAt: T0 + 90 * DAY }));
        assert.equal(await store.runs.nextWakeAt(), T0 + 90 * DAY);
        await insert(store, newRun(clock, { status: 'pending', wakeAt: T0 + 3000 }));
        await insert(store, newRun(clock, { status: 'cancelling', wakeAt: T0 + 2000 }));
        const next = await store.runs.nextWakeAt();
        assert.equal(next, T0 + 2000);
        assert.equal(typeof next, 'number');
      });
    });
  });
});
