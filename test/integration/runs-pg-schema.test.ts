// A host told to use its own PostgreSQL schema (HANDOFF_PG_SCHEMA) must start and serve runs
// whatever other schemas of the same database hold — e.g. another suite or host migrated at the
// same time. Runs only when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { PG_URL, startTestHost, withPg } from '../support/host.js';

describe('PostgreSQL schema isolation', { skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set' }, () => {
  const decoy = `handoff_decoy_${randomBytes(6).toString('hex')}`;
  before(async () => {
    // Another schema that already holds Kysely's migration bookkeeping, as any migrated one does.
    await withPg(async (c) => {
      await c.query(`create schema ${decoy}`);
      await c.query(
        `create table ${decoy}.kysely_migration` +
          ' (name varchar(255) not null primary key, timestamp varchar(255) not null)',
      );
      await c.query(
        `create table ${decoy}.kysely_migration_lock` +
          ' (id varchar(255) not null primary key, is_locked integer not null default 0)',
      );
    });
  });
  after(async () => {
    await withPg((c) => c.query(`drop schema if exists ${decoy} cascade`));
  });

  // Regression: migrate() once built Kysely's Migrator without `migrationTableSchema`; Kysely then
  // looked for its tables in every schema and failed with 'relation "kysely_migration_lock" does
  // not exist' whenever another schema already held them.
  it('a host migrates its fresh schema while another schema holds kysely_migration tables', async () => {
    const t = await startTestHost({ pg: true });
    try {
      const runId = await t.createRun('echo', { prompt: 'isolated' });
      assert.equal((await t.waitForStatus(runId, ['completed'])).status, 'completed');
    } finally {
      await t.close();
    }
  });
});
