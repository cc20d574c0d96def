// Streams over HTTP, in process: the real host (store, engine, worker) with its Fastify app
// listening on 127.0.0.1:0 — `inject` cannot stream, so these tests speak real HTTP through the
// raw SSE client (test/support/sse-client.ts). Covered: the REST event stream GET /v1/runs/{id}/events
// (order, `id:` = sequence, `event:` = type, Last-Event-ID, close after the final event, errors
// before any SSE byte, keepalive comments, a disconnect never cancels the run), the A2A streaming
// errors and edge cases (plain JSON-RPC errors before SSE, a terminal task's snapshot), 200
// concurrent resubscribers on one task, and a graceful close ending open streams.
// Runs on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BUILTIN_DIR, bearer, DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';
import {
  expectedA2AUpdates,
  openA2AStream,
  openSse,
  resultWord,
  results,
  type SseConnection,
} from '../support/sse-client.js';

const ALICE = 'key-alice-123';
const BOB = 'key-bob-4567';
const API_KEYS = `${ALICE}=acme:alice,${BOB}=other:bob`;
const AS_ALICE = bearer(ALICE);
const TEST_TIMEOUT_MS = 90_000;

/** Listen on an ephemeral loopback port; returns the base URL. */
async function listen(t: TestHost): Promise<string> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = t.app.server.address();
  assert.ok(addr && typeof addr === 'object');
  return `http://127.0.0.1:${addr.port}`;
}

const msg = (parts: Json[], metadata: Record<string, unknown>): Json => ({
  kind: 'message',
  role: 'user',
  messageId: `m-${randomUUID()}`,
  parts,
  metadata,
});
const stepsMessage = (steps: number, stepMs: number): Json =>
  msg([{ kind: 'data', data: { steps, stepMs } }], { skillId: 'steps' });
const approvalMessage = (prompt: string): Json => msg([{ kind: 'text', text: prompt }], { skillId: 'approval' });

/** SSE ids as numbers. */
const ids = (c: SseConnection): number[] => c.events.map((e) => Number(e.id));

