// The Task events this process committed (src/a2a/task-logs.ts): a reply into a task, and a
// tasks/get that misses the TaskCache, build the Task from them instead of reading the log. These
// tests hold them to "exact": what they hold equals the log as stored after every commit; a commit
// out of sequence, a purge, or a write by another connection drops what is held; and the caps hold.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TASK_EVENT_TYPES, TaskLogs } from '../../src/a2a/task-logs.js';
import { openStore } from '../../src/store/connect.js';
import type { NewRun, Store } from '../../src/store/store.js';
import { type A2ATeam, dataMessage, skillMessage, startA2ATeam, textMessage } from '../support/a2a.js';
import { newRun } from '../support/runs.js';

describe('Task logs: a reply answered from what this process committed (SQLite)', () => {
  let team: A2ATeam;
  before(async () => {
    team = await startA2ATeam('sqlite');
  });
  after(() => team.t.close());

  /** Count the host's reads of task logs while `fn` runs (the real method, counted). */
  async function logReads<T>(fn: () => Promise<T>): Promise<{ result: T; reads: number }> {
    const events = team.t.host.store.events;
    const read = events.listOfTypes.bind(events);
    let reads = 0;
    events.listOfTypes = (...args) => {
      reads++;
      return read(...args);
    };
    try {
      return { result: await fn(), reads };
    } finally {
      events.listOfTypes = read;
    }
  }

  it('held events equal the stored log after each commit; the reply reads no log', async () => {
    const { alice, t } = team;
    const logs = t.host.taskLogs;
    assert.ok(logs, 'a SQLite host keeps Task logs');
    const store = t.host.store;
    const heldEqualsStored = async (id: string) => {
      const run = await store.runs.get(id);
      assert.ok(run);
      const held = logs.get(id, run.nextSeq);
      assert.ok(held, 'held for the run as stored');
      assert.deepEqual(held, await store.events.listOfTypes(id, TASK_EVENT_TYPES));
    };

    const start = await alice.sendOk(skillMessage('approval', 'draft this'));
    assert.equal(start.status.state, 'input-required');
    await heldEqualsStored(start.id);

    const asked = await logReads(() => alice.sendOk(textMessage('what is this about?', { taskId: start.id })));
    assert.equal(asked.result.status.state, 'input-required');
    assert.equal(asked.reads, 0, 'the ask was answered without reading the log');
    await heldEqualsStored(start.id);

    const done = await logReads(() => alice.sendOk(dataMessage({ action: 'accept' }, { taskId: start.id })));
    assert.equal(done.result.status.state, 'completed');
    assert.equal(done.reads, 0, 'the reply was answered without reading the log');
    await heldEqualsStored(start.id);
    assert.equal(done.result.history.length, 3, 'the start, the ask and the reply');
    assert.equal(done.result.artifacts.length, 1);

    // The same Task as one built from the stored log (the TaskCache off: a fresh read).
    t.host.taskCache?.invalidate([start.id]);
    const held = await alice.getTask(start.id);
    logs.listener.purged?.([start.id]);
    t.host.taskCache?.invalidate([start.id]);
    const read = await logReads(() => alice.getTask(start.id));
    assert.equal(read.reads, 1, 'without held events tasks/get reads the log');
    assert.deepEqual(read.result, held);
  });
});

