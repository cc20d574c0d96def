// Hostile request bodies and identifiers, on SQLite and PostgreSQL: JSON
// nested far deeper than HANDOFF_JSON_MAX_DEPTH is a precise refusal naming the limit on both
// surfaces (it overflowed the stack of the envelope check, structuredClone and the hash before);
// U+0000 in an id answers like an unknown id, anywhere else in a request a 400 / -32602 (PostgreSQL
// answered 500 / -32603), and so is one inside a base64 page token or cursor; and every refusal
// writes nothing. Also: an internal failure is logged
// once with the request id on every surface (it was not logged at all on the JSON-RPC path). An
// event cursor past the log's range (2³¹−1) is refused alike on both databases on all seven entry
// points, and 2³¹−1 itself is past the end (PostgreSQL answered 500 / -32603 to both).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pino from 'pino';
import {
  assertRpcError,
  assertSseRpcError,
  dataMessage,
  rpc,
  rpcRaw,
  sendOk,
  skillMessage,
  textMessage,
} from '../support/a2a.js';
import { DIALECTS, footprint, type Json, type Reply, startTestHost, type TestHost } from '../support/host.js';

/** `depth` objects nested in each other around `inner`: {"a":{"a":…inner…}}. */
const nested = (depth: number, inner = '1'): string => `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;
const nestedValue = (depth: number): Json => JSON.parse(nested(depth));

/** A 400 `validation_error` envelope whose message contains `pattern`. */
function assertRefused(res: Reply, status: number, error: string, pattern?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error, error, res.text);
  if (pattern) assert.match(res.body.message, pattern);
}

for (const dialect of DIALECTS) {
  describe(`hostile input (${dialect})`, () => {
    let t: TestHost;
    let waiting: string;
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres' });
      waiting = (await sendOk(t, skillMessage('approval', 'draft'))).id;
    });
    after(async () => {
      await t?.close();
    });

    /** Run `fn` and assert that it wrote nothing. */
    async function writesNothing<T>(fn: () => Promise<T>): Promise<T> {
      const before = await footprint(t);
      const out = await fn();
      assert.deepEqual(await footprint(t), before, 'a refused request wrote something');
      return out;
    }

    describe('JSON nested deeper than HANDOFF_JSON_MAX_DEPTH (64)', () => {
      it('POST /v1/a2a with params nested 8,000 deep (48 KB) → -32602 naming the limit, for any method', async () => {
        for (const method of ['nope', 'message/send', 'tasks/get']) {
          const body = `{"jsonrpc":"2.0","id":1,"method":"${method}","params":${nested(8000)}}`;
          const res = await writesNothing(() => rpcRaw(t, body));
          const err = assertRpcError(res, -32602, 1);
          assert.match(err.message, /^params(\.a)+: JSON nests deeper than 64 levels \(HANDOFF_JSON_MAX_DEPTH\)$/);
        }
      });

      it('a whole body nested that deep (no readable envelope) → -32600 with id null', async () => {
        const res = await rpcRaw(t, `${'['.repeat(8000)}${']'.repeat(8000)}`);
        assert.match(assertRpcError(res, -32600, null).message, /HANDOFF_JSON_MAX_DEPTH/);
      });

      it('message/send with a data part nested 2,000 deep → -32602, nothing started', async () => {
        const msg = dataMessage({ deep: nestedValue(2000) });
        const res = await writesNothing(() => rpc(t, 'message/send', { message: msg }, { id: 'deep' }));
        assert.match(assertRpcError(res, -32602, 'deep').message, /^params\.message\.parts\[0\]\.data\.deep/);
      });

      it('at the limit it is accepted: a data part whose body nests exactly 64 levels starts a task', async () => {
        // request(1) → params(2) → message(3) → parts(4) → part(5) → data(6) → 58 levels more.
        const task = await sendOk(t, dataMessage(nestedValue(59)));
        assert.equal(task.status.state, 'completed');
        const over = await rpc(t, 'message/send', { message: dataMessage(nestedValue(60)) }, { id: 1 });
        assertRpcError(over, -32602, 1);
      });

      it('POST /v1/runs with inputs nested 2,000 deep → 400 naming the limit, nothing created', async () => {
        const res = await writesNothing(() =>
          t.request('POST', '/v1/runs', `{"workflowId":"echo","inputs":${nested(2000)}}`, {
            'content-type': 'application/json',
          }),
        );
        assertRefused(res, 400, 'validation_error', /^body\.inputs(\.a)+: JSON nests deeper than 64 levels/);
      });

      it('an interrupt answer nested 2,000 deep → 400, the gate still waits', async () => {
        const res = await writesNothing(() =>
          t.request('POST', `/v1/runs/${waiting}/interrupts/review`, `{"resumeValue":${nested(2000)}}`, {
            'content-type': 'application/json',
          }),
        );
        assertRefused(res, 400, 'validation_error', /HANDOFF_JSON_MAX_DEPTH/);
        assert.equal((await t.get(`/v1/runs/${waiting}`)).body.status, 'waiting-approval');
      });
    });

    describe('event cursors against the log’s range (sequences are PostgreSQL integers: at most 2³¹−1)', () => {
      const MAX = 2 ** 31 - 1;
      const v1 = { 'a2a-version': '1.0' };
      /** The seven ways to name an event cursor, each on a finished task (a stream then ends by itself). */
      const entryPoints = (taskId: string, after: number) => {
        const cursor = { 'last-event-id': String(after) };
        const jsonRpc = (method: string, params: Json, headers: Record<string, string>) =>
          t.request('POST', '/v1/a2a', { jsonrpc: '2.0', id: 4, method, params }, headers);
        return {
          poll: () => t.get(`/v1/runs/${taskId}/events/poll?lastSequence=${after}&timeout=0`),
          pollSince: () => t.get(`/v1/runs/${taskId}/events/poll?since=${after}&timeout=0`),
          sse: () => t.get(`/v1/runs/${taskId}/events`, cursor),
          resubscribe: () => jsonRpc('tasks/resubscribe', { id: taskId }, cursor),
          resubscribeMetadata: () => jsonRpc('tasks/resubscribe', { id: taskId, metadata: { lastEventId: after } }, {}),
          subscribeV1: () => jsonRpc('SubscribeToTask', { id: taskId }, { ...cursor, ...v1 }),
          subscribeRest: () => t.post(`/v1/a2a/rest/tasks/${taskId}:subscribe`, undefined, { ...cursor, ...v1 }),
        };
      };

      it('past 2³¹−1 → 400 / -32602 on all seven entry points, alike on both databases (PostgreSQL answered 500 / -32603)', async () => {
        const done = (await sendOk(t, skillMessage('echo', 'finished'))).id;
        for (const after of [MAX + 1, 10 ** 14]) {
          const e = entryPoints(done, after);
          assertRefused(await e.poll(), 400, 'validation_error', /lastSequence/);
          assertRefused(await e.pollSince(), 400, 'validation_error', /since/);
          assertRefused(
            await e.sse(),
            400,
            'validation_error',
            /Last-Event-ID must be an integer from -1 to 2147483647/,
          );
          for (const res of [await e.resubscribe(), await e.resubscribeMetadata(), await e.subscribeV1()]) {
            assert.match(assertSseRpcError(res, -32602, 4).message, /Last-Event-ID/);
          }
          // The HTTP+JSON binding refuses a stream before it opens: a google.rpc.Status, no SSE.
          const rest = await e.subscribeRest();
          assert.equal(rest.status, 400, rest.text);
          assert.equal(rest.body.error.status, 'INVALID_ARGUMENT');
          assert.equal(rest.body.error.details[0].reason, 'INVALID_PARAMS');
          assert.match(rest.body.error.message, /Last-Event-ID/);
        }
      });

      it('2³¹−1 itself is past the end: nothing after it, 200 on all seven, alike on both databases', async () => {
        const done = (await sendOk(t, skillMessage('echo', 'finished'))).id;
        const e = entryPoints(done, MAX);
        for (const poll of [await e.poll(), await e.pollSince()]) {
          assert.equal(poll.status, 200, poll.text);
          assert.deepEqual(poll.body.events, []);
          assert.equal(poll.body.lastEventSeq, MAX);
        }
        for (const stream of [
          await e.sse(),
          await e.resubscribe(),
          await e.resubscribeMetadata(),
          await e.subscribeV1(),
          await e.subscribeRest(),
        ]) {
          assert.equal(stream.status, 200, stream.text);
          assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
          assert.doesNotMatch(stream.text, /event: error|"error"/, stream.text);
        }
      });
    });

    describe('U+0000 in identifiers and stored text', () => {
      it('a NUL run, task or delivery id in a path → 404 like an unknown id (was 500 on PostgreSQL)', async () => {
        const cases: Array<[string, string]> = [
          ['GET', '/v1/runs/%00'],
          ['GET', '/v1/runs/run_%00x'],
          ['GET', '/v1/runs/%00/events/poll?timeout=0'],
          ['GET', '/v1/runs/%00/events'],
          ['POST', '/v1/runs/%00/cancel'],
          ['POST', `/v1/runs/${waiting}/interrupts/%00`],
          ['POST', `/v1/runs/${waiting}/approvals/re%00view`],
          ['GET', '/v1/a2a/tasks/%00'],
          ['POST', '/v1/a2a/deliveries/%00/retry'],
        ];
        for (const [method, url] of cases) {
          const res = await writesNothing(() =>
            t.request(method, url, method === 'POST' ? { resumeValue: { action: 'accept' } } : undefined),
          );
          assertRefused(res, 404, 'not_found');
          assert.match(res.body.message, /not found/, url);
        }
        assert.equal((await t.get(`/v1/runs/${waiting}`)).body.status, 'waiting-approval');
      });

      it('a NUL in a query value → 400 naming the parameter', async () => {
        for (const url of [
          '/v1/a2a/tasks?contextId=%00',
          '/v1/a2a/deliveries?taskId=a%00',
          '/v1/a2a/tasks?cursor=%00',
        ]) {
          assertRefused(await t.get(url), 400, 'validation_error', /U\+0000/);
        }
      });

      it('a NUL inside a base64 page token or cursor → 400 / -32602 on every list (was 500 on PostgreSQL)', async () => {
        const token = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');
        const at = '2030-01-01T00:00:00.000Z';
        const forged = [
          token([at, 'run_\u0000x']),
          token([`${at}\u0000`, 'run_x']),
          token(['\u0000', 'run_x']),
          // Not a NUL, but not what a token holds either: refused alike on both databases.
          token(['not a time', 'run_x']),
        ];
        const v1 = { 'a2a-version': '1.0' };
        for (const c of forged) {
          assertRefused(await t.get(`/v1/runs?cursor=${c}`), 400, 'validation_error', /cursor/);
          assertRefused(await t.get(`/v1/a2a/tasks?cursor=${c}`), 400, 'validation_error', /cursor/);
          const rest = await t.get(`/v1/a2a/rest/tasks?pageToken=${c}`, v1);
          assert.equal(rest.status, 400, rest.text);
          assert.equal(rest.body.error.details[0].reason, 'INVALID_PARAMS');
          const listed = await t.request(
            'POST',
            '/v1/a2a',
            { jsonrpc: '2.0', id: 9, method: 'ListTasks', params: { pageToken: c } },
            v1,
          );
          assert.match(assertRpcError(listed, -32602, 9).message, /pageToken/);
        }
        const pushList = await t.request(
          'POST',
          '/v1/a2a',
          {
            jsonrpc: '2.0',
            id: 9,
            method: 'ListTaskPushNotificationConfigs',
            params: { taskId: waiting, pageToken: token(['c\u0000']) },
          },
          v1,
        );
        assert.match(assertRpcError(pushList, -32602, 9).message, /pageToken/);
      });

      it('a NUL task id in JSON-RPC → -32001 exactly like an unknown task (was -32603 on PostgreSQL)', async () => {
        const calls: Array<[string, Json]> = [
          ['tasks/get', { id: '\u0000' }],
          ['tasks/cancel', { id: 'run_\u0000' }],
          ['tasks/resubscribe', { id: '\u0000' }],
          ['tasks/pushNotificationConfig/list', { id: '\u0000' }],
          [
            'tasks/pushNotificationConfig/set',
            { taskId: '\u0000', pushNotificationConfig: { url: 'https://a.example' } },
          ],
          ['message/send', { message: textMessage('x', { taskId: '\u0000' }) }],
          ['message/stream', { message: textMessage('x', { taskId: '\u0000' }) }],
        ];
        for (const [method, params] of calls) {
          const res = await writesNothing(() => rpc(t, method, params, { id: 7 }));
          const streaming = method === 'tasks/resubscribe' || method === 'message/stream';
          const err = (streaming ? assertSseRpcError : assertRpcError)(res, -32001, 7);
          const unknown = assertRpcError(await rpc(t, 'tasks/get', { id: 'run_unknown' }, { id: 7 }), -32001, 7);
          assert.equal(err.message.replace(/: .*/s, ''), unknown.message.replace(/: .*/s, ''), method);
        }
      });

      it('a NUL anywhere else in JSON-RPC params (messageId, contextId, config ids, text) → -32602 naming the field', async () => {
        const calls: Array<[string, Json, RegExp]> = [
          ['message/send', { message: textMessage('x', { messageId: 'm\u0000' }) }, /params\.message\.messageId/],
          ['message/send', { message: textMessage('x', { contextId: '\u0000' }) }, /params\.message\.contextId/],
          ['message/send', { message: textMessage('a\u0000b') }, /params\.message\.parts\[0\]\.text/],
          ['message/send', { message: dataMessage({ 'k\u0000': 1 }) }, /params\.message\.parts\[0\]\.data/],
          [
            'tasks/pushNotificationConfig/set',
            { taskId: waiting, pushNotificationConfig: { id: '\u0000', url: 'https://a.example' } },
            /params\.pushNotificationConfig\.id/,
          ],
          [
            'tasks/pushNotificationConfig/get',
            { id: waiting, pushNotificationConfigId: '\u0000' },
            /params\.pushNotificationConfigId/,
          ],
          [
            'tasks/pushNotificationConfig/delete',
            { id: waiting, pushNotificationConfigId: 'x\u0000' },
            /params\.pushNotificationConfigId/,
          ],
        ];
        for (const [method, params, field] of calls) {
          const res = await writesNothing(() => rpc(t, method, params, { id: 'n' }));
          const err = assertRpcError(res, -32602, 'n');
          assert.match(err.message, field);
          assert.match(err.message, /U\+0000/);
        }
      });

      it('a NUL in a REST body (workflowId, tags, metadata, inputs, answers) → 400 naming the field', async () => {
        const bodies: Array<[string, Json, RegExp]> = [
          ['/v1/runs', { workflowId: 'echo\u0000' }, /body\.workflowId/],
          ['/v1/runs', { workflowId: 'echo', tags: ['a\u0000'] }, /body\.tags\[0\]/],
          ['/v1/runs', { workflowId: 'echo', metadata: { note: '\u0000' } }, /body\.metadata\.note/],
          ['/v1/runs', { workflowId: 'echo', inputs: { prompt: 'x\u0000y' } }, /body\.inputs\.prompt/],
          [`/v1/runs/${waiting}/cancel`, { reason: '\u0000' }, /body\.reason/],
          [
            `/v1/runs/${waiting}/interrupts/review`,
            { resumeValue: { action: 'accept', feedback: '\u0000' } },
            /feedback/,
          ],
        ];
        for (const [url, body, field] of bodies) {
          const res = await writesNothing(() => t.post(url, body));
          assertRefused(res, 400, 'validation_error', field);
        }
        assert.equal((await t.get(`/v1/runs/${waiting}`)).body.status, 'waiting-approval');
      });
    });
  });

  describe(`internal failures are logged with the request id on every surface (${dialect})`, () => {
    let t: TestHost;
    const lines: Json[] = [];
    before(async () => {
      const sink = new Writable({
        write(chunk, _enc, done) {
          for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
          done();
        },
      });
      t = await startTestHost({ pg: dialect === 'postgres', logger: pino({ level: 'error' }, sink) });
      // The task table goes missing: every read of a task now fails inside the store.
      await sql`alter table a2a_tasks rename to a2a_tasks_gone`.execute(t.host.store.db);
    });
    after(async () => {
      await t?.close();
    });

    /** The error lines logged since `from`, each with a request id. */
    const failures = (from: number) => lines.slice(from).filter((l) => l.level === 50 && l.msg === 'request failed');

    for (const [surface, call] of [
      ['JSON-RPC tasks/get', (h: TestHost) => rpc(h, 'tasks/get', { id: 'run_x' }, { id: 3 })],
      ['JSON-RPC tasks/resubscribe', (h: TestHost) => rpc(h, 'tasks/resubscribe', { id: 'run_x' }, { id: 3 })],
    ] as const) {
      it(`${surface}: -32603 with a generic message, logged once with reqId and the error`, async () => {
        const from = lines.length;
        const res = await call(t);
        const err = (surface.endsWith('resubscribe') ? assertSseRpcError : assertRpcError)(res, -32603, 3);
        assert.equal(err.message, 'Internal error');
        const logged = failures(from);
        assert.equal(logged.length, 1, JSON.stringify(lines.slice(from)));
        assert.match(String(logged[0].reqId), /\S/);
        assert.match(JSON.stringify(logged[0].err), /a2a_tasks/);
      });
    }

    it('REST GET /v1/a2a/tasks/{id}: 500 internal_error, logged once with reqId', async () => {
      const from = lines.length;
      const res = await t.get('/v1/a2a/tasks/run_x');
      assertRefused(res, 500, 'internal_error');
      assert.equal(failures(from).length, 1);
      assert.match(String(failures(from)[0].reqId), /\S/);
    });
  });
}
