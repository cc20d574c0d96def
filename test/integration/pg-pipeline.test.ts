// PostgreSQL: a transaction's writes whose results are not read go out together with its next
// awaited statement (src/store/pg-driver.ts). What must hold: a write-only transaction is one
// round trip; a write sent ahead that fails fails its transaction with its own error, and nothing
// of that transaction commits; a read after such a write reports the write's error; the pooled
// connection serves the next transaction as if nothing happened. Fixed statements are prepared
// once per connection; a schema change under one fails it once, and the next query works.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { openStore } from '../../src/store/connect.js';
import type { Store } from '../../src/store/store.js';
import { PG_URL } from '../support/host.js';
import { pgTestSchemas } from '../support/pg.js';
import { newRun } from '../support/runs.js';

const schemas = PG_URL ? pgTestSchemas(PG_URL, 'pipe') : undefined;

const key = (k: string) => ({
  tenantId: 'tenant-a',
  scope: 'POST /v1/runs',
  key: k,
  bodyHash: 'h',
  statusCode: 201,
  response: { runId: k },
});

describe('PostgreSQL pipelined transactions', { skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set' }, () => {
  let store: Store;
  let schema: string;
  let roundTrips = 0;

  before(async () => {
    // One pooled connection: every test below reuses the one an earlier failure went through.
    schema = schemas!.fresh();
    store = await openStore({
      databaseUrl: schemas!.url,
      pgSchema: schema,
      pgPoolSize: 1,
      onRoundTrip: () => roundTrips++,
    });
  });
  after(async () => {
    await store?.close();
    await schemas?.dropAll();
  });

  it('a transaction that only writes is one round trip, and it commits', async () => {
    const run = newRun();
    const at = roundTrips;
    await store.transaction(async (tx) => {
      await tx.insertRun(run, [{ type: 'run.started' }, { type: 'node.started', nodeId: 'start' }]);
      await tx.idempotency.put(key(run.runId));
    });
    assert.equal(roundTrips - at, 1);
    assert.equal((await store.runs.get(run.runId))?.nextSeq, 2);
    assert.equal((await store.events.list(run.runId)).length, 2);
  });

  it('a write sent ahead that fails fails its transaction with its own error, and nothing of it commits', async () => {
    await store.transaction((tx) => tx.idempotency.put(key('k1')));
    const run = newRun();
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.insertRun(run, [{ type: 'run.started' }]);
        await tx.idempotency.put(key('k1')); // the primary key is taken
      }),
      (err: { code?: string }) => err.code === '23505',
    );
    assert.equal(await store.runs.get(run.runId), undefined);
    assert.deepEqual(await store.events.list(run.runId), []);
  });

  it('a read after a failed write sent ahead reports that write, not the aborted transaction', async () => {
    await store.transaction((tx) => tx.idempotency.put(key('k2')));
    let readError: { code?: string } | undefined;
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.idempotency.put(key('k2'));
        try {
          await tx.getRun('run_absent');
        } catch (err) {
          readError = err as { code?: string };
          throw err;
        }
      }),
      (err: { code?: string }) => err.code === '23505',
    );
    assert.equal(readError?.code, '23505');
  });

  it('the connection serves the next transaction normally', async () => {
    const run = newRun();
    await store.transaction(async (tx) => {
      await tx.insertRun(run, []);
      assert.equal((await tx.getRun(run.runId, { forUpdate: true }))?.runId, run.runId);
    });
    assert.equal((await store.runs.get(run.runId))?.status, 'pending');
  });

  it('a prepared statement outdated by a schema change fails once; the connection is replaced', async () => {
    const run = newRun();
    await store.transaction((tx) => tx.insertRun(run, []));
    assert.equal((await store.runs.get(run.runId))?.runId, run.runId); // prepared on the one connection
    const admin = new pg.Client({ connectionString: schemas!.url });
    await admin.connect();
    try {
      await admin.query(`alter table ${schema}.runs add column later_column integer`);
    } finally {
      await admin.end();
    }
    await assert.rejects(store.runs.get(run.runId), (err: { code?: string }) => err.code === '0A000');
    assert.equal((await store.runs.get(run.runId))?.runId, run.runId);
  });
});
