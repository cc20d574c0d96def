// The run event log is stored one row per commit (migration 0011, src/store/repos/events.ts). On
// SQLite and PostgreSQL:
// - a transaction writes one row per run it appended to, and each event reads back as appended,
//   its own timestamp kept where commits of one transaction were a moment apart;
// - a page that starts inside a batch, or ends inside one, has no gap and no repeat, and the page
//   query seeks on the key (SQLite's plan);
// - a database populated before 0011 migrates forward: every event reads back exactly as it was
//   (the A2A message in the neutral form 0014 gives it), and the run's next commit continues its sequence;
// - a batch of 512 characters or more is stored deflated (src/store/log-codec.ts: bytes on
//   SQLite, `~`-marked base64 on PostgreSQL), a fraction of its JSON, and reads back exactly; a
//   short one stays JSON text.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore } from '../../src/store/connect.js';
import type { NewEvent, RunEvent, RunRecord } from '../../src/store/model.js';
import { LIST_BATCHES } from '../../src/store/repos/events.js';
import type { Store } from '../../src/store/store.js';
import { databasePlaces, inline } from '../support/databases.js';
import { undoEventBatches } from '../support/migrations.js';
import { newRun } from '../support/runs.js';

const { pgUrl, place } = databasePlaces('batches');

/** A clock the test moves by hand. */
function clock(start = Date.parse('2030-01-01T00:00:00.000Z')) {
  let t = start;
  return { now: () => new Date(t), tick: (ms = 1) => (t += ms) };
}

async function batchRows(store: Store, runId: string): Promise<Array<{ first_seq: number; last_seq: number }>> {
  const { rows } = await sql<{ first_seq: number; last_seq: number }>`
    select "first_seq", "last_seq" from "event_batches" where "run_id" = ${runId} order by "first_seq"`.execute(
    store.db,
  );
  return rows.map((r) => ({ first_seq: Number(r.first_seq), last_seq: Number(r.last_seq) }));
}

const seqs = (events: RunEvent[]) => events.map((e) => e.sequence);

/** Events as migration 0001's table held them, including what JSON text may carry. */
const OLD_EVENTS: Array<[seq: number, type: string, nodeId: string | null, payload: string, at: string]> = [
  [0, 'a2a.message', null, '{"message":{"kind":"message","parts":[{"kind":"text","text":"héllo \\"x\\" ✓"}]}}', 'A'],
  [1, 'run.started', null, '{"workflowId":"wf"}', 'A'],
  [2, 'node.started', 'n1', '{"ordinal":0}', 'A'],
  [3, 'artifact.created', 'n1', '{"artifactId":"n1","data":{"list":[1,2.5,null,true],"deep":{"a":{"b":[]}}}}', 'B'],
  [4, 'node.suspended', 'n2', '{}', 'C'],
];
/** OLD_EVENTS' a2a.message payload after migration 0014 (the neutral Message). */
const NEUTRAL_MESSAGE_PAYLOAD = { message: { parts: [{ kind: 'text', text: 'héllo "x" ✓' }] } };
const at = (tag: string) => `2029-12-31T23:59:5${'ABC'.indexOf(tag)}.000Z`;

