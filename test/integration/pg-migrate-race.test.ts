// Several deployments (or test suites) share one PostgreSQL database, each in its own schema.
// Kysely's migrator reads the catalog of every schema; a schema dropped meanwhile by someone else
// must not make an instance fail to start ("schema … does not exist" for a schema not its own).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { openStore } from '../../src/store/connect.js';
import { pgTestSchemas, pgTestUrl, uniqueSchemaName } from '../support/pg.js';

const url = pgTestUrl();

describe('PostgreSQL start while other schemas come and go', {
  skip: url ? false : 'HANDOFF_TEST_PG_URL is not set',
}, () => {
  const schemas = url ? pgTestSchemas(url, 'race') : undefined;
  after(async () => schemas?.dropAll());

  it('every instance migrates its own schema although other schemas are dropped meanwhile', async () => {
    let stop = false;
    let churned = 0;
    // Someone else's schemas with a few tables, created and dropped as fast as the server allows.
    const churn = async (): Promise<void> => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        while (!stop) {
          const other = uniqueSchemaName('other');
          await client.query(`create schema ${other}`);
          for (let i = 0; i < 5; i++)
            await client.query(`create table ${other}.t${i} (id serial primary key, a text, b text)`);
          await client.query(`drop schema ${other} cascade`);
          churned++;
        }
      } finally {
        await client.end();
      }
    };
    const churners = [churn(), churn()];
    const failures: string[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        try {
          const store = await openStore({ databaseUrl: url as string, pgSchema: schemas!.fresh(), pgPoolSize: 2 });
          await store.close();
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    } finally {
      stop = true;
      await Promise.all(churners);
    }
    assert.ok(churned > 0, 'other schemas were dropped while instances started');
    assert.deepEqual(failures, []);
  });
});
