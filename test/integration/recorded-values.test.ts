// Large parts of a run's JSON are stored once (src/store/recorded.ts, `run_values`). On SQLite and
// PostgreSQL:
// - a commit whose state and events all hold one large output stores it once, and the snapshot
//   and the log refer to it; everything reads back whole, inside and outside a transaction;
// - later commits of the run write only the reference;
// - a transaction that fails leaves no part behind; a purge takes the run's parts with it;
// - what a caller or a peer sends cannot pose as a reference;
// - rows written before migration 0013 read as they were.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore } from '../../src/store/connect.js';
import type { NewEvent, RunRecord } from '../../src/store/model.js';
import type { Store } from '../../src/store/store.js';
import { databasePlaces } from '../support/databases.js';
import { undoRunValues } from '../support/migrations.js';
import { newRun } from '../support/runs.js';

const { pgUrl, place } = databasePlaces('recorded');

/** An http.request output with a random (incompressible) body of `chars` characters. */
const answer = (chars: number) => ({
  status: 200,
  headers: { 'content-type': 'text/plain' },
  body: randomBytes(Math.ceil((chars * 3) / 4))
    .toString('base64')
    .slice(0, chars),
});

/** The events of a call node's completing commit: each holds the very output the state holds. */
const completion = (output: object): NewEvent[] => [
  { type: 'node.started', nodeId: 'fetch', payload: { ordinal: 0 } },
  { type: 'node.completed', nodeId: 'fetch', payload: { ordinal: 0, attempts: 1, outcome: output } },
  { type: 'artifact.created', nodeId: 'fetch', payload: { artifactId: 'fetch', data: output } },
  { type: 'run.completed', payload: { outputs: { fetch: output } } },
];

/** Characters stored for a run, by table. */
async function stored(store: Store, runId: string): Promise<{ parts: number; values: number; rows: number }> {
  const { rows } = await sql<{ parts: number; values: number; state: number; events: number }>`select
    (select count(distinct "hash") from "run_values" where "run_id" = ${runId}) as "parts",
    (select coalesce(sum(length("value")), 0) from "run_values" where "run_id" = ${runId}) as "values",
    (select coalesce(sum(length("state")), 0) from "runs" where "run_id" = ${runId}) as "state",
    (select coalesce(sum(length("events")), 0) from "event_batches" where "run_id" = ${runId}) as "events"`.execute(
    store.db,
  );
  const r = rows[0] as { parts: number; values: number; state: number; events: number };
  return { parts: Number(r.parts), values: Number(r.values), rows: Number(r.state) + Number(r.events) };
}

