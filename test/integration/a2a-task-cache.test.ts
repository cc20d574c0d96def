// tasks/get serves repeated reads of a Task from memory on SQLite (src/a2a/task-cache.ts). These
// tests hold it to "exact": after any committed change (a reply, an `ask` that leaves the state
// as it was, a cancel, a purge), the next tasks/get shows the change; a read racing a commit never
// keeps what it read; another tenant never gets a held Task; a write by another connection empties
// it; and the host holds its SQLite file alone, so no other process can write behind its back.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TaskCache } from '../../src/a2a/task-cache.js';
import { openStore } from '../../src/store/connect.js';
import type { Store } from '../../src/store/store.js';
import {
  type A2ATeam,
  assertRpcError,
  dataMessage,
  getTask,
  rpc,
  sendOk,
  skillMessage,
  startA2ATeam,
  textMessage,
} from '../support/a2a.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { cliPath } from '../support/server-process.js';

function cacheOf(t: TestHost): TaskCache {
  const cache = t.host.taskCache;
  assert.ok(cache, 'a SQLite host has a task cache');
  return cache;
}

describe('tasks/get cache (SQLite)', () => {
  let team: A2ATeam;
  before(async () => {
    team = await startA2ATeam('sqlite');
  });
  after(() => team.t.close());

  it('a repeated tasks/get is served from the cache, and every committed change replaces it', async () => {
    const { alice, t } = team;
    const cache = cacheOf(t);
    const start = await alice.sendOk(skillMessage('approval', 'draft this'));
    assert.equal(start.status.state, 'input-required');

    const first = await alice.getTask(start.id);
    assert.ok(cache.get(start.id, 't1', undefined), 'the first read is kept');
    assert.deepEqual(await alice.getTask(start.id), first, 'a held Task reads the same as a built one');

    // An ask changes the history, not the state: the held Task must still go.
    const asked = await alice.sendOk(textMessage('what is this about?', { taskId: start.id }));
    assert.equal(asked.status.state, 'input-required');
    assert.equal(cache.get(start.id, 't1', undefined), undefined, 'the commit dropped the held Task');
    const afterAsk = await alice.getTask(start.id);
    assert.equal(afterAsk.history.length, first.history.length + 1, 'the ask is in the history');

    await alice.sendOk(dataMessage({ action: 'accept' }, { taskId: start.id }));
    const done = await alice.getTask(start.id);
    assert.equal(done.status.state, 'completed');
    assert.ok(cache.get(start.id, 't1', undefined), 'the completed Task is kept again');
  });

  it('each historyLength is its own entry and cut correctly', async () => {
    const { alice } = team;
    const start = await alice.sendOk(skillMessage('approval', 'draft this'));
    await alice.sendOk(textMessage('a question', { taskId: start.id }));
    const all = await alice.getTask(start.id);
    const one = await alice.getTask(start.id, 1);
    const none = await alice.getTask(start.id, 0);
    assert.equal(all.history.length, 2);
    assert.deepEqual(one.history, all.history.slice(-1));
    assert.equal(none.history, undefined);
    assert.deepEqual(await alice.getTask(start.id, 1), one);
  });

  it('a cancel is seen by the next read', async () => {
    const { alice } = team;
    const start = await alice.sendOk(skillMessage('approval', 'draft this'));
    await alice.getTask(start.id);
    const res = await alice.rpc('tasks/cancel', { id: start.id });
    assert.equal(res.body.result.status.state, 'canceled', res.text);
    assert.equal((await alice.getTask(start.id)).status.state, 'canceled');
  });

  it('another tenant never gets a held Task: -32001 as for an unknown one', async () => {
    const { alice, eve } = team;
    const task = await alice.sendOk(skillMessage('echo', 'mine'));
    await alice.getTask(task.id);
    await alice.getTask(task.id);
    assertRpcError(await eve.rpc('tasks/get', { id: task.id }, 7), -32001, 7);
  });

  it('a purged task is gone from the cache too', async () => {
    const { alice, t } = team;
    const task = await alice.sendOk(skillMessage('echo', 'short-lived'));
    await alice.getTask(task.id);
    assert.ok(cacheOf(t).get(task.id, 't1', undefined));
    assert.ok((await t.host.store.purgeTerminalBefore(new Date(Date.now() + 60_000))) >= 1);
    assert.equal(cacheOf(t).get(task.id, 't1', undefined), undefined);
    assertRpcError(await alice.rpc('tasks/get', { id: task.id }, 'p'), -32001, 'p');
  });
});