for (const dialect of ['sqlite', 'postgres'] as const) {
  const skip = dialect === 'postgres' && !pgUrl ? 'HANDOFF_TEST_PG_URL is not set' : false;

  describe(`the event log, one row per commit, on ${dialect}`, { skip }, () => {
    it('a large batch is stored deflated, a short one as JSON text, and both read back as appended', async () => {
      const store = await openStore({ ...(await place(dialect)), now: clock().now });
      try {
        const gate: NewEvent[] = [
          { type: 'run.started', payload: { workflowId: 'approval' } },
          { type: 'node.started', nodeId: 'draft', payload: { ordinal: 0, typeId: 'core.transform' } },
          { type: 'node.completed', nodeId: 'draft', payload: { ordinal: 0 } },
          { type: 'node.suspended', nodeId: 'review', payload: { kind: 'approval', interruptId: 'int_1' } },
          {
            type: 'approval.requested',
            nodeId: 'review',
            payload: {
              interruptId: 'int_1',
              title: 'Review the draft',
              description: 'Accept the draft, reject it, ask for a revision, edit it, or ask a question: ✓ "quoted"',
              artifact: { text: 'Draft: Please approve the quarterly report.' },
              actions: ['accept', 'reject', 'refine', 'edit-accept', 'ask'],
              requiredApprovals: 1,
              rejectionPolicy: 'single-veto',
              artifactFrom: 'draft',
            },
          },
          { type: 'interrupt.requested', nodeId: 'review', payload: { interruptId: 'int_1', kind: 'approval' } },
        ];
        const { run: large } = await store.transaction((tx) => tx.insertRun(newRun(), gate));
        const { run: small } = await store.transaction((tx) =>
          tx.insertRun(newRun(), [{ type: 'run.started', payload: { workflowId: 'echo' } }]),
        );
        const raw = async (runId: string) =>
          (
            await sql<{
              events: string | Uint8Array;
            }>`select "events" from "event_batches" where "run_id" = ${runId}`.execute(store.db)
          ).rows[0]?.events;
        const json = JSON.stringify(gate.map((e) => ({ type: e.type, nodeId: e.nodeId, payload: e.payload })));
        const stored = await raw(large.runId);
        if (dialect === 'sqlite') assert.ok(stored instanceof Uint8Array, 'SQLite holds the bytes');
        else assert.match(stored as string, /^~1/);
        assert.ok((stored?.length ?? 0) < json.length / 2, `${stored?.length} of ${json.length}`);
        assert.equal(typeof (await raw(small.runId)), 'string');
        assert.match((await raw(small.runId)) as string, /^\[/);
        const back = await store.events.list(large.runId);
        assert.deepEqual(
          back.map((e) => ({ type: e.type, nodeId: e.nodeId, payload: e.payload })),
          gate.map((e) => ({ type: e.type, nodeId: e.nodeId, payload: e.payload })),
        );
        assert.deepEqual(seqs(back), [0, 1, 2, 3, 4, 5]);
        assert.equal(
          (await store.events.listOfTypes(large.runId, ['approval.requested']))[0]?.payload.title,
          'Review the draft',
        );
        assert.equal((await store.events.list(small.runId))[0]?.payload.workflowId, 'echo');
      } finally {
        await store.close();
      }
    });

    it('one row per run per transaction; events read back as appended, each with its own timestamp', async () => {
      const c = clock();
      const store = await openStore({ ...(await place(dialect)), now: c.now });
      try {
        const { run } = await store.transaction((tx) =>
          tx.insertRun(newRun(), [{ type: 'run.started', payload: { i: 0 } }]),
        );
        const ev = (i: number): NewEvent => ({ type: 'node.started', nodeId: `n${i}`, payload: { i } });
        // Two commits in one transaction, a millisecond apart: one row, two timestamps.
        const after = await store.transaction(async (tx) => {
          const first = (await tx.commitRun(run, {}, [ev(1), ev(2)])).run;
          c.tick();
          return (await tx.commitRun(first, {}, [{ type: 'artifact.created', payload: { i: 3 } }, ev(4)])).run;
        });
        assert.equal(after.nextSeq, 5);
        assert.deepEqual(await batchRows(store, run.runId), [
          { first_seq: 0, last_seq: 0 },
          { first_seq: 1, last_seq: 4 },
        ]);
        const all = await store.events.list(run.runId);
        const t0 = '2030-01-01T00:00:00.000Z';
        const t1 = '2030-01-01T00:00:00.001Z';
        assert.deepEqual(all, [
          { runId: run.runId, sequence: 0, type: 'run.started', payload: { i: 0 }, timestamp: t0 },
          { runId: run.runId, sequence: 1, type: 'node.started', nodeId: 'n1', payload: { i: 1 }, timestamp: t0 },
          { runId: run.runId, sequence: 2, type: 'node.started', nodeId: 'n2', payload: { i: 2 }, timestamp: t0 },
          { runId: run.runId, sequence: 3, type: 'artifact.created', payload: { i: 3 }, timestamp: t1 },
          { runId: run.runId, sequence: 4, type: 'node.started', nodeId: 'n4', payload: { i: 4 }, timestamp: t1 },
        ]);
        assert.ok(all.every((e) => !('nodeId' in e) || e.nodeId !== undefined));
        assert.deepEqual(seqs(await store.events.listOfTypes(run.runId, ['artifact.created', 'run.started'])), [0, 3]);
      } finally {
        await store.close();
      }
    });

    it('pages that start or end inside a batch have no gap and no repeat', async () => {
      const store = await openStore(await place(dialect));
      try {
        // Batches of 1, 4, 1 and 3 events: sequences 0 | 1-4 | 5 | 6-8.
        let run: RunRecord = (await store.transaction((tx) => tx.insertRun(newRun(), [{ type: 'run.started' }]))).run;
        for (const n of [4, 1, 3]) {
          const events: NewEvent[] = Array.from({ length: n }, () => ({ type: 'node.started' }));
          run = (await store.transaction(async (tx) => tx.commitRun(run, {}, events))).run;
        }
        assert.deepEqual(seqs(await store.events.list(run.runId, 2, 3)), [3, 4, 5]);
        assert.deepEqual(seqs(await store.events.list(run.runId, 0, 2)), [1, 2]);
        assert.deepEqual(seqs(await store.events.list(run.runId, 4, 1)), [5]);
        assert.deepEqual(seqs(await store.events.list(run.runId, 6)), [7, 8]);
        assert.deepEqual(await store.events.list(run.runId, 8), []);
        // Of some types, before a sequence (a reply holds its own transaction's events): older batches only.
        const types = ['run.started', 'node.started'];
        assert.deepEqual(seqs(await store.events.listOfTypes(run.runId, types, 6)), [0, 1, 2, 3, 4, 5]);
        assert.deepEqual(seqs(await store.events.listOfTypes(run.runId, types, 1)), [0]);
        assert.deepEqual(seqs(await store.events.listOfTypes(run.runId, ['run.started'], 9)), [0]);
        assert.deepEqual(await store.events.listOfTypes(run.runId, types, 0), []);
        for (const size of [1, 2, 3, 5]) {
          const paged: number[] = [];
          for (let cursor = -1; ; ) {
            const page = await store.events.list(run.runId, cursor, size);
            assert.ok(page.length <= size);
            if (page.length === 0) break;
            paged.push(...seqs(page));
            cursor = page.at(-1)?.sequence as number;
          }
          assert.deepEqual(paged, [0, 1, 2, 3, 4, 5, 6, 7, 8], `pages of ${size}`);
        }
        if (dialect === 'sqlite') {
          // The page query as the store runs it, its parameters written in (EXPLAIN takes none).
          const text = inline(LIST_BATCHES.text, ['r', 'r', 5, 4, 3]);
          const { rows } = await sql.raw<{ detail: string }>(`explain query plan ${text}`).execute(store.db);
          const plan = rows.map((r) => r.detail).join('\n');
          assert.doesNotMatch(plan, /SCAN event_batches/, plan);
          assert.match(
            plan,
            /SEARCH event_batches USING INDEX sqlite_autoindex_event_batches_1 \(run_id=\? AND first_seq>\?\)/,
          );
        }
      } finally {
        await store.close();
      }
    });

    it('a database populated before migration 0011 migrates forward, every event as it was', async () => {
      const where = await place(dialect);
      const first = await openStore(where);
      const runId = (await first.transaction((tx) => tx.insertRun(newRun({ status: 'running' }), []))).run.runId;
      await undoEventBatches(first);
      for (const [seq, type, nodeId, payload, tag] of OLD_EVENTS) {
        await sql`insert into "events" ("run_id", "seq", "type", "node_id", "payload", "created_at")
          values (${runId}, ${seq}, ${type}, ${nodeId}, ${payload}, ${at(tag)})`.execute(first.db);
      }
      await sql`update "runs" set "next_seq" = 5 where "run_id" = ${runId}`.execute(first.db);
      await first.close();

      const store = await openStore(where);
      try {
        const expected: RunEvent[] = OLD_EVENTS.map(([sequence, type, nodeId, payload, tag]) => {
          // The A2A message as migration 0014 then keeps it: the neutral form (no `kind`).
          const read = type === 'a2a.message' ? NEUTRAL_MESSAGE_PAYLOAD : JSON.parse(payload);
          const e = { runId, sequence, type, payload: read, timestamp: at(tag) } as RunEvent;
          return nodeId === null ? e : { ...e, nodeId };
        });
        assert.deepEqual(await store.events.list(runId), expected);
        assert.deepEqual(
          await store.events.listOfTypes(runId, ['a2a.message', 'artifact.created']),
          expected.filter((e) => e.type === 'a2a.message' || e.type === 'artifact.created'),
        );
        const tables = await sql<{ n: number }>`select count(*) as "n" from "event_batches"`.execute(store.db);
        assert.equal(Number(tables.rows[0]?.n), OLD_EVENTS.length);
        // The run goes on where its log left off.
        const run = (await store.runs.get(runId)) as RunRecord;
        await store.transaction((tx) => tx.commitRun(run, {}, [{ type: 'node.resumed', nodeId: 'n2' }]));
        assert.deepEqual(seqs(await store.events.list(runId, 3)), [4, 5]);
        if (dialect === 'sqlite') {
          const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(store.db);
          assert.deepEqual(rows, [{ integrity_check: 'ok' }]);
        }
      } finally {
        await store.close();
      }
    });
  });
}