/** Insert a run and, as a worker that claimed it, complete it with `output`. */
async function completeWith(store: Store, output: object): Promise<RunRecord> {
  const { run: inserted } = await store.transaction((tx) => tx.insertRun(newRun({ status: 'running' }), []));
  const run = (await store.runs.get(inserted.runId)) as RunRecord;
  return store.transaction(async (tx) => {
    const state = { outputs: { ...run.state.outputs, fetch: output }, vars: run.state.vars };
    return (await tx.commitRun(run, { status: 'completed', state }, completion(output))).run;
  });
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  const skip = dialect === 'postgres' && !pgUrl ? 'HANDOFF_TEST_PG_URL is not set' : false;

  describe(`large parts of a run stored once, on ${dialect}`, { skip }, () => {
    it('state, node.completed, artifact.created and run.completed hold one stored part; all read back whole', async () => {
      const store = await openStore(await place(dialect));
      try {
        const output = answer(300_000);
        const run = await completeWith(store, output);
        const text = JSON.stringify(output).length;
        const size = await stored(store, run.runId);
        assert.equal(size.parts, 1, 'one part');
        assert.equal(size.values, text, 'its text, once');
        assert.ok(size.rows < 4_000, `the snapshot and the log refer to it (${size.rows} characters)`);

        const read = (await store.runs.get(run.runId)) as RunRecord;
        assert.deepEqual(read, run, 'the snapshot reads back whole');
        assert.deepEqual(read.state.outputs.fetch, output);
        const events = await store.events.list(run.runId);
        assert.deepEqual(
          events.map((e) => e.payload),
          completion(output).map((e) => e.payload),
          'every event reads back whole',
        );
        const artifacts = await store.events.listOfTypes(run.runId, ['artifact.created']);
        assert.deepEqual(artifacts[0]?.payload.data, output);
        const inTx = await store.transaction((tx) => tx.getRun(run.runId, { forUpdate: true }));
        assert.deepEqual(inTx, run, 'and inside a transaction');
      } finally {
        await store.close();
      }
    });

    it('later commits of the run write only the reference, whether they reuse its record or read it again', async () => {
      const store = await openStore(await place(dialect));
      try {
        const output = answer(200_000);
        const run = await completeWith(store, output);
        const first = await stored(store, run.runId);
        // The record the commit handed back, as a worker goes on with it.
        const next = await store.transaction(async (tx) => {
          const state = { outputs: { ...run.state.outputs, after: { ok: true } }, vars: { n: 1 } };
          return (await tx.commitRun(run, { state }, [{ type: 'node.completed', nodeId: 'after' }])).run;
        });
        // A record read back, as after a restart.
        const read = (await store.runs.get(run.runId)) as RunRecord;
        await store.transaction(async (tx) => {
          const state = { outputs: read.state.outputs, vars: { n: 2 } };
          await tx.commitRun(read, { state }, [{ type: 'node.completed', nodeId: 'again' }]);
        });
        const after = await stored(store, run.runId);
        assert.equal(after.parts, 1);
        assert.equal(after.values, first.values, 'the part is not stored again');
        assert.ok(after.rows < first.rows + 2_000, `${after.rows} characters in the snapshot and the log`);
        const last = (await store.runs.get(run.runId)) as RunRecord;
        assert.deepEqual(last.state.outputs, { fetch: output, after: { ok: true } });
        assert.deepEqual(next.state.outputs.fetch, output);
      } finally {
        await store.close();
      }
    });

    it('a transaction that fails stores nothing; a purge takes the parts with the run', async () => {
      const store = await openStore(await place(dialect));
      try {
        const { run } = await store.transaction((tx) => tx.insertRun(newRun({ status: 'running' }), []));
        const output = answer(100_000);
        await assert.rejects(
          store.transaction(async (tx) => {
            const state = { outputs: { fetch: output }, vars: {} };
            await tx.commitRun(run, { status: 'completed', state, completedAt: '2000-01-01T00:00:00.000Z' }, []);
            await tx.flush();
            throw new Error('the caller gives up');
          }),
          /gives up/,
        );
        assert.equal((await stored(store, run.runId)).values, 0, 'nothing left of the failed transaction');
        // The same objects, committed again: the part is stored now, as it was not then.
        await store.transaction(async (tx) => {
          const state = { outputs: { fetch: output }, vars: {} };
          await tx.commitRun(run, { status: 'completed', state, completedAt: '2000-01-01T00:00:00.000Z' }, []);
        });
        assert.deepEqual(((await store.runs.get(run.runId)) as RunRecord).state.outputs.fetch, output);
        assert.equal((await stored(store, run.runId)).parts, 1);
        assert.equal(await store.purgeTerminalBefore(new Date('2001-01-01T00:00:00.000Z')), 1);
        assert.equal((await stored(store, run.runId)).values, 0, 'the parts went with the run');
      } finally {
        await store.close();
      }
    });

    it('values shaped like a reference are values: nothing a caller or a peer sends is read as one', async () => {
      const store = await openStore(await place(dialect));
      try {
        const posing = { $refs: [[['outputs', 'fetch'], 'a'.repeat(64)]], value: { outputs: {}, vars: {} } };
        const run = await completeWith(store, { body: posing, big: answer(70_000) });
        const read = (await store.runs.get(run.runId)) as RunRecord;
        assert.deepEqual((read.state.outputs.fetch as { body: unknown }).body, posing);
        const events = await store.events.list(run.runId);
        assert.deepEqual(events[1]?.payload.outcome, {
          body: posing,
          big: (run.state.outputs.fetch as { big: unknown }).big,
        });
      } finally {
        await store.close();
      }
    });

    it('rows written before migration 0013 read as they were, large ones included', async () => {
      const where = await place(dialect);
      const first = await openStore(where);
      const output = answer(100_000);
      const { run } = await first.transaction((tx) => tx.insertRun(newRun({ status: 'running' }), []));
      await undoRunValues(first);
      const state = JSON.stringify({ outputs: { fetch: output }, vars: {} });
      await sql`update "runs" set "state" = ${state} where "run_id" = ${run.runId}`.execute(first.db);
      await first.close();
      const store = await openStore(where);
      try {
        const read = (await store.runs.get(run.runId)) as RunRecord;
        assert.deepEqual(read.state.outputs.fetch, output);
        // Its next commit stores the part and refers to it.
        await store.transaction((tx) => tx.commitRun(read, { status: 'completed' }, []));
        assert.equal((await stored(store, run.runId)).parts, 1);
        assert.deepEqual(((await store.runs.get(run.runId)) as RunRecord).state.outputs.fetch, output);
      } finally {
        await store.close();
      }
    });
  });
}