describe('tasks/get cache: a read racing a commit', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost({ startRunner: false });
  });
  after(() => t.close());

  it('does not keep what it read when the task changed meanwhile', async () => {
    const cache = cacheOf(t);
    const runId = await t.createRun('approval', { prompt: 'x' });
    // A read that began before the commit below (its ticket is taken) and ends after it.
    const ticket = cache.begin(runId);
    const stale = JSON.stringify({ id: runId, status: { state: 'submitted' } });
    await t.host.store.transaction(async (tx) => {
      const run = await tx.getRun(runId);
      assert.ok(run);
      await tx.commitRun(run, { metadata: { touched: true } }, []);
    });
    cache.put(ticket, 'default', undefined, stale);
    cache.end(ticket);
    assert.equal(cache.get(runId, 'default', undefined), undefined, 'a stale read must not be kept');
    // A read with no commit in between is kept.
    const fresh = cache.begin(runId);
    cache.put(fresh, 'default', undefined, '{"fresh":true}');
    cache.end(fresh);
    assert.equal(cache.get(runId, 'default', undefined), '{"fresh":true}');
  });
});

describe('TaskCache bounds and foreign writers', () => {
  it('keeps at most maxChars (least recently used go first) and never a Task over maxEntryChars', () => {
    const cache = new TaskCache(() => 0, { maxChars: 100, maxEntryChars: 40 });
    const keep = (id: string, text: string) => {
      const ticket = cache.begin(id);
      cache.put(ticket, 't', undefined, text);
      cache.end(ticket);
    };
    keep('big', 'x'.repeat(41));
    assert.equal(cache.get('big', 't', undefined), undefined);
    for (const id of ['a', 'b', 'c']) keep(id, id.repeat(30));
    assert.ok(cache.get('a', 't', undefined), 'a is used again: now the most recent');
    keep('d', 'd'.repeat(30)); // 120 > 100: the least recently used (b) goes
    assert.equal(cache.get('b', 't', undefined), undefined);
    for (const id of ['a', 'c', 'd']) assert.ok(cache.get(id, 't', undefined), id);
    assert.deepEqual(cache.size, { tasks: 3, chars: 90 });
  });

  it('empties itself when another connection writes the database (SQLite data_version)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-cache-'));
    const file = join(dir, 'handoff.db');
    let a: Store | undefined;
    let b: Store | undefined;
    try {
      a = await openStore({ sqliteFile: file });
      b = await openStore({ sqliteFile: file });
      const cache = TaskCache.forStore(a);
      assert.ok(cache);
      const ticket = cache.begin('task-1');
      cache.put(ticket, 't', undefined, '{"v":1}');
      cache.end(ticket);
      assert.equal(cache.get('task-1', 't', undefined), '{"v":1}');
      // Any committed write by another connection.
      await b.db
        .insertInto('secrets')
        .values({ secret_id: 's1', ciphertext: 'c', created_at: new Date().toISOString() })
        .execute();
      assert.equal(cache.get('task-1', 't', undefined), undefined);
      assert.equal(cache.size.tasks, 0);
    } finally {
      await a?.close();
      await b?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads data_version only where another connection may write: a file held alone runs no statement for it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-cache-'));
    const ops: string[] = [];
    let shared: Store | undefined;
    let held: Store | undefined;
    try {
      const onStatement = (op: string) => ops.push(op);
      shared = await openStore({ sqliteFile: join(dir, 'shared.db'), onStatement });
      held = await openStore({ sqliteFile: join(dir, 'held.db'), sqliteExclusive: true, onStatement });
      ops.length = 0;
      shared.dataVersion?.();
      assert.deepEqual(ops, ['pragma'], 'a shared file is asked, and the question is counted');
      ops.length = 0;
      const first = held.dataVersion?.();
      // The held file changes, by its own connection only: the number stays, and nothing is asked.
      await held.db
        .insertInto('secrets')
        .values({ secret_id: 's1', ciphertext: 'c', created_at: new Date().toISOString() })
        .execute();
      ops.length = 0;
      assert.equal(held.dataVersion?.(), first);
      assert.deepEqual(ops, []);
    } finally {
      await shared?.close();
      await held?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is not offered on PostgreSQL-like stores (no dataVersion)', () => {
    assert.equal(TaskCache.forStore({ dataVersion: undefined } as unknown as Store), undefined);
  });
});

describe('one process per SQLite file', () => {
  let t: TestHost;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'handoff-excl-'));
    t = await startTestHost({ dataDir: dir });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a second `handoff serve` on the same data directory refuses to start and says why', async () => {
    const child = spawn(process.execPath, [cliPath(), 'serve', '--port', '0', '--data', dir], {
      env: { ...process.env, HANDOFF_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    assert.notEqual(code, 0, output);
    assert.match(output, /is in use by another process/);
    // The owner is untouched and still serves.
    const res = await rpc(t, 'tasks/get', { id: 'nope' }, { id: 1 });
    assertRpcError(res, -32001, 1);
    const task = await sendOk(t, skillMessage('echo', 'still here'));
    assert.equal((await getTask(t, task.id)).status.state, 'completed');
  });
});
