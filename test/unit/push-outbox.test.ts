// The push retry schedule (backoff, parsing) and the outbox's claim order against a real store:
// SQLite in a temp file always, PostgreSQL (own schema) when HANDOFF_TEST_PG_URL is set. Time never
// passes by sleeping: the store's clock is set before each call.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { backoffMs, parseSchedule } from '../../src/push/schedule.js';
import { openStore } from '../../src/store/connect.js';
import type { DeliveryRecord } from '../../src/store/model.js';
import { ENQUEUE_BATCH, type NewDelivery } from '../../src/store/repos/push-outbox.js';
import type { Store } from '../../src/store/store.js';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';

describe('backoffMs', () => {
  const schedule = [100, 200, 400];

  it('is half the ceiling fixed plus up to half random (jitter)', () => {
    assert.equal(
      backoffMs(schedule, 1, () => 0),
      50,
    );
    assert.equal(
      backoffMs(schedule, 1, () => 0.5),
      75,
    );
    assert.equal(
      backoffMs(schedule, 1, () => 1),
      100,
    );
    assert.equal(
      backoffMs(schedule, 2, () => 0),
      100,
    );
    assert.equal(
      backoffMs(schedule, 2, () => 1),
      200,
    );
    assert.equal(
      backoffMs(schedule, 3, () => 0.25),
      250,
    );
  });

  it('uses the attempt-th ceiling and stays at the last one past the end', () => {
    assert.equal(
      backoffMs(schedule, 3, () => 1),
      400,
    );
    assert.equal(
      backoffMs(schedule, 4, () => 1),
      400,
    );
    assert.equal(
      backoffMs(schedule, 99, () => 0),
      200,
    );
  });

  it('is always within [ceiling/2, ceiling] with the real random source', () => {
    for (let attempt = 1; attempt <= 5; attempt++) {
      const ceiling = schedule[Math.min(attempt - 1, schedule.length - 1)]!;
      for (let i = 0; i < 200; i++) {
        const ms = backoffMs(schedule, attempt);
        assert.ok(ms >= ceiling / 2 && ms <= ceiling, `attempt ${attempt}: ${ms}`);
        assert.ok(Number.isInteger(ms));
      }
    }
  });

  it('falls back to 1 s with an empty schedule', () => {
    assert.equal(
      backoffMs([], 1, () => 1),
      1000,
    );
  });
});

describe('parseSchedule', () => {
  it('reads ms, s, m and h, with spaces and fractions', () => {
    assert.deepEqual(parseSchedule('100ms,200ms,400ms'), [100, 200, 400]);
    assert.deepEqual(parseSchedule('1s, 5s ,30s,2m,1h'), [1000, 5000, 30_000, 120_000, 3_600_000]);
    assert.deepEqual(parseSchedule('1.5s'), [1500]);
    assert.deepEqual(parseSchedule('0ms'), [0]);
  });

  it('parses the default schedule of the configuration', () => {
    const s = parseSchedule('5s,30s,2m,10m,30m,1h,2h,4h,8h,8h');
    assert.equal(s.length, 10);
    assert.equal(s[0], 5000);
    assert.equal(s.at(-1), 8 * 3_600_000);
  });

  it('refuses anything else, naming the entry', () => {
    for (const bad of ['', '5', '1d', 'abc', '1s,,2s', '-1s', '1 s', '1S', 's']) {
      assert.throws(() => parseSchedule(bad), /invalid retry schedule entry/, JSON.stringify(bad));
    }
    assert.throws(() => parseSchedule('1s,2x'), /'2x'/);
  });
});

// ---------------------------------------------------------------------------------------------
// claimDue against a real store

const PG_URL = pgTestUrl();
const pgSchemas = PG_URL ? pgTestSchemas(PG_URL, 'pushunit') : undefined;
const DIALECTS: Array<'sqlite' | 'postgres'> = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const LEASE = 60_000;

after(async () => {
  await pgSchemas?.dropAll();
});

