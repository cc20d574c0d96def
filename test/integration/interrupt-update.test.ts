// An interrupt's UPDATE writes its `data` (the gate's question: title, artifact, approvers, the
// largest column) only when it changed: a decision keeps the record's own `data` object, an
// escalation makes a new one. Watched on SQLite by a trigger on `update of data`, which fires only
// when the statement sets that column.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openStore } from '../../src/store/connect.js';
import type { InterruptRecord } from '../../src/store/model.js';
import type { Store } from '../../src/store/store.js';
import { newRun } from '../support/runs.js';

describe('interrupt update: data written only when changed', () => {
  let dir: string;
  let store: Store;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'handoff-interrupt-update-'));
    store = await openStore({ sqliteFile: join(dir, 'handoff.db') });
    await sql`create temp table data_writes (interrupt_id text)`.execute(store.db);
    await sql`create temp trigger count_data_writes after update of data on main.interrupts
      begin insert into data_writes values (new.interrupt_id); end`.execute(store.db);
  });
  after(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A new open interrupt, stored (its run too), as reading it back gives it. */
  async function openGate(): Promise<InterruptRecord> {
    const run = newRun({ status: 'waiting-approval' });
    const rec: InterruptRecord = {
      interruptId: `int_${run.runId}`,
      runId: run.runId,
      nodeId: 'gate',
      kind: 'approval',
      status: 'open',
      data: { title: 'Review', artifact: { text: 'draft' }, approversList: ['alice'] },
      votes: [],
      exchanges: [],
      createdAt: new Date().toISOString(),
    };
    await store.transaction(async (tx) => {
      await tx.insertRun(run, []);
      await tx.interrupts.insert(rec);
    });
    return (await store.interrupts.getOpen(run.runId)) as InterruptRecord;
  }

  const writesOf = async (id: string): Promise<number> =>
    (await sql<{ n: number }>`select count(*) as n from data_writes where interrupt_id = ${id}`.execute(store.db))
      .rows[0]?.n ?? -1;

  it('a decision that keeps the read record’s data object leaves the column out', async () => {
    const read = await openGate();
    const decided: InterruptRecord = Object.assign({}, read, {
      status: 'resolved' as const,
      votes: [{ principalId: 'alice', action: 'accept', at: new Date().toISOString(), value: {} }],
      resolution: { action: 'accept' },
      resolvedBy: 'alice',
      resolvedAt: new Date().toISOString(),
    });
    assert.equal(await store.transaction((tx) => tx.interrupts.update(decided, 'open', read)), true);
    assert.equal(await writesOf(read.interruptId), 0, 'data not written');
    const [stored] = await store.interrupts.listByRun(read.runId);
    assert.deepEqual(stored, decided, 'everything the decision changed is stored, data as it was');
  });

  it('new data (an escalation) is written; so is data when the read record is not given', async () => {
    const read = await openGate();
    const escalated = Object.assign({}, read, { data: Object.assign({}, read.data, { approversList: ['boss'] }) });
    assert.equal(await store.transaction((tx) => tx.interrupts.update(escalated, 'open', read)), true);
    assert.equal(await writesOf(read.interruptId), 1);
    assert.deepEqual(await store.interrupts.getOpen(read.runId), escalated);

    const again = Object.assign({}, escalated, { exchanges: [{ principalId: 'boss', question: 'Why?', at: 'x' }] });
    assert.equal(await store.transaction((tx) => tx.interrupts.update(again, 'open')), true);
    assert.equal(await writesOf(read.interruptId), 2);
    assert.deepEqual(await store.interrupts.getOpen(read.runId), again);
  });
});
