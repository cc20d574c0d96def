// The store contract: the interrupts repository: open, update from an expected status, latest, cancel.
// Run on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { InterruptRecord } from '../../src/store/model.js';
import { Clock, newRun, newInterrupt, insert, storeContract } from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('interrupts', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('insert, getOpenInterrupt (in a transaction and on the store), optional fields absent', async () => {
      const run = await insert(store(), newRun(clock, { status: 'waiting-approval' }));
      const rec = newInterrupt(clock, run.runId);
      await store().transaction((tx) => tx.interrupts.insert(rec));
      assert.deepEqual(await store().interrupts.getOpen(run.runId), rec);
      for (const key of ['resolution', 'resolvedBy', 'resolvedAt'] as const) assert.equal(key in rec, false);
      await store().transaction(async (tx) => {
        assert.deepEqual(await tx.interrupts.getOpen(run.runId), rec);
        assert.deepEqual(await tx.interrupts.getOpen(run.runId, 'gate'), rec);
        assert.equal(await tx.interrupts.getOpen(run.runId, 'other-node'), undefined);
        assert.equal(await tx.interrupts.getOpen('run_unknown'), undefined);
      });
      assert.deepEqual(await store().interrupts.listByRun(run.runId), [rec]);
    });

    it('updateInterrupt applies only from the expected status; a stale second update returns false', async () => {
      const run = await insert(store(), newRun(clock, { status: 'waiting-approval' }));
      const rec = newInterrupt(clock, run.runId);
      await store().transaction((tx) => tx.interrupts.insert(rec));

      // An `ask` exchange keeps it open.
      clock.advance(1000);
      const asked: InterruptRecord = {
        ...rec,
        exchanges: [{ principalId: 'bob', question: 'Why?', at: clock.iso() }],
      };
      assert.equal(await store().transaction((tx) => tx.interrupts.update(asked, 'open')), true);
      assert.deepEqual(await store().interrupts.getOpen(run.runId), asked);

      // An escalation keeps it open with new data (approvers, deadline).
      const escalated: InterruptRecord = {
        ...asked,
        data: { ...asked.data, approversList: ['boss'], escalated: true },
      };
      assert.equal(await store().transaction((tx) => tx.interrupts.update(escalated, 'open')), true);
      assert.deepEqual(await store().interrupts.getOpen(run.runId), escalated);

      clock.advance(1000);
      const resolved: InterruptRecord = {
        ...escalated,
        status: 'resolved',
        votes: [{ principalId: 'bob', action: 'accept', at: clock.iso(), value: { note: 'ok' } }],
        resolution: { action: 'accept', value: { note: 'ok' } },
        resolvedBy: 'bob',
        resolvedAt: clock.iso(),
      };
      assert.equal(await store().transaction((tx) => tx.interrupts.update(resolved, 'open')), true);
      const rejected: InterruptRecord = {
        ...asked,
        status: 'resolved',
        resolution: { action: 'reject' },
        resolvedBy: 'carol',
        resolvedAt: clock.iso(),
      };
      assert.equal(
        await store().transaction((tx) => tx.interrupts.update(rejected, 'open')),
        false,
        'the loser is told',
      );
      assert.deepEqual(await store().interrupts.listByRun(run.runId), [resolved], 'and changes nothing');
      assert.equal(await store().interrupts.getOpen(run.runId), undefined);
      assert.equal(
        await store().transaction((tx) => tx.interrupts.update({ ...rec, interruptId: 'int_unknown' }, 'open')),
        false,
      );
    });

    it('two concurrent resolutions: exactly one wins', async () => {
      const run = await insert(store(), newRun(clock, { status: 'waiting-approval' }));
      const rec = newInterrupt(clock, run.runId);
      await store().transaction((tx) => tx.interrupts.insert(rec));
      const deciders = ['bob', 'carol', 'dave', 'erin'];
      const results = await Promise.all(
        deciders.map((who) =>
          store().transaction(async (tx) => {
            const open = await tx.interrupts.getOpen(run.runId);
            if (!open) return false;
            return tx.interrupts.update(
              { ...open, status: 'resolved', resolvedBy: who, resolvedAt: clock.iso(), resolution: { by: who } },
              'open',
            );
          }),
        ),
      );
      assert.equal(results.filter(Boolean).length, 1);
      const winner = deciders[results.indexOf(true)];
      const [stored] = await store().interrupts.listByRun(run.runId);
      assert.equal(stored?.resolvedBy, winner);
      assert.deepEqual(stored?.resolution, { by: winner });
    });

    it('getLatestInterrupt returns the newest interrupt of a node, open or not', async () => {
      const run = await insert(store(), newRun(clock, { status: 'waiting-approval' }));
      const first = newInterrupt(clock, run.runId, { nodeId: 'gate' });
      await store().transaction((tx) => tx.interrupts.insert(first));
      clock.advance(1000);
      const second = newInterrupt(clock, run.runId, { nodeId: 'gate', data: { round: 2 } });
      const elsewhere = newInterrupt(clock, run.runId, {
        nodeId: 'ask',
        kind: 'clarification',
        data: { questions: ['Which region?'] },
      });
      await store().transaction(async (tx) => {
        assert.equal(
          await tx.interrupts.update(
            { ...first, status: 'resolved', resolvedAt: clock.iso(), resolution: { action: 'refine' } },
            'open',
          ),
          true,
        );
        await tx.interrupts.insert(second);
        await tx.interrupts.insert(elsewhere);
      });
      await store().transaction(async (tx) => {
        assert.deepEqual(await tx.interrupts.getLatest(run.runId, 'gate'), second);
        assert.deepEqual(await tx.interrupts.getLatest(run.runId, 'ask'), elsewhere);
        assert.equal(await tx.interrupts.getLatest(run.runId, 'none'), undefined);
        assert.equal((await tx.interrupts.getOpen(run.runId, 'gate'))?.interruptId, second.interruptId);
      });
      clock.advance(1000);
      await store().transaction((tx) =>
        tx.interrupts.update({ ...second, status: 'resolved', resolvedAt: clock.iso() }, 'open'),
      );
      const latest = await store().transaction((tx) => tx.interrupts.getLatest(run.runId, 'gate'));
      assert.equal(latest?.interruptId, second.interruptId);
      assert.equal(latest?.status, 'resolved');
      const listed = (await store().interrupts.listByRun(run.runId)).map((i) => i.interruptId);
      assert.deepEqual([...listed].sort(), [first.interruptId, second.interruptId, elsewhere.interruptId].sort());
      assert.equal(listed[0], first.interruptId, 'listInterrupts is oldest first');
    });

    it('cancelOpenInterrupts cancels only the open interrupts of that run', async () => {
      const run = await insert(store(), newRun(clock, { status: 'cancelling' }));
      const other = await insert(store(), newRun(clock, { status: 'waiting-approval' }));
      const openA = newInterrupt(clock, run.runId, { nodeId: 'a' });
      const openB = newInterrupt(clock, run.runId, { nodeId: 'b', kind: 'clarification' });
      const done = newInterrupt(clock, run.runId, {
        nodeId: 'c',
        status: 'resolved',
        resolvedBy: 'bob',
        resolvedAt: clock.iso(),
        resolution: { x: 1 },
      });
      const foreign = newInterrupt(clock, other.runId);
      await store().transaction(async (tx) => {
        for (const r of [openA, openB, done, foreign]) await tx.interrupts.insert(r);
      });
      clock.advance(5000);
      await store().transaction((tx) => tx.interrupts.cancelOpen(run.runId));
      const byId = new Map((await store().interrupts.listByRun(run.runId)).map((i) => [i.interruptId, i]));
      assert.deepEqual(byId.get(openA.interruptId), { ...openA, status: 'cancelled', resolvedAt: clock.iso() });
      assert.deepEqual(byId.get(openB.interruptId), { ...openB, status: 'cancelled', resolvedAt: clock.iso() });
      assert.deepEqual(byId.get(done.interruptId), done);
      assert.equal(await store().interrupts.getOpen(run.runId), undefined);
      assert.deepEqual(await store().interrupts.getOpen(other.runId), foreign);
    });
  });
});