describe('Task logs: exact or absent', () => {
  let dir: string;
  let store: Store;
  let other: Store;
  let logs: TaskLogs;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'handoff-task-logs-'));
    store = await openStore({ sqliteFile: join(dir, 'handoff.db') });
    other = await openStore({ sqliteFile: join(dir, 'handoff.db') });
    logs = TaskLogs.forStore(store) as TaskLogs;
    store.setPipeline({ steps: [], listeners: [logs.listener] });
  });
  after(async () => {
    await store?.close();
    await other?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const message = (text: string) => ({ type: 'a2a.message' as const, payload: { message: { text } } });
  const artifact = (data: string) => ({ type: 'artifact.created' as const, nodeId: 'n', payload: { data } });

  /** A run created with a message, then one commit adding a node event and an artifact. */
  async function twoCommits() {
    const created = await store.transaction((tx) => tx.insertRun(newRun(), [message('hi'), { type: 'run.started' }]));
    const next = await store.transaction((tx) =>
      tx.commitRun(created.run, { status: 'running' }, [{ type: 'node.started', nodeId: 'n' }, artifact('a')]),
    );
    return next.run;
  }

  it('holds only the Task events, for the snapshot it follows', async () => {
    const run = await twoCommits();
    const held = logs.get(run.runId, run.nextSeq);
    assert.deepEqual(
      held?.map((e) => [e.sequence, e.type]),
      [
        [0, 'a2a.message'],
        [3, 'artifact.created'],
      ],
    );
    assert.deepEqual(held, await store.events.listOfTypes(run.runId, TASK_EVENT_TYPES));
    assert.equal(logs.get(run.runId, run.nextSeq - 1), undefined, 'another snapshot of the run is not answered');
  });

  it('a commit out of sequence, or a purge, drops the run', async () => {
    const run = await twoCommits();
    logs.listener.committed?.([{ before: { ...run, nextSeq: run.nextSeq + 1 }, run, events: [] }]);
    assert.equal(logs.get(run.runId, run.nextSeq), undefined, 'a missed commit drops it');

    const again = await twoCommits();
    logs.listener.purged?.([again.runId]);
    assert.equal(logs.get(again.runId, again.nextSeq), undefined);
  });

  it('a write by another connection empties it', async () => {
    const run = await twoCommits();
    const done = await store.transaction((tx) => tx.insertRun(newRun({ status: 'completed' }), [message('bye')]));
    assert.ok(logs.get(run.runId, run.nextSeq));
    assert.ok(logs.get(done.run.runId, done.run.nextSeq), 'a finished run is held too');
    await other.transaction((tx) => tx.insertRun(newRun(), []));
    assert.equal(logs.get(run.runId, run.nextSeq), undefined);
    assert.equal(logs.get(done.run.runId, done.run.nextSeq), undefined);
    assert.equal(logs.size.runs, 0);
  });

  it('keeps within its caps: a log over the entry cap is not kept; the oldest go first', async () => {
    const small = new TaskLogs(() => 0, { maxChars: 100, maxEntryChars: 60 });
    const commit = (runId: string, text: string) =>
      small.listener.committed?.([
        {
          run: { ...newRun({ runId }), nextSeq: 1, version: 1, updatedAt: '' },
          events: [{ runId, sequence: 0, ...message(text), timestamp: '' }],
        },
      ]);
    commit('run_big', 'x'.repeat(80));
    assert.equal(small.get('run_big', 1), undefined, 'over the entry cap');
    commit('run_1', 'a'.repeat(20));
    commit('run_2', 'b'.repeat(20));
    commit('run_3', 'c'.repeat(20));
    assert.equal(small.get('run_1', 1), undefined, 'the oldest went');
    assert.ok(small.get('run_2', 1) && small.get('run_3', 1));
    assert.ok(small.size.chars <= 100);
  });

  it('finished runs have their own smaller tier: their churn never pushes out a run still going', () => {
    // A message event's payload is 23 characters of JSON around its text.
    const tiers = new TaskLogs(() => 0, { maxChars: 300, maxEntryChars: 200 }, 120);
    const commit = (runId: string, status: NewRun['status'], seq: number, text: string) =>
      tiers.listener.committed?.([
        {
          ...(seq > 0 ? { before: { ...newRun({ runId }), nextSeq: seq, version: seq, updatedAt: '' } } : {}),
          run: { ...newRun({ runId, status }), nextSeq: seq + 1, version: seq + 1, updatedAt: '' },
          events: [{ runId, sequence: seq, ...message(text), timestamp: '' }],
        },
      ]);
    commit('run_waiting', 'waiting-approval', 0, 'w'.repeat(20));
    commit('run_finishing', 'waiting-approval', 0, 'f'.repeat(10));
    commit('run_finishing', 'completed', 1, 'g'.repeat(10));
    assert.equal(tiers.get('run_finishing', 2)?.length, 2, 'the commit that finished a run still answers from it');
    for (let i = 0; i < 5; i++) commit(`run_done_${i}`, 'completed', 0, String(i).repeat(20));
    assert.ok(tiers.get('run_waiting', 1), 'finished runs never evict one still going');
    assert.equal(tiers.get('run_finishing', 2), undefined, 'the oldest finished went');
    assert.equal(tiers.get('run_done_2', 1), undefined);
    assert.ok(tiers.get('run_done_3', 1) && tiers.get('run_done_4', 1), 'the newest finished are kept');
    assert.equal(tiers.size.runs, 3);
  });
});