for (const dialect of DIALECTS) {
  describe(`streams over HTTP (${dialect})`, { timeout: 10 * TEST_TIMEOUT_MS }, () => {
    let t: TestHost;
    let url: string;

    before(async () => {
      t = await startTestHost({
        apiKeys: API_KEYS,
        env: { HANDOFF_SSE_KEEPALIVE_MS: '200' },
        ...(dialect === 'postgres' ? { pg: true } : {}),
      });
      url = await listen(t);
    });
    after(async () => {
      await t?.close();
    });

    const rpc = async (method: string, params: unknown, key = ALICE): Promise<Json> => {
      const res = await t.post('/v1/a2a', { jsonrpc: '2.0', id: 1, method, params }, bearer(key));
      assert.equal(res.status, 200, res.text);
      return res.body;
    };

    // ------------------------------------------------------------------ REST SSE

    it('REST: every event in order, id: = sequence, event: = type, data = the polled event; \
closed after run.completed', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const runId = await t.createRun('steps', { steps: 3, stepMs: 50 }, AS_ALICE);
      const s = await openSse(`${url}/v1/runs/${runId}/events`, { token: ALICE });
      assert.equal(s.status, 200);
      assert.match(s.contentType, /^text\/event-stream/);
      assert.equal(s.headers['cache-control'], 'no-cache');
      assert.equal(s.headers['x-accel-buffering'], 'no');
      assert.equal((await s.waitForEnd()).reason, 'end', 'the server closes the stream after the final event');
      const log = await t.events(runId, AS_ALICE);
      assert.equal(log.at(-1).type, 'run.completed');
      assert.deepEqual(
        ids(s),
        log.map((e: Json) => e.sequence),
        'ids are the sequences, gap-free from 0',
      );
      assert.deepEqual(
        s.events.map((e) => e.event),
        log.map((e: Json) => e.type),
      );
      assert.deepEqual(
        s.events.map((e) => e.json),
        log,
        'data is the same event document the poll returns',
      );
      assert.ok(
        s.events.every((e) => !e.data.includes('\n')),
        'one data line per event',
      );
    });

    it('REST: Last-Event-ID resumes after that sequence, no repeat (finished run, and a live run dropped mid-way)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const done = await t.createRun('steps', { steps: 2, stepMs: 10 }, AS_ALICE);
      await t.waitForStatus(done, ['completed'], AS_ALICE);
      const log = await t.events(done, AS_ALICE);
      const last = log.length - 1;
      for (const k of [-1, 0, 1, Math.floor(last / 2), last - 1, last]) {
        const s = await openSse(`${url}/v1/runs/${done}/events`, { token: ALICE, lastEventId: k });
        assert.equal(s.status, 200);
        assert.equal((await s.waitForEnd()).reason, 'end', `Last-Event-ID ${k}: the stream of a finished run ends`);
        assert.deepEqual(
          ids(s),
          log.slice(k + 1).map((e: Json) => e.sequence),
          `Last-Event-ID ${k}`,
        );
      }

      // Live: drop after a few events, resume with the last id seen.
      const live = await t.createRun('steps', { steps: 4, stepMs: 100 }, AS_ALICE);
      const a = await openSse(`${url}/v1/runs/${live}/events`, { token: ALICE });
      await a.waitForCount(3);
      a.abort();
      const cursor = Number(a.lastEventId);
      const b = await openSse(`${url}/v1/runs/${live}/events`, { token: ALICE, lastEventId: cursor });
      assert.equal((await b.waitForEnd()).reason, 'end');
      const union = [...ids(a), ...ids(b)];
      const full = (await t.events(live, AS_ALICE)).map((e: Json) => e.sequence);
      assert.equal(new Set(union).size, union.length, `duplicate ids: ${union}`);
      assert.deepEqual(union, full, 'no gap, no repeat across the drop');
      assert.ok(ids(b).every((id) => id > cursor));
      assert.equal(b.events.at(-1)?.event, 'run.completed');
    });

    it('REST: unknown run → 404 JSON, foreign tenant → the same 404, malformed Last-Event-ID → 400; \
all before any SSE byte', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const runId = await t.createRun('approval', { prompt: 'x' }, AS_ALICE);
      const unknown = await openSse(`${url}/v1/runs/run_does-not-exist/events`, { token: ALICE });
      assert.equal(unknown.status, 404);
      assert.match(unknown.contentType, /^application\/json/);
      assert.equal(unknown.json?.error, 'not_found', unknown.text);

      const foreign = await openSse(`${url}/v1/runs/${runId}/events`, { token: BOB });
      assert.equal(foreign.status, 404);
      assert.match(foreign.contentType, /^application\/json/);
      assert.equal(foreign.json?.error, 'not_found', foreign.text);
      assert.deepEqual(
        Object.keys(foreign.json).sort(),
        Object.keys(unknown.json).sort(),
        'a foreign run looks like an unknown one',
      );

      for (const bad of ['abc', '-2', '1.5', '3abc']) {
        const s = await openSse(`${url}/v1/runs/${runId}/events`, { token: ALICE, lastEventId: bad });
        assert.equal(s.status, 400, `Last-Event-ID ${bad}: ${s.text}`);
        assert.match(s.contentType, /^application\/json/);
        assert.equal(s.json?.error, 'validation_error');
      }
      const anonymous = await openSse(`${url}/v1/runs/${runId}/events`);
      assert.equal(anonymous.status, 401);
      assert.ok(!anonymous.isSse);
    });

    it('REST: a waiting approval run’s stream stays open and carries :keepalive comments \
(HANDOFF_SSE_KEEPALIVE_MS=200)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const runId = await t.createRun('approval', { prompt: 'keep me alive' }, AS_ALICE);
      await t.waitForStatus(runId, ['waiting-approval'], AS_ALICE);
      const s = await openSse(`${url}/v1/runs/${runId}/events`, { token: ALICE });
      await s.waitFor((e) => e.event === 'interrupt.requested', 'interrupt.requested');
      const n = s.events.length;
      await s.waitForComment((c) => c === 'keepalive', 'a :keepalive comment');
      await s.waitForComment((c) => c === 'keepalive', 'a second :keepalive comment', undefined, s.comments.length);
      assert.equal(s.end, undefined, 'the stream of a waiting run stays open');
      assert.equal(s.events.length, n, 'no events while waiting');
      // The comments are inert for the event stream; the approval then flows through to the end.
      const res = await t.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue: { action: 'accept' } }, AS_ALICE);
      assert.equal(res.status, 200, res.text);
      assert.equal((await s.waitForEnd()).reason, 'end');
      assert.equal(s.events.at(-1)?.event, 'run.completed');
      assert.deepEqual(
        ids(s),
        (await t.events(runId, AS_ALICE)).map((e: Json) => e.sequence),
      );
    });

    it('disconnecting a stream never cancels the task: REST SSE and A2A message/stream dropped mid-run, \
both runs complete', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const runId = await t.createRun('steps', { steps: 4, stepMs: 100 }, AS_ALICE);
      const rest = await openSse(`${url}/v1/runs/${runId}/events`, { token: ALICE });
      await rest.waitForCount(2);
      rest.abort();

      const a2a = await openA2AStream(url, 'message/stream', { message: stepsMessage(4, 100) }, { token: ALICE });
      await a2a.waitForCount(2);
      a2a.abort();
      const taskId = results(a2a)[0].id as string;

      for (const id of [runId, taskId]) {
        const run = await t.waitForStatus(id, ['completed', 'failed', 'cancelled'], AS_ALICE);
        assert.equal(run.status, 'completed');
        const log = await t.events(id, AS_ALICE);
        assert.ok(
          !log.some((e: Json) => /cancel/.test(e.type)),
          `cancel events after a disconnect: ${log.map((e: Json) => e.type)}`,
        );
        assert.equal(log.filter((e: Json) => e.type === 'run.started').length, 1);
      }
    });

    it('REST and A2A streams also end at run.failed and run.cancelled (failed/canceled with final:true)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      // Failed: a REST stream from the start, and a message/stream of a new task.
      const failed = await t.createRun('fail', { code: 'boom' }, AS_ALICE);
      const rf = await openSse(`${url}/v1/runs/${failed}/events`, { token: ALICE });
      assert.equal((await rf.waitForEnd()).reason, 'end');
      assert.equal(rf.events.at(-1)?.event, 'run.failed');
      const af = await openA2AStream(
        url,
        'message/stream',
        { message: msg([{ kind: 'data', data: { code: 'boom' } }], { skillId: 'fail' }) },
        { token: ALICE },
      );
      assert.equal((await af.waitForEnd()).reason, 'end');
      const lastFailed = results(af).at(-1);
      assert.equal(lastFailed.status.state, 'failed', af.describe());
      assert.equal(lastFailed.final, true);
      assert.equal(lastFailed.metadata.openwop.error.code, 'boom');

      // Cancelled while both a REST stream and an A2A observer are attached to the waiting run.
      const task = (await rpc('message/send', { message: approvalMessage('cancel me') })).result;
      const rc = await openSse(`${url}/v1/runs/${task.id}/events`, { token: ALICE });
      const ac = await openA2AStream(url, 'tasks/resubscribe', { id: task.id }, { token: ALICE });
      await rc.waitFor((e) => e.event === 'interrupt.requested', 'interrupt.requested');
      await ac.waitForCount(1);
      const canceled = (await rpc('tasks/cancel', { id: task.id })).result;
      assert.equal(canceled.status.state, 'canceled');
      assert.equal((await rc.waitForEnd()).reason, 'end');
      assert.equal(rc.events.at(-1)?.event, 'run.cancelled');
      assert.equal((await ac.waitForEnd()).reason, 'end');
      assert.deepEqual(
        results(ac).map((r) =>
          r.kind === 'task' ? `task(${r.status.state})` : `${r.status.state}${r.final ? '!' : ''}`,
        ),
        ['task(input-required)', 'canceled!'],
      );
    });

    // ------------------------------------------------------------------ A2A edge cases

    it('A2A: resubscribe errors before any update are the one SSE error event: unknown/foreign → -32001, \
malformed lastEventId → -32602', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = (await rpc('message/send', { message: approvalMessage('mine') })).result;
      const cases: Array<[string, Json, { token: string; lastEventId?: string }, number]> = [
        ['unknown', { id: 'run_does-not-exist' }, { token: ALICE }, -32001],
        ['foreign', { id: task.id }, { token: BOB }, -32001],
        ['foreign with a cursor', { id: task.id }, { token: BOB, lastEventId: '0' }, -32001],
        ['header abc', { id: task.id }, { token: ALICE, lastEventId: 'abc' }, -32602],
        ['metadata abc', { id: task.id, metadata: { lastEventId: 'abc' } }, { token: ALICE }, -32602],
        ['metadata -5', { id: task.id, metadata: { lastEventId: -5 } }, { token: ALICE }, -32602],
      ];
      for (const [what, params, opts, code] of cases) {
        const s = await openA2AStream(url, 'tasks/resubscribe', params, { ...opts, rpcId: 7 });
        assert.equal(s.status, 200, what);
        assert.ok(s.isSse, `${what}: ${s.contentType}`);
        assert.deepEqual(await s.ended, { reason: 'end' }, what);
        assert.deepEqual(
          s.events.map((e) => [e.event, e.json?.id, e.json?.error?.code]),
          [['error', 7, code]],
          what,
        );
      }
      // message/stream: an unknown skill is refused the same way, before anything starts.
      const bad = await openA2AStream(
        url,
        'message/stream',
        { message: msg([{ kind: 'text', text: 'x' }], { skillId: 'nope' }) },
        { token: ALICE, rpcId: 8 },
      );
      await bad.ended;
      assert.deepEqual(
        bad.events.map((e) => [e.event, e.json?.error?.code]),
        [['error', -32602]],
      );
    });

    const turn = (s: SseConnection): string[] => results(s).map(resultWord);
    const replyMessage = (taskId: string, data: Record<string, unknown>, messageId = `m-${randomUUID()}`): Json => ({
      kind: 'message',
      role: 'user',
      messageId,
      taskId,
      parts: [{ kind: 'data', data }],
    });

    it('A2A: message/stream of a reply starts with the Task as it was (input-required), \
then ends at the next input-required or at completed', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = (await rpc('message/send', { message: approvalMessage('reply by stream') })).result;
      const refine = await openA2AStream(
        url,
        'message/stream',
        { message: replyMessage(task.id, { action: 'refine', feedback: 'shorter' }) },
        { token: ALICE },
      );
      assert.equal((await refine.waitForEnd()).reason, 'end');
      assert.deepEqual(turn(refine), [
        'task(input-required)',
        'working',
        '▸Draft (1 of 3)',
        '▸Review (2 of 3)',
        'input-required!',
      ]);
      const accept = await openA2AStream(
        url,
        'message/stream',
        { message: replyMessage(task.id, { action: 'accept' }) },
        { token: ALICE },
      );
      assert.equal((await accept.waitForEnd()).reason, 'end');
      assert.deepEqual(turn(accept), [
        'task(input-required)',
        'working',
        '▸Publish (3 of 3)',
        'artifact',
        'completed!',
      ]);
      // Each turn's ids continue the log: together they are the task's A2A updates after the first turn.
      const log = await t.events(task.id, AS_ALICE);
      const firstGate = log.find((e: Json) => e.type === 'interrupt.requested').sequence;
      assert.deepEqual(
        [...ids(refine), ...ids(accept)].filter((n) => !Number.isNaN(n)),
        expectedA2AUpdates(log)
          .filter((e) => e.seq > firstGate)
          .map((e) => e.seq),
      );
    });

    it('A2A: a retried reply over message/stream (same messageId, \
already applied) does not report a stale input-required', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = (await rpc('message/send', { message: approvalMessage('retry by stream') })).result;
      const reply = replyMessage(task.id, { action: 'accept' });
      const first = await openA2AStream(url, 'message/stream', { message: reply }, { token: ALICE });
      assert.equal((await first.waitForEnd()).reason, 'end');
      assert.deepEqual(turn(first), ['task(input-required)', 'working', '▸Publish (3 of 3)', 'artifact', 'completed!']);
      const again = await openA2AStream(url, 'message/stream', { message: reply }, { token: ALICE });
      assert.equal((await again.waitForEnd()).reason, 'end');
      const seen = turn(again);
      // Either the original turn is replayed, or the stream says what the task is now: completed.
      assert.ok(
        !seen.includes('task(input-required)') || seen.at(-1) === 'completed!',
        `retry shows ${JSON.stringify(seen)}; the task is completed`,
      );
      assert.ok(
        seen.at(-1) === 'completed!' || seen.at(-1) === 'task(completed)',
        `retry shows ${JSON.stringify(seen)}`,
      );
    });

    it('A2A: resubscribe to a terminal task sends its snapshot (with the last sequence as id) and closes', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = (await rpc('message/send', { message: stepsMessage(1, 0) })).result;
      assert.equal(task.status.state, 'completed');
      const s = await openA2AStream(url, 'tasks/resubscribe', { id: task.id }, { token: ALICE });
      assert.equal((await s.waitForEnd()).reason, 'end');
      const r = results(s);
      assert.equal(r.length, 1, s.describe());
      assert.equal(r[0].kind, 'task');
      assert.equal(r[0].status.state, 'completed');
      assert.deepEqual(r[0].artifacts, task.artifacts);
      const log = await t.events(task.id, AS_ALICE);
      assert.equal(Number(s.events[0]?.id), log.at(-1).sequence);
      // A cursor at (or past) the final event: nothing more to say, the stream just closes.
      const c = await openA2AStream(
        url,
        'tasks/resubscribe',
        { id: task.id },
        { token: ALICE, lastEventId: log.at(-1).sequence },
      );
      assert.equal((await c.waitForEnd()).reason, 'end');
      assert.equal(c.events.length, 0, c.describe());
    });

    it('A2A: a resubscribe update is its log event: id = sequence, status.timestamp = the event timestamp', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      // The bench times stream delivery against the log's timestamps; this is what makes that valid.
      const task = (await rpc('message/send', { message: approvalMessage('time me') })).result;
      assert.equal(task.status.state, 'input-required');
      const s = await openA2AStream(url, 'tasks/resubscribe', { id: task.id }, { token: ALICE });
      await s.waitForCount(1);
      const done = (
        await rpc('message/send', {
          message: { ...msg([{ kind: 'data', data: { action: 'accept' } }], {}), taskId: task.id },
        })
      ).result;
      assert.equal(done.status.state, 'completed');
      assert.equal((await s.waitForEnd()).reason, 'end', s.describe());
      const log = await t.events(task.id, AS_ALICE);
      const bySeq = new Map<number, Json>(log.map((e: Json) => [e.sequence, e]));
      const updates = s.events.slice(1);
      assert.deepEqual(
        updates.map((e) => resultWord(e.json.result)),
        ['working', '▸Publish (3 of 3)', 'artifact', 'completed!'],
        s.describe(),
      );
      for (const ev of updates) {
        const logged = bySeq.get(Number(ev.id));
        assert.ok(logged, `update id ${ev.id} is no log sequence: ${s.describe()}`);
        const r = ev.json.result;
        if (r.kind === 'artifact-update') {
          assert.equal(logged.type, 'artifact.created');
          assert.equal(r.artifact.artifactId, logged.payload.artifactId);
        } else {
          assert.equal(r.status.timestamp, logged.timestamp, `update ${ev.id} (${logged.type})`);
        }
      }
    });

    it('A2A: resubscribe with the input-required id as cursor waits (open, final:false nowhere), \
then follows the approval to completed', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = (await rpc('message/send', { message: approvalMessage('wait for it') })).result;
      const log = await t.events(task.id, AS_ALICE);
      const expected = expectedA2AUpdates(log);
      const gate = expected.at(-1);
      assert.equal(gate?.state, 'input-required');
      const s = await openA2AStream(
        url,
        'tasks/resubscribe',
        { id: task.id },
        { token: ALICE, lastEventId: gate?.seq },
      );
      await s.waitForComment((c) => c === 'keepalive', 'a keepalive');
      assert.equal(s.events.length, 0, `nothing after the cursor yet: ${s.describe()}`);
      const done = (
        await rpc('message/send', {
          message: { ...msg([{ kind: 'data', data: { action: 'accept' } }], {}), taskId: task.id },
        })
      ).result;
      assert.equal(done.status.state, 'completed');
      assert.equal((await s.waitForEnd()).reason, 'end');
      const after = await t.events(task.id, AS_ALICE);
      assert.deepEqual(results(s).map(resultWord), ['working', '▸Publish (3 of 3)', 'artifact', 'completed!']);
      assert.deepEqual(
        ids(s),
        expectedA2AUpdates(after)
          .filter((e) => e.seq > (gate?.seq as number))
          .map((e) => e.seq),
      );
    });
  });

  describe(`200 concurrent resubscribers on one steps task (${dialect})`, { timeout: 4 * TEST_TIMEOUT_MS }, () => {
    let t: TestHost;
    let url: string;

    before(async () => {
      // The worker starts only once every subscriber is attached: each must then see every update.
      t = await startTestHost({
        apiKeys: API_KEYS,
        startRunner: false,
        ...(dialect === 'postgres' ? { pg: true } : {}),
      });
      url = await listen(t);
    });
    after(async () => {
      await t?.close();
    });

    it('all 200 receive the same updates in the same order: Task, working, a progress update per node, artifact, completed final:true', {
      timeout: 3 * TEST_TIMEOUT_MS,
    }, async (ctx) => {
      const N = 200;
      const sent = await t.post(
        '/v1/a2a',
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: stepsMessage(5, 100), configuration: { blocking: false } },
        },
        AS_ALICE,
      );
      const task = sent.body.result;
      assert.equal(task.status.state, 'submitted', sent.text);

      const t0 = Date.now();
      // Generous bounds: 200 connections on a loaded CI machine can take a while.
      const streams = await Promise.all(
        Array.from({ length: N }, () =>
          openA2AStream(url, 'tasks/resubscribe', { id: task.id }, { token: ALICE, deadlineMs: 250_000 }),
        ),
      );
      await Promise.all(streams.map((s) => s.waitForCount(1, 120_000)));
      const attachedMs = Date.now() - t0;
      for (const s of streams) {
        assert.equal(s.status, 200);
        const first = results(s)[0];
        assert.equal(first.kind, 'task');
        assert.equal(first.status.state, 'submitted', 'the run has not started yet');
      }

      t.host.runner.start();
      const ends = await Promise.all(streams.map((s) => s.waitForEnd(120_000)));
      const totalMs = Date.now() - t0;
      assert.ok(
        ends.every((e) => e.reason === 'end'),
        JSON.stringify(ends.filter((e) => e.reason !== 'end')),
      );

      const log = await t.events(task.id, AS_ALICE);
      const expected = expectedA2AUpdates(
        log.filter((e: Json) => e.sequence > Number(streams[0]?.events[0]?.id)),
        'submitted',
      );
      // Five steps: each node start is a progress update (init, then step and count five times, done).
      assert.deepEqual(
        expected.map((e) => e.state ?? e.kind),
        ['working', ...Array<string>(12).fill('working'), 'artifact-update', 'completed'],
      );
      const signature = (s: SseConnection) =>
        s.events.slice(1).map((e) => {
          const r = e.json.result;
          return `${e.id}:${r.kind}:${r.status?.state ?? r.artifact?.artifactId}:${r.final ?? ''}`;
        });
      const reference = signature(streams[0] as SseConnection);
      assert.deepEqual(
        reference.map((x) => Number(x.split(':')[0])),
        expected.map((e) => e.seq),
      );
      assert.ok(reference.at(-1)?.endsWith(':completed:true'));
      streams.forEach((s, i) => {
        assert.deepEqual(signature(s), reference, `subscriber ${i} saw a different sequence: ${s.describe()}`);
        assert.equal(s.events[0]?.id, streams[0]?.events[0]?.id, `subscriber ${i}: snapshot id`);
      });
      // For the report: how long attaching and the whole run took with 200 followers.
      ctx.diagnostic(`200 resubscribers (${dialect}): attached in ${attachedMs} ms, all done in ${totalMs} ms`);
    });
  });

  describe(`a graceful close ends open streams (${dialect})`, { timeout: 2 * TEST_TIMEOUT_MS }, () => {
    it('host.close() ends a REST stream and an A2A resubscribe of a waiting task; \
the run is still waiting afterwards', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const t = await startTestHost({ apiKeys: API_KEYS, ...(dialect === 'postgres' ? { pg: true } : {}) });
      let closed = false;
      try {
        const url = await listen(t);
        const runId = await t.createRun('approval', { prompt: 'stay' }, AS_ALICE);
        await t.waitForStatus(runId, ['waiting-approval'], AS_ALICE);
        const rest = await openSse(`${url}/v1/runs/${runId}/events`, { token: ALICE });
        const a2a = await openA2AStream(url, 'tasks/resubscribe', { id: runId }, { token: ALICE });
        await rest.waitFor((e) => e.event === 'interrupt.requested', 'interrupt.requested');
        await a2a.waitForCount(1);
        const snapshot = await t.get(`/v1/runs/${runId}`, AS_ALICE);
        // close() must not hang on the open streams: they are ended by the preClose hook.
        await t.host.app.close();
        const ends = await Promise.all([rest.waitForEnd(10_000), a2a.waitForEnd(10_000)]);
        assert.ok(
          ends.every((e) => e.reason === 'end' || e.reason === 'error'),
          JSON.stringify(ends),
        );
        assert.equal(snapshot.body.status, 'waiting-approval');
        const run = await t.host.store.runs.get(runId);
        assert.equal(run?.status, 'waiting-approval', 'closing streams never touches the run');
      } finally {
        if (!closed) await t.close();
        closed = true;
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The per-connection buffer cap must bound a slow client's backlog, never a fast client's
// single frame or a burst the socket has already taken.

/** A workflow whose artifact is the prompt three times over: events larger than the input. */
function tripleWorkflowDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-streams-wf-'));
  const echo = JSON.parse(readFileSync(join(BUILTIN_DIR, 'echo.json'), 'utf8'));
  echo.id = 'triple';
  echo.name = 'Triple';
  echo.nodes[0].config = { output: { text: '{{ inputs.prompt & inputs.prompt & inputs.prompt }}' } };
  writeFileSync(join(dir, 'triple.json'), JSON.stringify(echo));
  return dir;
}

describe('SSE buffer cap vs. a client that reads at full speed', { timeout: 4 * TEST_TIMEOUT_MS }, () => {
  it('default cap (1 MiB): a run whose artifact event is ~1.5 MiB streams to the end over REST SSE and A2A \
message/stream', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const dir = tripleWorkflowDir();
    const t = await startTestHost({ workflows: [dir] });
    try {
      const url = await listen(t);
      const prompt = 'p'.repeat(500 * 1024);
      const runId = await t.createRun('triple', { prompt });
      await t.waitForStatus(runId, ['completed']);
      const log = await t.events(runId);
      assert.ok(
        log.some((e: Json) => e.type === 'artifact.created' && JSON.stringify(e).length > 1024 * 1024),
        'the artifact event is larger than the cap',
      );
      const rest = await openSse(`${url}/v1/runs/${runId}/events`);
      const end = await rest.waitForEnd();
      assert.equal(end.reason, 'end', `REST stream cut: ${rest.describe()}`);
      assert.deepEqual(
        ids(rest),
        log.map((e: Json) => e.sequence),
      );

      const a2a = await openA2AStream(url, 'message/stream', {
        message: msg([{ kind: 'text', text: prompt }], { skillId: 'triple' }),
      });
      assert.equal((await a2a.waitForEnd()).reason, 'end', `A2A stream cut: ${a2a.describe()}`);
      assert.equal(results(a2a).at(-1)?.status?.state, 'completed');
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // A burst is counted in writableLength while the chunked response keeps the socket corked (until
  // the next tick), and no `drain` comes below the 16 KiB highWaterMark: ready() must not wait
  // stallMs (30 s) for one.
  it('HANDOFF_SSE_MAX_BUFFER=8192 (a valid setting): the REST stream of a finished 87-event run is delivered promptly, \
not stalled and cut', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startTestHost({ env: { HANDOFF_SSE_MAX_BUFFER: '8192' } });
    try {
      const url = await listen(t);
      const runId = await t.createRun('steps', { steps: 20, stepMs: 0 });
      await t.waitForStatus(runId, ['completed']);
      const log = await t.events(runId);
      assert.ok(log.length > 80);
      const rest = await openSse(`${url}/v1/runs/${runId}/events`);
      const end = await rest
        .waitForEnd(10_000)
        .catch((err: Error) => ({ reason: `not within 10 s: ${err.message.slice(0, 200)}` }));
      assert.equal(end.reason, 'end', rest.describe());
      assert.deepEqual(
        ids(rest),
        log.map((e: Json) => e.sequence),
      );
    } finally {
      await t.close();
    }
  });
});
