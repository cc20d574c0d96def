// The store contract: the runs repository's writes: insertRun / getRun, commitRun (versions, fences,
// the record handed back for JSON of every kind), deferred inserts, and concurrent writers on one run.
// Run on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConflictError } from '../../src/store/errors.js';
import type { NewEvent, RunRecord } from '../../src/store/model.js';
import type { RunChange, RunPatch, StoreTx } from '../../src/store/store.js';
import { assertSameJson, assertSameRecord, PATCH_CASES } from '../support/json-patches.js';
import {
  T0,
  DAY,
  Clock,
  range,
  seqs,
  newRun,
  newInterrupt,
  insert,
  commit,
  mustGet,
  assertGapFree,
  withoutUndefined,
  isConflict,
  onCommit,
  addStep,
  storeContract,
} from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('insertRun / getRun', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('round-trips every field, JSON and optional fields included', async () => {
      const run = newRun(clock, {
        tenantId: 'tenant-ü',
        principalId: 'user:alice@example.com',
        workflowId: 'wf.review/v2',
        status: 'running',
        inputs: {
          text: 'line1\nline2 "q" \\ ✓ \u0000 end',
          n: 42.5,
          flag: false,
          nothing: null,
          list: [1, 'two', { three: [3] }],
        },
        state: { outputs: { draft: { text: 'hello', tokens: 12 } }, vars: { round: 2, approved: null } },
        cursor: {
          nodeId: 'review',
          wakeAt: T0 + 90 * DAY,
          ordinals: { draft: 2, review: 1 },
          carry: { feedback: 'shorter' },
          started: true,
        },
        error: { code: 'node_execution_error', message: 'boom', details: { attempt: 3, cause: { status: 503 } } },
        tags: ['urgent', 'finance', ''],
        metadata: { source: 'a2a', contextId: 'ctx-1', nested: { deep: { deeper: [true] } } },
        leaseOwner: 'worker-1',
        leaseExpiresAt: T0 + 30_000,
        wakeAt: T0 + 90 * DAY, // > 2^32: a real 64-bit epoch-ms value
        completedAt: new Date(T0 + 5).toISOString(),
      });
      const change = await store().transaction((tx) =>
        tx.insertRun(run, [{ type: 'run.started' }, { type: 'run.started' }]),
      );
      const expected: RunRecord = { ...run, nextSeq: 2, version: 1, updatedAt: clock.iso() };
      assert.deepEqual(change.run, expected);
      assert.equal(change.before, undefined);
      const read = await mustGet(store(), run.runId);
      assert.deepEqual(read, expected);
      for (const n of [read.wakeAt, read.leaseExpiresAt, read.nextSeq, read.version, read.cursor.wakeAt])
        assert.equal(typeof n, 'number');
    });

    it('keeps absent optional fields absent', async () => {
      const run = newRun(clock, { cursor: { ordinals: {} } });
      await insert(store(), run);
      const read = await mustGet(store(), run.runId);
      assert.deepEqual(read, { ...run, nextSeq: 0, version: 1, updatedAt: clock.iso() });
      for (const key of ['error', 'leaseOwner', 'leaseExpiresAt', 'wakeAt', 'completedAt'] as const) {
        assert.equal(key in read, false, `${key} is absent, not undefined/null`);
      }
      assert.deepEqual(await store().events.list(run.runId), []);
    });

    it('appends the first events at sequence 0… with the store timestamp', async () => {
      const run = newRun(clock);
      const events: NewEvent[] = [
        { type: 'run.started', payload: { workflowId: 'wf-approve' } },
        { type: 'node.started', nodeId: 'start', payload: { ordinal: 0 } },
        { type: 'node.resumed' },
      ];
      const change = await store().transaction((tx) => tx.insertRun(run, events));
      const stored = await store().events.list(run.runId);
      assert.deepEqual(stored, [
        {
          runId: run.runId,
          sequence: 0,
          type: 'run.started',
          payload: { workflowId: 'wf-approve' },
          timestamp: clock.iso(),
        },
        {
          runId: run.runId,
          sequence: 1,
          type: 'node.started',
          nodeId: 'start',
          payload: { ordinal: 0 },
          timestamp: clock.iso(),
        },
        { runId: run.runId, sequence: 2, type: 'node.resumed', payload: {}, timestamp: clock.iso() },
      ]);
      assert.deepEqual(change.events, stored);
    });

    it('getRun: unknown id is undefined; a transaction sees its own uncommitted insert', async () => {
      assert.equal(await store().runs.get('run_does_not_exist'), undefined);
      const run = newRun(clock);
      const seen = await store().transaction(async (tx) => {
        await tx.insertRun(run, []);
        return tx.getRun(run.runId);
      });
      assert.equal(seen?.runId, run.runId);
    });

    it('a second insert of the same runId fails and changes nothing', async () => {
      const run = newRun(clock, { inputs: { first: true } });
      const original = await insert(store(), run, [{ type: 'run.started' }]);
      await assert.rejects(
        store().transaction((tx) =>
          tx.insertRun({ ...run, inputs: { first: false } }, [{ type: 'node.started' }, { type: 'node.completed' }]),
        ),
      );
      assert.deepEqual(await store().runs.get(run.runId), original);
      assert.deepEqual(seqs(await store().events.list(run.runId)), [0]);
    });
  });

  describe('commitRun', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('appends gap-free sequences across commits, bumps version, returns the new record', async () => {
      let run = await insert(store(), newRun(clock), [{ type: 'run.started' }, { type: 'run.cancelling' }]);
      const batches: NewEvent[][] = [
        [
          { type: 'run.started' },
          { type: 'node.started', nodeId: 'a' },
          { type: 'node.completed', nodeId: 'a', payload: { out: 1 } },
        ],
        [],
        [{ type: 'node.started', nodeId: 'b' }],
      ];
      let next = 2;
      for (const [i, batch] of batches.entries()) {
        clock.advance(1000);
        const before = run;
        const change = await store().transaction((tx) =>
          tx.commitRun(before, { status: 'running', metadata: { step: i } }, batch),
        );
        assert.deepEqual(change.before, before);
        assert.equal(change.run.version, before.version + 1);
        assert.equal(change.run.nextSeq, next + batch.length);
        assert.equal(change.run.updatedAt, clock.iso());
        assert.deepEqual(seqs(change.events), range(batch.length, next));
        assert.deepEqual(change.run, await store().runs.get(before.runId), 'the returned record is what is stored');
        next += batch.length;
        run = change.run;
      }
      assert.equal(run.version, 4);
      const events = await assertGapFree(store(), run.runId, 6);
      assert.deepEqual(
        events.map((e) => e.type),
        ['run.started', 'run.cancelling', 'run.started', 'node.started', 'node.completed', 'node.started'],
      );
      assert.equal(run.createdAt, new Date(T0).toISOString(), 'createdAt never changes');
    });

    it('applies the patch, and an explicit undefined clears an optional field', async () => {
      const run = await insert(
        store(),
        newRun(clock, {
          wakeAt: T0 + DAY,
          error: { code: 'x', message: 'old' },
          leaseOwner: 'w',
          leaseExpiresAt: T0 + 1,
        }),
      );
      const after = await commit(store(), run, {
        status: 'completed',
        state: { outputs: { done: { ok: true } }, vars: { v: 1 } },
        cursor: { ordinals: { a: 1 } },
        metadata: { finished: true },
        completedAt: clock.iso(),
        wakeAt: undefined,
        error: undefined,
        leaseOwner: undefined,
        leaseExpiresAt: undefined,
      });
      const read = await mustGet(store(), run.runId);
      assert.deepEqual(read, withoutUndefined(after));
      assert.equal(read.status, 'completed');
      assert.deepEqual(read.state, { outputs: { done: { ok: true } }, vars: { v: 1 } });
      assert.deepEqual(read.cursor, { ordinals: { a: 1 } });
      assert.deepEqual(read.metadata, { finished: true });
      assert.equal(read.completedAt, clock.iso());
      for (const key of ['wakeAt', 'error', 'leaseOwner', 'leaseExpiresAt'] as const)
        assert.equal(key in read, false, `${key} cleared`);
    });

    it('the record commitRun returns has exactly the shape getRun reads back, \
also when the patch clears a field', {}, async () => {
      const run = await insert(store(), newRun(clock, { wakeAt: T0 + DAY, leaseOwner: 'w', leaseExpiresAt: T0 + 1 }));
      const after = await commit(store(), run, {
        wakeAt: undefined,
        leaseOwner: undefined,
        leaseExpiresAt: undefined,
      });
      assert.deepEqual(after, await store().runs.get(run.runId));
    });

    it('chains: the record a commit returns is the `before` of the next, in one transaction', async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'node.started' }]);
      const last = await store().transaction(async (tx) => {
        const one = await tx.commitRun(run, { status: 'running' }, [{ type: 'node.completed' }]);
        const two = await tx.commitRun(one.run, {}, [{ type: 'node.failed' }, { type: 'node.suspended' }]);
        return two.run;
      });
      assert.equal(last.version, 3);
      const events = await assertGapFree(store(), run.runId, 4);
      assert.deepEqual(
        events.map((e) => e.type),
        ['node.started', 'node.completed', 'node.failed', 'node.suspended'],
      );
    });

    it('several commits to one run in one transaction: the tx reads its own latest copy, \
a second commit from an older `before` is a ConflictError, and the run is stored in its final state', async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'node.started' }]);
      const last = await store().transaction(async (tx) => {
        const one = await tx.commitRun(run, { status: 'running', metadata: { step: 1 } }, [{ type: 'run.started' }]);
        assert.deepEqual(await tx.getRun(run.runId), one.run);
        await assert.rejects(tx.commitRun(run, { status: 'failed' }, []), ConflictError);
        const two = await tx.commitRun(one.run, { status: 'completed', completedAt: clock.iso() }, [
          { type: 'run.completed' },
        ]);
        return two.run;
      });
      assert.equal(last.version, 3);
      assert.deepEqual(await store().runs.get(run.runId), last);
      await assertGapFree(store(), run.runId, 3);
    });

    it('a commit fenced by a lease owner that no longer holds the lease is a ConflictError \
and writes nothing, also when an earlier commit of the transaction was not fenced', async () => {
      const run = await insert(store(), newRun(clock, { leaseOwner: 'w2', leaseExpiresAt: T0 + DAY }));
      await assert.rejects(
        store().transaction(async (tx) => {
          const one = await tx.commitRun(run, { status: 'running' }, [{ type: 'run.started' }]);
          return tx.commitRun(one.run, { status: 'completed' }, [{ type: 'run.completed' }], { owner: 'w1' });
        }),
        ConflictError,
      );
      assert.deepEqual(await store().runs.get(run.runId), run);
      await assertGapFree(store(), run.runId, 0);
    });

    it('the record a commit returns carries the lease as stored at commit \
(renewed after the transaction read the run)', async () => {
      const run = await insert(store(), newRun(clock, { leaseOwner: 'w1', leaseExpiresAt: T0 + 1 }));
      assert.equal(await store().runs.renewLease(run.runId, 'w1', DAY), true);
      const renewed = (await mustGet(store(), run.runId)).leaseExpiresAt;
      const after = await store().transaction((tx) =>
        tx.commitRun(run, { status: 'running' }, [{ type: 'run.started' }], { owner: 'w1' }),
      );
      assert.equal(after.run.leaseExpiresAt, renewed);
      assert.deepEqual(after.run, await store().runs.get(run.runId));
    });

    it('a stale `before` throws ConflictError and writes nothing', async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const current = await commit(store(), run, { status: 'running' }, [{ type: 'run.started' }]);
      const stale = run;
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.interrupts.insert(newInterrupt(clock, run.runId));
          await tx.idempotency.put({
            tenantId: 't',
            scope: 'stale',
            key: run.runId,
            bodyHash: 'h',
            statusCode: 200,
            response: {},
          });
          return tx.commitRun(stale, { status: 'failed' }, [{ type: 'run.failed' }, { type: 'node.resumed' }]);
        }),
        ConflictError,
      );
      assert.deepEqual(await store().runs.get(run.runId), current);
      await assertGapFree(store(), run.runId, 2);
      assert.deepEqual(
        await store().interrupts.listByRun(run.runId),
        [],
        'writes earlier in the transaction are rolled back too',
      );
      assert.equal(await store().transaction((tx) => tx.idempotency.get('t', 'stale', run.runId)), undefined);
    });

    it('commitRun on a run that does not exist throws ConflictError', async () => {
      const ghost: RunRecord = { ...newRun(clock), nextSeq: 0, version: 1, updatedAt: clock.iso() };
      await assert.rejects(
        store().transaction((tx) => tx.commitRun(ghost, {}, [{ type: 'node.started' }])),
        ConflictError,
      );
      assert.equal(await store().runs.get(ghost.runId), undefined);
      assert.deepEqual(await store().events.list(ghost.runId), []);
    });

    it('a transaction that throws after commitRun leaves nothing behind', async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const boom = new Error('boom after commit');
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.commitRun(run, { status: 'completed', completedAt: clock.iso() }, [{ type: 'run.completed' }]);
          await tx.interrupts.insert(newInterrupt(clock, run.runId));
          throw boom;
        }),
        (err) => err === boom,
      );
      assert.deepEqual(await store().runs.get(run.runId), run, 'run snapshot rolled back');
      await assertGapFree(store(), run.runId, 1);
      assert.deepEqual(await store().interrupts.listByRun(run.runId), []);
      // …and the run is still writable from the version that really is stored.
      assert.equal((await commit(store(), run, { status: 'running' }, [{ type: 'run.started' }])).version, 2);
    });

    it('a transaction that throws after insertRun leaves no run and no events', async () => {
      const run = newRun(clock);
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.insertRun(run, [{ type: 'run.started' }, { type: 'run.started' }]);
          throw new Error('abort');
        }),
        /abort/,
      );
      assert.equal(await store().runs.get(run.runId), undefined);
      assert.deepEqual(await store().events.list(run.runId), []);
      await insert(store(), run, [{ type: 'run.started' }]);
      await assertGapFree(store(), run.runId, 1);
    });
  });

  describe('commitRun: the record handed back is the row read back, for JSON of every kind', () => {
    const clock = new Clock();
    const store = sharedStore(clock);
    /** What a commit normalizes, and the status: the fields compared between two chains of commits. */
    const normalizedPart = (r: RunRecord): Partial<RunRecord> => {
      const { state, cursor, error, metadata, status } = r;
      return { state, cursor, error, metadata, status };
    };

    it('one transaction per patch, then every patch in one transaction (from a record as read, and \
from a deferred insert): same records, key order included', async () => {
      const inserted = await insert(store(), newRun(clock));
      let run = await mustGet(store(), inserted.runId);
      const perCommit: RunRecord[] = [];
      for (const { name, patch } of PATCH_CASES) {
        const before = run;
        run = await commit(store(), before, patch(before));
        assertSameRecord(run, await mustGet(store(), run.runId), name);
        perCommit.push(run);
      }
      const chained = async (start: (tx: StoreTx) => Promise<RunRecord>): Promise<RunRecord> =>
        store().transaction(async (tx) => {
          let r = await start(tx);
          for (const [i, { name, patch }] of PATCH_CASES.entries()) {
            r = (await tx.commitRun(r, patch(r), [{ type: 'node.completed', payload: { i } }])).run;
            assertSameJson(normalizedPart(r), normalizedPart(perCommit[i] as RunRecord), `in one transaction: ${name}`);
          }
          return r;
        });
      const read = await mustGet(store(), (await insert(store(), newRun(clock))).runId);
      const last = await chained(async () => read);
      assertSameRecord(last, await mustGet(store(), read.runId), 'written once, at the end');
      const fresh = newRun(clock);
      const deferred = await chained(async (tx) => (await tx.insertRun(fresh, [], { defer: true })).run);
      assertSameRecord(deferred, await mustGet(store(), fresh.runId), 'deferred insert, written once');
    });

    it('a run inserted without defer hands back the caller values as given; commits from it \
still hand back what is read back', async () => {
      const when = new Date(T0);
      const given = await insert(
        store(),
        newRun(clock, {
          state: { outputs: { at: { when, u: undefined } }, vars: { n: NaN } },
          metadata: { when },
        }),
      );
      assert.equal((given.state.outputs.at as { when: unknown }).when, when, 'the caller values, as given');
      const patch = (r: RunRecord): RunPatch => ({
        state: { outputs: { ...r.state.outputs, next: 1 }, vars: r.state.vars },
        metadata: r.metadata,
      });
      const one = await commit(store(), given, patch(given));
      assertSameRecord(one, await mustGet(store(), given.runId), 'a commit from the inserted record');
      const again = await store().transaction(async (tx) => {
        const { run } = await tx.insertRun(newRun(clock, { state: given.state, metadata: given.metadata }), []);
        const { run: status } = await tx.commitRun(run, { status: 'running' }, []);
        return (await tx.commitRun(status, patch(status), [])).run;
      });
      assertSameRecord(again, await mustGet(store(), again.runId), 'commits from a commit from the inserted record');
    });

    it("changing the patch's objects after commitRun changes neither the record it handed back nor \
the row; the parts the patch kept from `before` are `before`'s own objects", async () => {
      const inserted = await insert(
        store(),
        newRun(clock, { state: { outputs: { kept: { list: [1, { deep: true }] } }, vars: { v: 1 } } }),
      );
      const run = await mustGet(store(), inserted.runId);
      const added = { text: 'new', list: [1, { deep: true }] as unknown[], at: new Date(T0) };
      const vars: Record<string, unknown> = { ...run.state.vars, w: 2 };
      const outputs: Record<string, unknown> = { ...run.state.outputs, added };
      const metadata = { m: { n: 1 } };
      const patch = { state: { outputs, vars }, metadata };
      const { returned, snapshot } = await store().transaction(async (tx) => {
        const { run: returned } = await tx.commitRun(run, patch, []);
        const snapshot = structuredClone(returned);
        // Everything of the patch that is the caller's own, changed before the transaction ends.
        added.text = 'changed';
        (added.list[1] as { deep: boolean }).deep = false;
        added.list.push(2);
        added.at.setTime(0);
        vars.w = 3;
        outputs.other = 1;
        delete outputs.kept;
        metadata.m.n = 2;
        patch.state = { outputs: {}, vars: {} };
        return { returned, snapshot };
      });
      assertSameRecord(returned, snapshot, 'the record handed back');
      assertSameRecord(await mustGet(store(), run.runId), snapshot, 'the row');
      assert.equal(returned.state.outputs.kept, run.state.outputs.kept, "`before`'s own object, reused");
      assert.equal(returned.inputs, run.inputs, 'a field the patch left alone');
    });

    it('a patch JSON cannot write (a cycle, a BigInt) fails that commit alone, changing nothing', async () => {
      const run = await mustGet(store(), (await insert(store(), newRun(clock))).runId);
      const cyclic: Record<string, unknown> = {};
      cyclic.self = { back: cyclic };
      const last = await store().transaction(async (tx) => {
        const { run: one } = await tx.commitRun(run, { metadata: { step: 1 } }, [{ type: 'node.started' }]);
        const bad: RunPatch[] = [
          { status: 'failed', state: { outputs: { ...one.state.outputs, cyclic }, vars: one.state.vars } },
          { status: 'failed', metadata: { ...one.metadata, big: 1n } },
          { status: 'failed', cursor: (() => 1) as unknown as RunRecord['cursor'] },
        ];
        for (const patch of bad) await assert.rejects(tx.commitRun(one, patch, [{ type: 'node.failed' }]));
        assert.deepEqual(await tx.getRun(run.runId), one, 'the transaction still reads the first commit');
        return (await tx.commitRun(one, { status: 'running' }, [{ type: 'node.completed' }])).run;
      });
      assertSameRecord(last, await mustGet(store(), run.runId));
      assert.deepEqual(
        (await store().events.list(run.runId)).map((e) => e.type),
        ['node.started', 'node.completed'],
      );
    });
  });

  describe('deferred insert (a run created and advanced in one transaction)', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('is written once in its final state: the tx reads its own copy, \
hooks and listeners see one change from nothing', async () => {
      const hooked: RunChange[] = [];
      addStep(store(), async (_tx, change) => {
        hooked.push(change);
      });
      const heard: RunChange[][] = [];
      const off = onCommit(store(), (changes) => heard.push(changes));
      const fresh = newRun(clock);
      try {
        const final = await store().transaction(async (tx) => {
          const { run } = await tx.insertRun(fresh, [{ type: 'run.started' }], { defer: true });
          assert.deepEqual(await tx.getRun(fresh.runId), run, 'the transaction reads its own deferred copy');
          const { run: mid } = await tx.commitRun(run, { status: 'running' }, [{ type: 'run.started' }]);
          await assert.rejects(
            tx.commitRun(run, { status: 'failed' }, []),
            ConflictError,
            'a stale before is refused as for a written row',
          );
          const { run: end } = await tx.commitRun(mid, { status: 'completed', completedAt: clock.iso() }, [
            { type: 'run.completed' },
          ]);
          return end;
        });
        assert.deepEqual(await store().runs.get(fresh.runId), final, 'the row is the final state, exactly as returned');
        assert.equal(final.version, 3);
        await assertGapFree(store(), fresh.runId, 3);
        const mine = hooked.filter((c) => c.run.runId === fresh.runId);
        assert.equal(mine.length, 1, 'one transition hook call');
        assert.equal(mine[0]?.before, undefined);
        assert.deepEqual(seqs(mine[0]?.events ?? []), [0, 1, 2]);
        assert.equal(heard.length, 1);
        assert.deepEqual(
          heard[0]?.map((c) => c.run.status),
          ['completed'],
        );
      } finally {
        off();
      }
    });

    it('a transaction that throws leaves nothing of a deferred run', async () => {
      const fresh = newRun(clock);
      await assert.rejects(
        store().transaction(async (tx) => {
          const { run } = await tx.insertRun(fresh, [{ type: 'run.started' }], { defer: true });
          await tx.commitRun(run, { status: 'running' }, [{ type: 'run.started' }]);
          throw new Error('abort');
        }),
        /abort/,
      );
      assert.equal(await store().runs.get(fresh.runId), undefined);
      assert.deepEqual(await store().events.list(fresh.runId), []);
    });
  });

  describe('concurrency on one run', () => {
    const N = 8;
    const clock = new Clock();
    const store = sharedStore(clock);

    it(`${N} writers from one snapshot: exactly one wins, the others get ConflictError`, async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const results = await Promise.allSettled(
        range(N).map((w) =>
          store().transaction((tx) =>
            tx.commitRun(run, { metadata: { writer: w } }, [
              { type: 'node.completed', payload: { writer: w, part: 0 } },
              { type: 'node.completed', payload: { writer: w, part: 1 } },
            ]),
          ),
        ),
      );
      const won = results.flatMap((r, w) => (r.status === 'fulfilled' ? [w] : []));
      assert.equal(won.length, 1, 'exactly one writer wins');
      assert.equal(results.filter(isConflict).length, N - 1, 'every other writer gets ConflictError');
      const stored = await mustGet(store(), run.runId);
      assert.equal(stored.version, 2);
      assert.deepEqual(stored.metadata, { writer: won[0] });
      const events = await assertGapFree(store(), run.runId, 3);
      assert.deepEqual(
        events.slice(1).map((e) => e.payload),
        [
          { writer: won[0], part: 0 },
          { writer: won[0], part: 1 },
        ],
      );
    });

    it(`${N} writers each reading inside their own transaction: one success per version, gap-free log`, async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      const results = await Promise.allSettled(
        range(N).map((w) =>
          store().transaction(async (tx) => {
            const cur = await tx.getRun(run.runId);
            assert.ok(cur);
            return (
              await tx.commitRun(cur, { metadata: { writer: w } }, [
                { type: 'node.completed', payload: { writer: w, part: 0 } },
                { type: 'node.completed', payload: { writer: w, part: 1 } },
              ])
            ).run;
          }),
        ),
      );
      for (const r of results)
        if (r.status === 'rejected') assert.ok(r.reason instanceof ConflictError, `unexpected ${String(r.reason)}`);
      const wins = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      assert.ok(wins.length >= 1);
      assert.deepEqual(
        wins.map((w) => w.version).sort((x, y) => x - y),
        range(wins.length, 2),
        'one success per version',
      );
      const stored = await mustGet(store(), run.runId);
      assert.equal(stored.version, 1 + wins.length);
      const events = await assertGapFree(store(), run.runId, 1 + 2 * wins.length);
      // Each commit's events are contiguous and belong to a winner.
      for (let s = 1; s < events.length; s += 2) {
        const [p0, p1] = [events[s]!.payload, events[s + 1]!.payload];
        assert.equal(p0.writer, p1.writer);
        assert.deepEqual([p0.part, p1.part], [0, 1]);
      }
      assert.deepEqual(
        events
          .slice(1)
          .filter((_, i) => i % 2 === 0)
          .map((e) => e.payload.writer)
          .sort(),
        wins.map((w) => w.metadata.writer).sort(),
      );
    });

    it(`${N} writers retrying on ConflictError all land, each exactly once, each notified once`, async () => {
      const run = await insert(store(), newRun(clock), [{ type: 'run.started' }]);
      let notified = 0;
      const off = onCommit(store(), (changes) => {
        notified += changes.filter((c) => c.run.runId === run.runId).length;
      });
      let conflicts = 0;
      try {
        await Promise.all(
          range(N).map(async (w) => {
            for (let attempt = 0; attempt < 10 * N; attempt++) {
              try {
                return await store().transaction(async (tx) => {
                  const cur = await tx.getRun(run.runId);
                  assert.ok(cur);
                  return tx.commitRun(cur, {}, [{ type: 'node.completed', payload: { writer: w } }]);
                });
              } catch (err) {
                if (!(err instanceof ConflictError)) throw err;
                conflicts++;
              }
            }
            throw new Error(`writer ${w} never landed`);
          }),
        );
      } finally {
        off();
      }
      const stored = await mustGet(store(), run.runId);
      assert.equal(stored.version, 1 + N);
      const events = await assertGapFree(store(), run.runId, 1 + N);
      assert.deepEqual(
        events
          .slice(1)
          .map((e) => e.payload.writer)
          .sort(),
        range(N).sort(),
      );
      assert.equal(notified, N, `one notification per landed commit (${conflicts} conflicts retried)`);
    });
  });
});
