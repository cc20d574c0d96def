// PostgreSQL: an idle pooled connection the server ends (a restart, a failover, an administrator)
// must not end the process. pg raises it as an 'error' event on the pool, which kills the process
// when nobody listens; the store listens, and the next query gets a fresh connection.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openStore } from '../../src/store/connect.js';
import { PG_URL } from '../support/host.js';
import { pgTestSchemas } from '../support/pg.js';
import { until } from '../support/until.js';

const schemas = PG_URL ? pgTestSchemas(PG_URL, 'pool') : undefined;

describe('PostgreSQL pool', { skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set' }, () => {
  after(async () => schemas?.dropAll());

  it('survives the server ending its idle connections, and the next query works', async () => {
    const heard: Error[] = [];
    const schema = schemas!.fresh();
    const store = await openStore({ databaseUrl: schemas!.url, pgSchema: schema, onPoolError: (e) => heard.push(e) });
    const admin = new pg.Client({ connectionString: schemas!.url });
    await admin.connect();
    try {
      // The pool's one connection (queries run one at a time here), now idle; only it is ended.
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db);
      await admin.query('select pg_terminate_backend($1)', [rows[0]?.pid]);
      await until('the pool to hear its connection end', () => heard.length > 0);
      assert.equal(await store.runs.count(), 0, 'a fresh connection answers');
    } finally {
      await admin.end();
      await store.close();
    }
  });
});