for (const dialect of DIALECTS) {
  describe(`outbox claim order (${dialect})`, () => {
    let store: Store;
    let dir: string | undefined;
    let n = 0;
    let clock = T0;
    const now = () => new Date(clock);

    before(async () => {
      if (dialect === 'sqlite') {
        dir = mkdtempSync(join(tmpdir(), 'handoff-outbox-'));
        store = await openStore({ sqliteFile: join(dir, 'handoff.db'), now });
      } else {
        store = await openStore({ databaseUrl: pgSchemas!.url, pgSchema: pgSchemas!.fresh(), now });
      }
    });
    after(async () => {
      await store?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });
    beforeEach(async () => {
      n++;
      // Each test starts from an empty outbox, so a claim sees only that test's rows.
      await store.db.deleteFrom('push_outbox').execute();
    });

    const task = () => `run_unit_${n}`;
    const delivery = (taskId: string, seq: number, extra: Partial<NewDelivery> = {}): NewDelivery => ({
      taskId,
      configId: taskId,
      tenantId: 'default',
      seq,
      final: false,
      body: JSON.stringify({ kind: 'status-update', taskId, seq }),
      ...extra,
    });
    const enqueue = (deliveries: NewDelivery[], at: number) => {
      clock = at;
      return store.outbox.enqueue(deliveries);
    };
    const claim = (owner: string, at: number, limit = 100): Promise<DeliveryRecord[]> => {
      clock = at;
      return store.outbox.claimDue(owner, LEASE, limit);
    };
    const retryDead = (tenantId: string, deliveryId: string, at: number) => {
      clock = at;
      return store.outbox.retryDead(tenantId, deliveryId);
    };
    const rowsOf = async (taskId: string) =>
      (await store.outbox.list('default', { taskId, limit: 1000 })).sort((a, b) => a.seq - b.seq);

    it('one transition with 3,000 configs enqueues every delivery (batches of ENQUEUE_BATCH rows; one statement overflowed SQLite bound parameters)', async () => {
      const t = task();
      const many = Array.from({ length: 3000 }, (_, i) => delivery(t, 5, { configId: `c${i}` }));
      await enqueue(many, T0);
      const rows = await store.db.selectFrom('push_outbox').select('config_id').where('task_id', '=', t).execute();
      assert.equal(rows.length, 3000);
      assert.equal(new Set(rows.map((r) => r.config_id)).size, 3000);
      assert.ok(ENQUEUE_BATCH <= 100, 'a batch stays far below any bound on parameters');
    });

    it('one transition with 3,000 configs enqueues every delivery (batches of ENQUEUE_BATCH rows; one statement overflowed SQLite bound parameters)', async () => {
      const t = task();
      const many = Array.from({ length: 3000 }, (_, i) => delivery(t, 5, { configId: `c${i}` }));
      await enqueue(many, T0);
      const rows = await store.db.selectFrom('push_outbox').select('config_id').where('task_id', '=', t).execute();
      assert.equal(rows.length, 3000);
      assert.equal(new Set(rows.map((r) => r.config_id)).size, 3000);
      assert.ok(ENQUEUE_BATCH <= 100, 'a batch stays far below any bound on parameters');
    });

    it('the second delivery of a config is not claimable while the first is pending; after delivered it is', async () => {
      const t = task();
      await enqueue([delivery(t, 3)], T0);
      await enqueue([delivery(t, 7, { final: true })], T0);
      const [first, second] = await rowsOf(t);
      assert.ok(first && second);
      assert.equal(first.state, 'pending');
      assert.equal(first.attempts, 0);
      assert.match(first.deliveryId, /^dlv_/);
      assert.notEqual(first.deliveryId, second.deliveryId);

      const c1 = await claim('w1', T0);
      assert.deepEqual(
        c1.map((r) => r.seq),
        [3],
      );
      assert.equal(c1[0]!.leaseOwner, 'w1');
      assert.equal(Number(c1[0]!.leaseExpiresAt), T0 + LEASE);
      // Leased and in flight: nothing of this config is claimable, by anyone.
      assert.deepEqual(await claim('w2', T0 + 1), []);

      // The attempt failed: back to pending with a retry time. The second still waits behind it,
      // even once it is due itself and the first is not.
      assert.equal(
        await store.outbox.settle(first.deliveryId, 'w1', {
          state: 'pending',
          attempts: 1,
          nextAttemptAt: T0 + 5000,
          lastStatus: 503,
          lastError: 'http_status',
        }),
        true,
      );
      assert.deepEqual(await claim('w2', T0 + 10), []);
      // The second row is blocked behind the first, so the worker's next look is the first's retry.
      assert.equal(await store.outbox.nextDueAt(), T0 + 5000, 'blocked rows do not count; the retry of the first does');
      const c2 = await claim('w2', T0 + 5000);
      assert.deepEqual(
        c2.map((r) => r.seq),
        [3],
        'the retry of the first, never the second',
      );
      assert.equal(c2[0]!.attempts, 1);

      assert.equal(
        await store.outbox.settle(first.deliveryId, 'w2', { state: 'delivered', attempts: 2, lastStatus: 200 }),
        true,
      );
      const c3 = await claim('w3', T0 + 5001);
      assert.deepEqual(
        c3.map((r) => r.seq),
        [7],
      );
      assert.equal(c3[0]!.final, true);
      const rows = await rowsOf(t);
      assert.equal(rows[0]!.state, 'delivered');
      assert.ok(rows[0]!.deliveredAt);
      assert.equal(rows[0]!.leaseOwner, undefined);
      assert.equal(rows[0]!.lastStatus, 200);
    });

    it('after the first is dead (dead-lettered), the second is claimable', async () => {
      const t = task();
      await enqueue([delivery(t, 1), delivery(t, 2)], T0);
      const c1 = await claim('w1', T0);
      assert.deepEqual(
        c1.map((r) => r.seq),
        [1],
      );
      assert.equal(
        await store.outbox.settle(c1[0]!.deliveryId, 'w1', {
          state: 'dead',
          attempts: 1,
          lastStatus: 404,
          lastError: 'http_status',
        }),
        true,
      );
      const c2 = await claim('w1', T0);
      assert.deepEqual(
        c2.map((r) => r.seq),
        [2],
      );
    });

    it('a cancelled predecessor does not block either', async () => {
      const t = task();
      await enqueue([delivery(t, 1), delivery(t, 2)], T0);
      const [first] = await rowsOf(t);
      await store.db
        .updateTable('push_outbox')
        .set({ state: 'cancelled' })
        .where('delivery_id', '=', first!.deliveryId)
        .execute();
      assert.deepEqual(
        (await claim('w1', T0)).map((r) => r.seq),
        [2],
      );
    });

    it('the order is per (task, config): other configs and other tasks are claimed side by side', async () => {
      const t = task();
      await enqueue(
        [
          delivery(t, 1),
          delivery(t, 2),
          delivery(t, 1, { configId: 'second' }),
          delivery(t, 2, { configId: 'second' }),
          delivery(`${t}_b`, 1),
          delivery(`${t}_b`, 2),
        ],
        T0,
      );
      const claimed = await claim('w1', T0);
      assert.deepEqual(
        claimed.map((r) => `${r.taskId}/${r.configId}/${r.seq}`).sort(),
        [`${t}/${t}/1`, `${t}/second/1`, `${t}_b/${t}_b/1`].sort(),
      );
    });

    it('a delivery is not claimable before it is due, nor while another worker holds its lease', async () => {
      const t = task();
      await enqueue([delivery(t, 1)], T0 + 1000);
      assert.deepEqual(await claim('w1', T0), []);
      assert.equal((await claim('w1', T0 + 1000)).length, 1);
      assert.deepEqual(await claim('w2', T0 + 1000 + LEASE - 1), []);
      // The lease expired (a crashed worker): another worker takes it over.
      const taken = await claim('w2', T0 + 1000 + LEASE + 1);
      assert.equal(taken.length, 1);
      assert.equal(taken[0]!.leaseOwner, 'w2');
      // The old owner can no longer settle it (fencing).
      assert.equal(await store.outbox.settle(taken[0]!.deliveryId, 'w1', { state: 'delivered', attempts: 1 }), false);
      assert.equal(await store.outbox.settle(taken[0]!.deliveryId, 'w2', { state: 'delivered', attempts: 1 }), true);
    });

    it('claims at most `limit` rows, the earliest due first', async () => {
      const t = task();
      await enqueue([delivery(`${t}_x`, 1)], T0 + 30);
      await enqueue([delivery(`${t}_y`, 1)], T0 + 10);
      await enqueue([delivery(`${t}_z`, 1)], T0 + 20);
      const got = await claim('w1', T0 + 100, 2);
      assert.deepEqual(got.map((r) => r.taskId).sort(), [`${t}_y`, `${t}_z`]);
    });

    it('retryDead: only a dead delivery of the same tenant goes back to pending, attempts from zero', async () => {
      const t = task();
      await enqueue([delivery(t, 1, { final: true })], T0);
      const [c] = await claim('w1', T0);
      assert.equal(await retryDead('default', c!.deliveryId, T0), undefined, 'pending, not dead');
      await store.outbox.settle(c!.deliveryId, 'w1', { state: 'dead', attempts: 4, lastError: 'http_status' });
      assert.equal(await store.outbox.hasPending(t, t), false);
      assert.equal(await retryDead('other-tenant', c!.deliveryId, T0), undefined);
      const back = await retryDead('default', c!.deliveryId, T0 + 7);
      assert.ok(back);
      assert.equal(back.state, 'pending');
      assert.equal(back.attempts, 0);
      assert.equal(Number(back.nextAttemptAt), T0 + 7);
      assert.equal(await store.outbox.hasPending(t, t), true);
      assert.equal((await claim('w1', T0 + 7)).length, 1);
    });
  });
}
