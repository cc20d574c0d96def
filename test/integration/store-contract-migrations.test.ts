// The store contract: migrations: re-opening a database, and several processes migrating one new
// database at once; on PostgreSQL, two schemas in one database. Run on SQLite, and on PostgreSQL when
// HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import type { OpenStoreOptions } from '../../src/store/connect.js';
import { openStore } from '../../src/store/connect.js';
import { migrationProvider } from '../../src/store/migrations.js';
import type { Store } from '../../src/store/store.js';
import { Clock, uid, range, seqs, newRun, newInterrupt, insert, storeContract } from '../support/store-contract.js';
import { pgTestDatabases, pgTestUrl, uniqueSchemaName } from '../support/pg.js';

/**
 * `n` processes that open stores on command, each round on one database for all of them at
 * the same moment (the code is loaded and warmed before the first round), as several host
 * instances starting together would. Returns, per round, what each process saw: 'ok' or an error.
 */
async function openTogether(rounds: OpenStoreOptions[], n: number): Promise<string[][]> {
  const connect = new URL('../../src/store/connect.js', import.meta.url).href;
  const child = `
    const { openStore } = await import(process.argv[1]);
    const { createInterface } = await import('node:readline');
    await (await openStore({ sqliteFile: ':memory:' })).close();
    process.stdout.write('ready\\n');
    for await (const line of createInterface({ input: process.stdin })) {
      try {
        const store = await openStore(JSON.parse(line));
        await store.close();
        process.stdout.write('ok\\n');
      } catch (err) {
        process.stdout.write(JSON.stringify(String((err && err.message) || err)) + '\\n');
      }
    }
    process.exit(0);`;
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--test'));
  const procs = range(n).map(() =>
    spawn(process.execPath, [...execArgv, '--input-type=module', '-e', child, connect], {
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  try {
    const lines = procs.map((p) => {
      let stderr = '';
      p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const it = createInterface({ input: p.stdout })[Symbol.asyncIterator]();
      return async (): Promise<string> => {
        const next = await it.next();
        if (next.done) throw new Error(`store process ended early: ${stderr}`);
        return next.value;
      };
    });
    for (const read of lines) assert.equal(await read(), 'ready');
    const seen: string[][] = [];
    for (const opts of rounds) {
      for (const p of procs) p.stdin.write(`${JSON.stringify(opts)}\n`);
      seen.push(await Promise.all(lines.map((read) => read())));
    }
    return seen;
  } finally {
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('close', () => resolve());
            p.stdin.end();
          }),
      ),
    );
  }
}

storeContract(({ open: openTracked, close, locate }) => {
  describe('migrations', () => {
    const expectedMigrations = async (store: Store): Promise<string[]> =>
      Object.keys(await migrationProvider(store.dialect).getMigrations()).sort();
    const applied = async (store: Store): Promise<string[]> =>
      (await sql<{ name: string }>`select name from kysely_migration`.execute(store.db)).rows.map((r) => r.name).sort();

    it('opening the same database again is a no-op that keeps the data', async () => {
      const clock = new Clock();
      const at = uid('db');
      const first = await openTracked({ at, now: clock.now });
      const run = await insert(first, newRun(clock, { inputs: { n: 1 } }), [{ type: 'run.started' }]);
      const interrupt = newInterrupt(clock, run.runId);
      await first.transaction((tx) => tx.interrupts.insert(interrupt));
      await first.transaction((tx) =>
        tx.idempotency.put({
          tenantId: 't',
          scope: 's',
          key: 'k',
          bodyHash: 'h',
          statusCode: 201,
          response: { ok: true },
        }),
      );
      await close(first);

      for (let i = 0; i < 2; i++) {
        const again = await openTracked({ at, now: clock.now });
        assert.deepEqual(await applied(again), await expectedMigrations(again), 'each migration recorded exactly once');
        assert.deepEqual(await again.runs.get(run.runId), run);
        assert.deepEqual(seqs(await again.events.list(run.runId)), [0]);
        assert.deepEqual(await again.interrupts.listByRun(run.runId), [interrupt]);
        assert.equal((await again.transaction((tx) => tx.idempotency.get('t', 's', 'k')))?.statusCode, 201);
        await close(again);
      }
    });

    it('several processes opening one new database at once all start, and migrate it exactly once', {
      timeout: 120_000,
    }, async () => {
      const names = range(5).map(() => uid('db'));
      const rounds = await openTogether(await Promise.all(names.map((at) => locate(at))), 4);
      assert.deepEqual(
        rounds,
        rounds.map((r) => r.map(() => 'ok')),
        'every process opened the store, every round',
      );
      for (const at of names) {
        const store = await openTracked({ at });
        try {
          assert.deepEqual(await applied(store), await expectedMigrations(store));
        } finally {
          await close(store);
        }
      }
    });
  });
});

const pgUrl = pgTestUrl();
if (pgUrl) {
  describe('postgres: schemas', () => {
    const databases = pgTestDatabases(pgUrl);
    const stores: Store[] = [];
    after(async () => {
      for (const s of stores.splice(0)) await s.close();
      await databases.dropAll();
    });

    it('two stores in two schemas of one database both open, each seeing only its own runs', {
      timeout: 120_000,
    }, async () => {
      const databaseUrl = await databases.fresh();
      const clock = new Clock();
      const [first, second] = [uniqueSchemaName(), uniqueSchemaName()];
      const a = await openStore({ databaseUrl, pgSchema: first });
      stores.push(a);
      const run = await insert(a, newRun(clock));
      // The second open runs in its own process: a failed openStore leaves its pool open.
      assert.deepEqual(await openTogether([{ databaseUrl, pgSchema: second }], 1), [['ok']]);
      const b = await openStore({ databaseUrl, pgSchema: second });
      stores.push(b);
      assert.deepEqual(await a.runs.get(run.runId), run);
      assert.equal(await b.runs.get(run.runId), undefined);
      assert.equal(await b.runs.count(), 0);
    });
  });
}
