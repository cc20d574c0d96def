// The store contract: the push outbox: deliveries, their order per (task, config), leases and retries.
// Run on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { DeliveryRecord, DeliveryState } from '../../src/store/model.js';
import { ENQUEUE_BATCH, type NewDelivery } from '../../src/store/repos/push-outbox.js';
import type { Store } from '../../src/store/store.js';
import { T0, Clock, uid, range, newDelivery, storeContract } from '../support/store-contract.js';

storeContract(({ withStore }) => {
  describe('outbox: push deliveries', () => {
    const LEASE = 60_000;
    /** The store's clock set to `at` for one call (deliveries are due, leased and aged by it). */
    const at = <T>(clock: Clock, ms: number, call: () => Promise<T>): Promise<T> => {
      clock.ms = ms;
      return call();
    };
    const enqueue = (store: Store, clock: Clock, deliveries: NewDelivery[], ms = T0) =>
      at(clock, ms, () => store.transaction((tx) => tx.outbox.enqueue(deliveries)));
    const claim = (store: Store, clock: Clock, owner: string, ms: number, limit = 100) =>
      at(clock, ms, () => store.outbox.claimDue(owner, LEASE, limit));
    const seqsOf = (rows: DeliveryRecord[]) => rows.map((r) => r.seq);
    /** A task's deliveries, in transition order. */
    const rowsOf = async (store: Store, taskId: string) =>
      (await store.outbox.list('tenant-a', { taskId, limit: 1000 })).sort((a, b) => a.seq - b.seq);

    it('enqueue writes one pending row per delivery, due at once, with its own id', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const t = uid('run');
        await enqueue(store, clock, []);
        await enqueue(store, clock, [
          newDelivery(t, 4),
          newDelivery(t, 4, { configId: 'other', final: true, protocolVersion: '1.0' }),
        ]);
        const rows = await store.outbox.list('tenant-a', { taskId: t });
        assert.equal(rows.length, 2);
        assert.notEqual(rows[0]?.deliveryId, rows[1]?.deliveryId);
        const mine = rows.find((r) => r.configId === t);
        assert.ok(mine);
        assert.match(mine.deliveryId, /^dlv_/);
        assert.deepEqual(mine, {
          ...newDelivery(t, 4),
          deliveryId: mine.deliveryId,
          state: 'pending',
          attempts: 0,
          nextAttemptAt: T0,
          createdAt: new Date(T0).toISOString(),
        });
        assert.equal(rows.find((r) => r.configId === 'other')?.final, true);
        assert.equal(rows.find((r) => r.configId === 'other')?.protocolVersion, '1.0', 'the version is kept');
        assert.equal('protocolVersion' in mine, false, 'no version: a 0.3 body');
        assert.equal(await store.outbox.hasPending(t, t), true);
      });
    });

    it('one transition with 3,000 configs enqueues every delivery, in batches of ENQUEUE_BATCH rows', async () => {
      // One statement for all of them once overflowed SQLite's bound on parameters (16 per row).
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const t = uid('run');
        await enqueue(
          store,
          clock,
          range(3000).map((i) => newDelivery(t, 5, { configId: `c${i}` })),
        );
        const rows = await store.outbox.list('tenant-a', { taskId: t, limit: 5000 });
        assert.equal(rows.length, 3000);
        assert.equal(new Set(rows.map((r) => r.configId)).size, 3000);
        assert.ok(ENQUEUE_BATCH <= 100, 'a batch stays far below any bound on parameters');
      });
    });

    it('a delivery enqueued in a failed transaction is not kept', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const t = uid('run');
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.outbox.enqueue([newDelivery(t, 1)]);
            throw new Error('abort');
          }),
          /abort/,
        );
        assert.deepEqual(await store.outbox.list('tenant-a', {}), []);
        assert.equal(await store.outbox.nextDueAt(), undefined);
      });
    });

    it('the second delivery of a config waits while the first is pending, then goes', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const t = uid('run');
        await enqueue(store, clock, [newDelivery(t, 3)]);
        await enqueue(store, clock, [newDelivery(t, 7, { final: true })]);
        const [first] = await rowsOf(store, t);
        assert.ok(first);

        const c1 = await claim(store, clock, 'w1', T0);
        assert.deepEqual(seqsOf(c1), [3]);
        assert.equal(c1[0]?.leaseOwner, 'w1');
        assert.equal(c1[0]?.leaseExpiresAt, T0 + LEASE);
        // Leased and in flight: nothing of this config is claimable, by anyone.
        assert.deepEqual(await claim(store, clock, 'w2', T0 + 1), []);

        // The attempt failed: back to pending with a retry time. The second still waits behind it,
        // even once it is due itself and the first is not.
        const retry = { state: 'pending', attempts: 1, nextAttemptAt: T0 + 5000, lastStatus: 503 } as const;
        assert.equal(await store.outbox.settle(first.deliveryId, 'w1', { ...retry, lastError: 'http_status' }), true);
        assert.deepEqual(await claim(store, clock, 'w2', T0 + 10), []);
        assert.equal(await store.outbox.nextDueAt(), T0 + 5000, 'blocked rows do not count; the retry does');
        const c2 = await claim(store, clock, 'w2', T0 + 5000);
        assert.deepEqual(seqsOf(c2), [3], 'the retry of the first, never the second');
        assert.equal(c2[0]?.attempts, 1);

        clock.ms = T0 + 5001;
        const delivered = { state: 'delivered', attempts: 2, lastStatus: 200 } as const;
        assert.equal(await store.outbox.settle(first.deliveryId, 'w2', delivered), true);
        const c3 = await claim(store, clock, 'w3', T0 + 5001);
        assert.deepEqual(seqsOf(c3), [7]);
        assert.equal(c3[0]?.final, true);
        const [done] = await rowsOf(store, t);
        assert.equal(done?.state, 'delivered');
        assert.equal(done?.deliveredAt, new Date(T0 + 5001).toISOString());
        assert.equal(done?.lastStatus, 200);
        assert.equal(done && 'leaseOwner' in done, false, 'settling hands the lease back');
        assert.equal(done && 'lastError' in done, false, 'an outcome replaces the last error');
      });
    });

    it('a dead-lettered or cancelled first delivery does not hold back the next', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const [dead, cancelled] = [uid('run'), uid('run')];
        await enqueue(
          store,
          clock,
          [1, 2].flatMap((seq) => [newDelivery(dead, seq), newDelivery(cancelled, seq)]),
        );
        const firsts = await claim(store, clock, 'w1', T0);
        assert.deepEqual(seqsOf(firsts), [1, 1]);
        for (const row of firsts) {
          const state: DeliveryState = row.taskId === dead ? 'dead' : 'cancelled';
          assert.equal(await store.outbox.settle(row.deliveryId, 'w1', { state, attempts: 1, lastStatus: 404 }), true);
        }
        const next = await claim(store, clock, 'w1', T0);
        assert.deepEqual(next.map((r) => `${r.taskId}/${r.seq}`).sort(), [`${dead}/2`, `${cancelled}/2`].sort());
      });
    });

    it('the order is per (task, config): other configs and other tasks are claimed side by side', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const [t, u] = [uid('run'), uid('run')];
        const both = (d: (seq: number) => NewDelivery) => [d(1), d(2)];
        await enqueue(store, clock, [
          ...both((seq) => newDelivery(t, seq)),
          ...both((seq) => newDelivery(t, seq, { configId: 'second' })),
          ...both((seq) => newDelivery(u, seq)),
        ]);
        const claimed = await claim(store, clock, 'w1', T0);
        assert.deepEqual(
          claimed.map((r) => `${r.taskId}/${r.configId}/${r.seq}`).sort(),
          [`${t}/${t}/1`, `${t}/second/1`, `${u}/${u}/1`].sort(),
        );
      });
    });

    it('claimable once due; a lease keeps others off until it expires; settling is fenced', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        await enqueue(store, clock, [newDelivery(uid('run'), 1)], T0 + 1000);
        assert.deepEqual(await claim(store, clock, 'w1', T0), []);
        assert.equal((await claim(store, clock, 'w1', T0 + 1000)).length, 1);
        assert.deepEqual(await claim(store, clock, 'w2', T0 + 1000 + LEASE - 1), []);
        // The lease expired (a crashed worker): another worker takes it over.
        const [taken] = await claim(store, clock, 'w2', T0 + 1000 + LEASE + 1);
        assert.equal(taken?.leaseOwner, 'w2');
        assert.ok(taken);
        // The old owner can no longer settle it, and its attempt changes nothing.
        assert.equal(await store.outbox.settle(taken.deliveryId, 'w1', { state: 'delivered', attempts: 1 }), false);
        assert.deepEqual(await store.outbox.get('tenant-a', taken.deliveryId), taken);
        assert.equal(await store.outbox.settle(taken.deliveryId, 'w2', { state: 'delivered', attempts: 1 }), true);
        assert.equal(await store.outbox.settle('dlv_unknown', 'w2', { state: 'delivered', attempts: 1 }), false);
      });
    });

    it('claims at most `limit` rows, the earliest due first', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const [x, y, z] = [uid('run'), uid('run'), uid('run')];
        await enqueue(store, clock, [newDelivery(x, 1)], T0 + 30);
        await enqueue(store, clock, [newDelivery(y, 1)], T0 + 10);
        await enqueue(store, clock, [newDelivery(z, 1)], T0 + 20);
        const got = await claim(store, clock, 'w1', T0 + 100, 2);
        assert.deepEqual(got.map((r) => r.taskId).sort(), [y, z].sort());
      });
    });

    it('concurrent claimers never get the same delivery and together get all of them', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const tasks = range(20).map(() => uid('run'));
        await enqueue(
          store,
          clock,
          tasks.map((t) => newDelivery(t, 1)),
        );
        const claims = await Promise.all(range(4).map((o) => store.outbox.claimDue(`owner-${o}`, LEASE, 6)));
        const all = claims.flatMap((c) => c.map((r) => r.taskId));
        assert.equal(new Set(all).size, all.length, 'no delivery claimed twice');
        assert.deepEqual(all.sort(), [...tasks].sort());
        for (const [o, c] of claims.entries()) for (const r of c) assert.equal(r.leaseOwner, `owner-${o}`);
      });
    });

    it('retryDead puts a dead delivery of that tenant back to pending, attempts from zero', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const t = uid('run');
        await enqueue(store, clock, [newDelivery(t, 1, { final: true })]);
        const [c] = await claim(store, clock, 'w1', T0);
        assert.ok(c);
        const retryAt = (ms: number, tenantId = 'tenant-a') =>
          at(clock, ms, () => store.outbox.retryDead(tenantId, c.deliveryId));
        assert.equal(await retryAt(T0), undefined, 'pending, not dead');
        await store.outbox.settle(c.deliveryId, 'w1', { state: 'dead', attempts: 4, lastError: 'http_status' });
        assert.equal(await store.outbox.hasPending(t, t), false);
        assert.equal(await retryAt(T0, 'other-tenant'), undefined, 'another tenant cannot retry it');
        assert.equal((await store.outbox.get('tenant-a', c.deliveryId))?.state, 'dead');
        const back = await retryAt(T0 + 7);
        assert.ok(back);
        assert.equal(back.state, 'pending');
        assert.equal(back.attempts, 0);
        assert.equal(back.nextAttemptAt, T0 + 7);
        assert.deepEqual(back, await store.outbox.get('tenant-a', c.deliveryId), 'returns the stored row');
        assert.equal(await store.outbox.hasPending(t, t), true);
        assert.equal((await claim(store, clock, 'w1', T0 + 7)).length, 1);
        assert.equal(await retryAt(T0 + 8), undefined, 'no longer dead');
      });
    });

    it('cancelPending cancels the pending deliveries of one config, leased or not, and nothing else', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const [t, u] = [uid('run'), uid('run')];
        await enqueue(store, clock, [newDelivery(t, 0)]);
        const [sent] = await claim(store, clock, 'w1', T0);
        assert.ok(sent);
        await store.outbox.settle(sent.deliveryId, 'w1', { state: 'delivered', attempts: 1 });
        await enqueue(store, clock, [
          newDelivery(t, 1),
          newDelivery(t, 2),
          newDelivery(t, 1, { configId: 'kept' }),
          newDelivery(u, 1, { configId: t }),
        ]);
        const [leased] = (await claim(store, clock, 'w1', T0)).filter((r) => r.taskId === t && r.configId === t);
        assert.ok(leased);
        await store.transaction((tx) => tx.outbox.cancelPending(t, t));
        const states = (await rowsOf(store, t)).filter((r) => r.configId === t).map((r) => [r.seq, r.state]);
        assert.deepEqual(states, [
          [0, 'delivered'],
          [1, 'cancelled'],
          [2, 'cancelled'],
        ]);
        const cancelled = await store.outbox.get('tenant-a', leased.deliveryId);
        assert.equal(cancelled && 'leaseOwner' in cancelled, false, 'a cancelled row holds no lease');
        assert.equal(await store.outbox.settle(leased.deliveryId, 'w1', { state: 'delivered', attempts: 1 }), false);
        assert.equal(await store.outbox.hasPending(t, t), false);
        assert.equal(await store.outbox.hasPending(t, 'kept'), true);
        assert.equal(await store.outbox.hasPending(u, t), true, 'the same config id on another task is another config');
      });
    });

    it('list and get show a tenant only its own deliveries; list is newest first, filtered, bounded', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        const [t, u] = [uid('run'), uid('run')];
        await enqueue(store, clock, [newDelivery(t, 1)], T0);
        await enqueue(store, clock, [newDelivery(t, 2)], T0 + 1);
        await enqueue(store, clock, [newDelivery(u, 1)], T0 + 2);
        await enqueue(store, clock, [newDelivery(uid('run'), 1, { tenantId: 'tenant-b' })], T0 + 3);
        const all = await store.outbox.list('tenant-a', {});
        assert.deepEqual(
          all.map((r) => `${r.taskId}/${r.seq}`),
          [`${u}/1`, `${t}/2`, `${t}/1`],
        );
        assert.deepEqual(await store.outbox.list('tenant-a', { limit: 2 }), all.slice(0, 2));
        assert.deepEqual(await store.outbox.list('tenant-a', { taskId: t }), all.slice(1));
        const [claimed] = await claim(store, clock, 'w1', T0 + 3, 1);
        assert.ok(claimed);
        await store.outbox.settle(claimed.deliveryId, 'w1', { state: 'dead', attempts: 1 });
        assert.deepEqual(
          (await store.outbox.list('tenant-a', { state: 'dead' })).map((r) => r.deliveryId),
          [claimed.deliveryId],
        );
        assert.equal((await store.outbox.list('tenant-b', {})).length, 1);
        for (const row of await store.outbox.list('tenant-a', {})) {
          assert.deepEqual(await store.outbox.get('tenant-a', row.deliveryId), row);
          assert.equal(await store.outbox.get('tenant-b', row.deliveryId), undefined, 'another tenant’s delivery');
        }
        assert.equal(await store.outbox.get('tenant-a', 'dlv_unknown'), undefined);
      });
    });

    it('nextDueAt is when the first claimable delivery becomes due: retries and expiring leases count', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        assert.equal(await store.outbox.nextDueAt(), undefined);
        const [t, u] = [uid('run'), uid('run')];
        await enqueue(store, clock, [newDelivery(t, 1)], T0 + 500);
        assert.equal(await store.outbox.nextDueAt(), T0 + 500, 'a new delivery is due when enqueued');
        const [leased] = await claim(store, clock, 'w1', T0 + 500);
        assert.ok(leased);
        assert.equal(await store.outbox.nextDueAt(), T0 + 500 + LEASE, 'a leased row comes back when its lease ends');
        await enqueue(store, clock, [newDelivery(u, 1)], T0 + 800);
        assert.equal(await store.outbox.nextDueAt(), T0 + 800);
        const [other] = await claim(store, clock, 'w1', T0 + 800);
        assert.ok(other);
        await store.outbox.settle(other.deliveryId, 'w1', { state: 'delivered', attempts: 1 });
        await store.outbox.settle(leased.deliveryId, 'w1', {
          state: 'pending',
          attempts: 1,
          nextAttemptAt: T0 + 9000,
        });
        assert.equal(await store.outbox.nextDueAt(), T0 + 9000, 'delivered rows never count');
        assert.equal(typeof (await store.outbox.nextDueAt()), 'number');
      });
    });

    it('oldestPendingAgeMs is the age of the oldest pending delivery by the store clock, or 0', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        assert.equal(await store.outbox.oldestPendingAgeMs(), 0);
        const [t, u] = [uid('run'), uid('run')];
        await enqueue(store, clock, [newDelivery(t, 1)], T0);
        await enqueue(store, clock, [newDelivery(u, 1)], T0 + 4000);
        clock.ms = T0 + 5000;
        assert.equal(await store.outbox.oldestPendingAgeMs(), 5000);
        const [oldest] = (await claim(store, clock, 'w1', T0 + 5000)).filter((r) => r.taskId === t);
        assert.ok(oldest);
        await store.outbox.settle(oldest.deliveryId, 'w1', { state: 'delivered', attempts: 1 });
        assert.equal(await store.outbox.oldestPendingAgeMs(), 1000, 'the next oldest');
      });
    });

    it('releaseLeases(owner) hands back only that owner’s leases; releaseLeases() every lease', async () => {
      const clock = new Clock();
      await withStore(clock, async (store) => {
        await enqueue(
          store,
          clock,
          range(5).map(() => newDelivery(uid('run'), 1)),
        );
        const mine = await claim(store, clock, 'w1', T0, 3);
        const theirs = await claim(store, clock, 'w2', T0, 10);
        assert.deepEqual([mine.length, theirs.length], [3, 2]);
        const [done] = mine;
        assert.ok(done);
        await store.outbox.settle(done.deliveryId, 'w1', { state: 'delivered', attempts: 1 });
        await store.outbox.releaseLeases('w1');
        const again = await claim(store, clock, 'w3', T0, 10);
        assert.deepEqual(
          again.map((r) => r.deliveryId).sort(),
          mine
            .slice(1)
            .map((r) => r.deliveryId)
            .sort(),
          'claimable again at once, without waiting for the lease',
        );
        await store.outbox.releaseLeases();
        const rest = await claim(store, clock, 'w4', T0, 10);
        assert.equal(rest.length, 4, 'every lease handed back');
        assert.equal((await store.outbox.get('tenant-a', done.deliveryId))?.state, 'delivered');
      });
    });
  });
});
