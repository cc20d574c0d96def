// The store contract: the idempotency repository: put, get, concurrent creators, purge. Run on SQLite,
// and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HOUR, DAY, Clock, uid, range, newRun, storeContract } from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('idempotency', () => {
    const clock = new Clock();
    const store = sharedStore(clock);
    const rec = (
      key: string,
      over: Partial<{ tenantId: string; scope: string; response: unknown; statusCode: number }> = {},
    ) => ({
      tenantId: 'tenant-a',
      scope: 'POST /v1/runs',
      key,
      bodyHash: `sha256:${key}`,
      statusCode: 201,
      response: { runId: `run-for-${key}`, nested: { list: [1, 'two', null] }, text: 'ü ✓' },
      ...over,
    });

    it('put then get round-trips; (tenant, scope, key) are independent', async () => {
      const key = uid('key');
      await store().transaction((tx) => tx.idempotency.put(rec(key)));
      await store().transaction((tx) => tx.idempotency.put(rec(key, { tenantId: 'tenant-b', response: 'b' })));
      await store().transaction((tx) => tx.idempotency.put(rec(key, { scope: 'message/send', response: ['s'] })));
      await store().transaction(async (tx) => {
        assert.deepEqual(await tx.idempotency.get('tenant-a', 'POST /v1/runs', key), {
          ...rec(key),
          createdAt: clock.iso(),
        });
        assert.equal((await tx.idempotency.get('tenant-b', 'POST /v1/runs', key))?.response, 'b');
        assert.deepEqual((await tx.idempotency.get('tenant-a', 'message/send', key))?.response, ['s']);
        assert.equal(await tx.idempotency.get('tenant-c', 'POST /v1/runs', key), undefined);
        assert.equal(await tx.idempotency.get('tenant-a', 'POST /v1/runs', `${key}-other`), undefined);
      });
    });

    it('a duplicate put of the same (tenant, scope, key) fails and keeps the first', async () => {
      const key = uid('key');
      await store().transaction((tx) => tx.idempotency.put(rec(key)));
      await assert.rejects(
        store().transaction((tx) => tx.idempotency.put(rec(key, { statusCode: 500, response: 'second' }))),
      );
      const stored = await store().transaction((tx) => tx.idempotency.get('tenant-a', 'POST /v1/runs', key));
      assert.equal(stored?.statusCode, 201);
      assert.deepEqual(stored?.response, rec(key).response);
    });

    it('concurrent creators: exactly one wins, the others see it or fail, \
and nothing of theirs commits', async () => {
      const key = uid('key');
      const creators = range(4);
      const results = await Promise.allSettled(
        creators.map((i) =>
          store().transaction(async (tx) => {
            const existing = await tx.idempotency.get('tenant-a', 'POST /v1/runs', key);
            if (existing) return 'existing' as const;
            const run = newRun(clock, { runId: `${key}-run-${i}` });
            await tx.insertRun(run, [{ type: 'run.started' }]);
            await tx.idempotency.put(rec(key, { response: { runId: run.runId } }));
            return 'created' as const;
          }),
        ),
      );
      const created = creators.filter((i) => {
        const r = results[i]!;
        return r.status === 'fulfilled' && r.value === 'created';
      });
      const outcomes = results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected'));
      assert.equal(created.length, 1, `exactly one creator wins: ${JSON.stringify(outcomes)}`);
      const winner = `${key}-run-${created[0]}`;
      const stored = await store().transaction((tx) => tx.idempotency.get('tenant-a', 'POST /v1/runs', key));
      assert.deepEqual(stored?.response, { runId: winner });
      for (const i of creators) {
        const exists = (await store().runs.get(`${key}-run-${i}`)) !== undefined;
        assert.equal(exists, i === created[0], `run of creator ${i} ${exists ? 'exists' : 'absent'}`);
      }
    });

    it('purgeIdempotencyBefore deletes only records created before the cutoff', async () => {
      const old = uid('key');
      const young = uid('key');
      clock.advance(DAY);
      await store().transaction((tx) => tx.idempotency.put(rec(old)));
      clock.advance(2 * HOUR);
      const cutoff = clock.now();
      clock.advance(1);
      await store().transaction((tx) => tx.idempotency.put(rec(young)));
      await store().idempotency.purgeBefore(cutoff);
      await store().transaction(async (tx) => {
        assert.equal(await tx.idempotency.get('tenant-a', 'POST /v1/runs', old), undefined);
        assert.equal((await tx.idempotency.get('tenant-a', 'POST /v1/runs', young))?.key, young);
      });
    });
  });
});
