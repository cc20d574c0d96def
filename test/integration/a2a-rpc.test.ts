// The A2A v0.3 JSON-RPC endpoint (POST /v1/a2a) through Fastify inject: the envelope and every
// error code the host answers (docs/protocol/a2a.md#v03-transport, #v03-errors), message/send of the
// echo skill (blocking, non-blocking, historyLength), idempotent sends, tenancy, and the trust
// marking of runs started over A2A (docs/protocol/openwop.md#start-by-message, #trust-boundary). Every error path is checked to
// have written nothing. Runs on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set.
//
// Sibling files: a2a-rpc-hitl (approval / clarification over A2A), a2a-rpc-card (auth, card,
// discovery), a2a-rpc-state (the persisted A2ATaskState, the RFC 0100 seams).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  type A2AClient,
  artifactData,
  assertRpcError,
  assertSseRpcError,
  assertRpcResult,
  dataMessage,
  message,
  rpcRaw,
  skillMessage,
  textMessage,
  textPart,
  KEY_ALICE,
  startA2ATeam,
  getRecord,
  assertSchema,
  validateTaskState,
} from '../support/a2a.js';
import { DIALECTS, type Json, type TestHost, bearer, waitForEvent } from '../support/host.js';

const SKILLS = ['approval', 'clarify', 'delegate', 'echo', 'fail', 'launch-note', 'steps', 'survey', 'survey-ask'];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A well-formed message/send body whose message is `msg` (for raw envelope tests). */
const sendBody = (id: unknown, msg: Json, extra: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'message/send',
  params: { message: msg, ...extra },
});

for (const dialect of DIALECTS) {
  describe(`A2A JSON-RPC endpoint (${dialect})`, () => {
    let t: TestHost;
    let alice: A2AClient;
    let bob: A2AClient;
    let eve: A2AClient;

    before(async () => {
      ({ t, alice, bob, eve } = await startA2ATeam(dialect));
    });
    after(async () => {
      await t?.close();
    });

    const countRuns = () => t.host.store.runs.count();

    /** Run `fn` and assert that no run was created meanwhile. */
    async function noNewRuns<T>(fn: () => Promise<T>): Promise<T> {
      const before = await countRuns();
      const out = await fn();
      assert.equal(await countRuns(), before, 'an error path created a run');
      return out;
    }

    /** Run `fn` and assert that no run was created and `taskId`'s log and snapshot did not move. */
    async function untouched<T>(taskId: string, fn: () => Promise<T>): Promise<T> {
      const snap = await alice.run(taskId);
      const events = (await t.events(taskId, alice.headers)).length;
      const out = await noNewRuns(fn);
      const now = await alice.run(taskId);
      assert.equal(now.status, snap.status);
      assert.equal(now.updatedAt, snap.updatedAt, 'the run was written');
      assert.equal((await t.events(taskId, alice.headers)).length, events, 'events were appended');
      return out;
    }

    /** A completed echo task of alice's. */
    async function echoTask(text = 'hi'): Promise<Json> {
      const task = await alice.sendOk(textMessage(text));
      assert.equal(task.status.state, 'completed');
      return task;
    }

    /** A steps task of alice's that sleeps for an hour in `running` (A2A `working`), lease released. */
    async function sleepingTask(): Promise<Json> {
      const task = await alice.sendOk(
        dataMessage({ steps: 1, stepMs: 3_600_000 }, { metadata: { skillId: 'steps' } }),
        {
          configuration: { blocking: false },
        },
      );
      // Settled once the step node's timer is committed (its node.started carries wakeAt).
      await waitForEvent(t.app, task.id, (e) => e.type === 'node.started' && e.nodeId === 'step', alice.headers);
      return task;
    }

    // ------------------------------------------------------------ envelope

    describe('envelope errors (HTTP 200, JSON-RPC error, id echoed when readable)', () => {
      it('-32700: unparsable JSON answers with id null', async () => {
        for (const body of ['{"jsonrpc":"2.0","id":1,"method":', '{bad json}', '', 'nul']) {
          const res = await noNewRuns(() => rpcRaw(t, body, alice.headers));
          assertRpcError(res, -32700, null);
        }
      });

      it('-32700 also for malformed JSON sent as application/json; charset=utf-8', async () => {
        const res = await noNewRuns(() =>
          rpcRaw(t, '{"jsonrpc":', { ...alice.headers, 'content-type': 'application/json; charset=utf-8' }),
        );
        assertRpcError(res, -32700, null);
      });

      it('-32600: jsonrpc other than "2.0" (id echoed)', async () => {
        for (const jsonrpc of ['1.0', 'aaa', 2, null]) {
          const res = await noNewRuns(() =>
            rpcRaw(t, { jsonrpc, id: 'v1', method: 'tasks/get', params: { id: 'x' } }, alice.headers),
          );
          assertRpcError(res, -32600, 'v1');
        }
        const missing = await rpcRaw(t, { id: 11, method: 'tasks/get', params: { id: 'x' } }, alice.headers);
        assertRpcError(missing, -32600, 11);
      });

      it('-32600: a message/send with jsonrpc "1.0" starts nothing', async () => {
        const res = await noNewRuns(() =>
          rpcRaw(t, { ...sendBody('m1', textMessage('x')), jsonrpc: '1.0' }, alice.headers),
        );
        assertRpcError(res, -32600, 'm1');
      });

      it('-32600: missing, empty or non-string method (id echoed)', async () => {
        assertRpcError(
          await noNewRuns(() => rpcRaw(t, { jsonrpc: '2.0', id: 2, params: {} }, alice.headers)),
          -32600,
          2,
        );
        assertRpcError(
          await noNewRuns(() => rpcRaw(t, { jsonrpc: '2.0', id: 3, method: '' }, alice.headers)),
          -32600,
          3,
        );
        assertRpcError(
          await noNewRuns(() => rpcRaw(t, { jsonrpc: '2.0', id: 4, method: 42 }, alice.headers)),
          -32600,
          4,
        );
      });

      it('-32600: an id of the wrong type (object, array, fraction, boolean) answers with id null', async () => {
        for (const id of [{ bad: 'type' }, [1], 1.5, true]) {
          const res = await noNewRuns(() => rpcRaw(t, sendBody(id, textMessage('x')), alice.headers));
          assertRpcError(res, -32600, null);
        }
      });

      it('-32600: a batch array is refused as one error object, and none of its calls runs', async () => {
        const batch = [sendBody('b1', textMessage('one')), sendBody('b2', textMessage('two'))];
        const res = await noNewRuns(() => rpcRaw(t, batch, alice.headers));
        assert.ok(!Array.isArray(res.body), 'a batch must not be answered with an array');
        assertRpcError(res, -32600, null);
        assertRpcError(await rpcRaw(t, [], alice.headers), -32600, null);
      });

      it('-32600: a body that is not an object', async () => {
        for (const body of ['"hello"', '42', 'null', 'true']) {
          assertRpcError(await noNewRuns(() => rpcRaw(t, body, alice.headers)), -32600, null);
        }
      });

      it('-32601: unknown methods, including tasks/list (not a v0.3 JSON-RPC method)', async () => {
        for (const method of ['foo/bar', 'tasks/list', 'message/sendd', 'Message/Send', 'sendMessage']) {
          const res = await noNewRuns(() => alice.rpc(method, { message: textMessage('x') }, 5));
          const err = assertRpcError(res, -32601, 5);
          assert.match(err.message, /not found/i);
        }
        // A 1.0 method without A2A-Version asks for 0.3 (absent means 0.3): -32009 naming the header.
        const res = await noNewRuns(() => alice.rpc('SendMessage', { message: textMessage('x') }, 5));
        assert.match(assertRpcError(res, -32009, 5).message, /A2A-Version: 1\.0/);
      });

      it('reused request ids are answered normally (id echoed each time)', async () => {
        const task = await echoTask();
        for (let i = 0; i < 2; i++) {
          const res = await alice.rpc('tasks/get', { id: task.id }, 'same-id');
          assert.equal(assertRpcResult(res, 'same-id').id, task.id);
        }
        const zero = await alice.rpc('tasks/get', { id: task.id }, 0);
        assert.equal(assertRpcResult(zero, 0).id, task.id);
      });
    });

    // ------------------------------------------------------------ -32602

    describe('-32602 invalid params', () => {
      const base = () => textMessage('x');
      const without = (key: string) => {
        const m = base();
        delete m[key];
        return m;
      };

      it('message without messageId, role or parts, or with empty parts, writes nothing', async () => {
        const cases: Array<[string, Json]> = [
          ['messageId', without('messageId')],
          ['role', without('role')],
          ['parts', without('parts')],
          ['parts', { ...base(), parts: [] }],
          ['messageId', { ...base(), messageId: '' }],
          ['role', { ...base(), role: 'system' }],
          ['kind', { ...base(), kind: 'task' }],
          ['parts[0]', { ...base(), parts: [{ kind: 'text' }] }],
          ['parts[0]', { ...base(), parts: [{ kind: 'data', data: 'not an object' }] }],
          ['parts[0]', { ...base(), parts: [{ kind: 'image', url: 'x' }] }],
        ];
        for (const [field, msg] of cases) {
          const res = await noNewRuns(() => alice.rpc('message/send', { message: msg }, `p-${field}`));
          const err = assertRpcError(res, -32602, `p-${field}`);
          assert.match(err.message, new RegExp(field.replace(/[[\]]/g, '\\$&')), `${field}: ${err.message}`);
        }
      });

      it('TCK: {"message":{"kind":"message"}} and missing params', async () => {
        assertRpcError(
          await noNewRuns(() => alice.rpc('message/send', { message: { kind: 'message' } }, 't1')),
          -32602,
          't1',
        );
        assertRpcError(await noNewRuns(() => alice.rpc('message/send', undefined, 't2')), -32602, 't2');
        assertRpcError(await noNewRuns(() => alice.rpc('message/send', {}, 't3')), -32602, 't3');
        assertRpcError(await noNewRuns(() => alice.rpc('tasks/get', {}, 't4')), -32602, 't4');
      });

      it('params that are not an object (array, string)', async () => {
        assertRpcError(await noNewRuns(() => alice.rpc('message/send', [textMessage('x')], 'a')), -32602, 'a');
        assertRpcError(await noNewRuns(() => alice.rpc('tasks/get', 'run_x', 'b')), -32602, 'b');
      });

      it('TCK: an empty-string key anywhere in params', async () => {
        const res1 = await noNewRuns(() => alice.rpc('message/send', { message: textMessage('x'), '': 1 }, 'e1'));
        assertRpcError(res1, -32602, 'e1');
        const res2 = await noNewRuns(() =>
          alice.rpc(
            'message/send',
            { message: { ...textMessage('x'), metadata: { skillId: 'echo', nested: { '': 'v' } } } },
            'e2',
          ),
        );
        assertRpcError(res2, -32602, 'e2');
        const res3 = await noNewRuns(() =>
          alice.rpc('message/send', { message: message([{ kind: 'data', data: { '': 1 } }]) }, 'e3'),
        );
        assertRpcError(res3, -32602, 'e3');
      });

      it('historyLength -1 (tasks/get and message/send configuration) and a fractional one', async () => {
        const task = await echoTask();
        assertRpcError(await alice.rpc('tasks/get', { id: task.id, historyLength: -1 }, 'h1'), -32602, 'h1');
        assertRpcError(await alice.rpc('tasks/get', { id: task.id, historyLength: 1.5 }, 'h2'), -32602, 'h2');
        const res = await noNewRuns(() => alice.send(textMessage('x'), { configuration: { historyLength: -1 } }));
        assertRpcError(res, -32602, res.body.id);
      });

      it('configuration fields of the wrong type', async () => {
        const res = await noNewRuns(() => alice.send(textMessage('x'), { configuration: { blocking: 'yes' } }));
        assertRpcError(res, -32602, res.body.id);
      });

      it('unknown skill: the message and data list the available skills', async () => {
        for (const where of ['message', 'params'] as const) {
          const msg = where === 'message' ? skillMessage('no-such-skill', 'x') : textMessage('x');
          const res = await noNewRuns(() =>
            alice.send(msg, where === 'params' ? { metadata: { skillId: 'no-such-skill' } } : {}),
          );
          const err = assertRpcError(res, -32602, res.body.id);
          assert.match(err.message, /no-such-skill/);
          for (const s of SKILLS) assert.ok(err.message.includes(s), `'${s}' missing from: ${err.message}`);
          assert.deepEqual([...err.data.skills].sort(), SKILLS);
        }
      });

      it('bad inputs for the steps skill ({steps: "x"}, a negative stepMs)', async () => {
        for (const data of [{ steps: 'x' }, { steps: 1, stepMs: -5 }, { steps: 100_000 }]) {
          const res = await noNewRuns(() => alice.send(dataMessage(data, { metadata: { skillId: 'steps' } })));
          const err = assertRpcError(res, -32602, res.body.id);
          assert.match(err.message, /steps|stepMs/, err.message);
        }
      });
    });

    // ------------------------------------------------------------ A2A codes

    describe('A2A error codes', () => {
      it('-32001: tasks/get, tasks/cancel and message/send with an unknown task id', async () => {
        const unknown = `run_${randomUUID()}`;
        assertRpcError(await noNewRuns(() => alice.rpc('tasks/get', { id: unknown }, 'g')), -32001, 'g');
        assertRpcError(await noNewRuns(() => alice.rpc('tasks/cancel', { id: unknown }, 'c')), -32001, 'c');
        const res = await noNewRuns(() => alice.send(dataMessage({ action: 'accept' }, { taskId: unknown })));
        assertRpcError(res, -32001, res.body.id);
      });

      it("-32001: another tenant's task reads exactly like an unknown one, and is left alone", async () => {
        const task = await alice.sendOk(skillMessage('approval', 'secret draft'));
        assert.equal(task.status.state, 'input-required');
        const unknown = `run_${randomUUID()}`;
        const same = (a: string, b: string) =>
          assert.equal(a.replaceAll(task.id, '<ID>'), b.replaceAll(unknown, '<ID>'));

        await untouched(task.id, async () => {
          for (const method of ['tasks/get', 'tasks/cancel'] as const) {
            const foreign = await eve.rpc(method, { id: task.id }, 9);
            const missing = await eve.rpc(method, { id: unknown }, 9);
            assertRpcError(foreign, -32001, 9);
            assertRpcError(missing, -32001, 9);
            same(foreign.text, missing.text);
            assert.ok(!foreign.text.includes('secret'), foreign.text);
          }
          const msg = (taskId: string) => dataMessage({ action: 'accept' }, { taskId, messageId: 'm-foreign' });
          const foreign = await eve.rpc('message/send', { message: msg(task.id) }, 9);
          const missing = await eve.rpc('message/send', { message: msg(unknown) }, 9);
          assertRpcError(foreign, -32001, 9);
          same(foreign.text, missing.text);
        });
        // alice still sees her task waiting.
        assert.equal((await alice.getTask(task.id)).status.state, 'input-required');
        assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      });

      it('-32002: tasks/cancel on a completed task', async () => {
        const task = await echoTask();
        await untouched(task.id, async () => {
          const err = assertRpcError(await alice.rpc('tasks/cancel', { id: task.id }, 'c2'), -32002, 'c2');
          assert.ok(err.message.includes(task.id), err.message);
        });
        assert.equal((await alice.getTask(task.id)).status.state, 'completed');
      });

      it('push configs: -32602 from the guard before any lookup, -32001 for unknown/foreign tasks, \
nothing written', async () => {
        const task = await echoTask();
        const refused = [
          ['https://10.0.0.5/push', 'address'],
          ['http://push.example.com/push', 'scheme'],
        ] as const;
        await untouched(task.id, async () => {
          for (const [url, arm] of refused) {
            const err = assertRpcError(
              await alice.rpc(
                'tasks/pushNotificationConfig/set',
                { taskId: 'run_nope', pushNotificationConfig: { url } },
                'p',
              ),
              -32602,
              'p',
            );
            assert.equal((err.data as Json).arm, arm, url);
          }
        });
        assert.deepEqual(assertRpcResult(await alice.rpc('tasks/pushNotificationConfig/list', { id: task.id })), []);
        const ok = { url: 'https://caller.example.com/push' };
        assertRpcError(
          await alice.rpc('tasks/pushNotificationConfig/set', { taskId: 'run_nope', pushNotificationConfig: ok }, 'u'),
          -32001,
          'u',
        );
        assertRpcError(
          await eve.rpc('tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: ok }, 'e'),
          -32001,
          'e',
        );
        assertRpcError(await alice.rpc('tasks/pushNotificationConfig/get', { id: task.id }, 'g'), -32001, 'g');
      });

      it('push configs: set/get/list/delete; the id defaults to the task id; \
no token or credentials are echoed', async () => {
        const task = await echoTask();
        const set = assertRpcResult(
          await alice.rpc('tasks/pushNotificationConfig/set', {
            taskId: task.id,
            pushNotificationConfig: {
              url: 'https://caller.example.com/push',
              token: 'secret-token',
              authentication: { schemes: ['Bearer'], credentials: 'cred' },
            },
          }),
        );
        assert.deepEqual(set, {
          taskId: task.id,
          pushNotificationConfig: {
            id: task.id,
            url: 'https://caller.example.com/push',
            authentication: { schemes: ['Bearer'] },
          },
        });
        assertRpcResult(
          await alice.rpc('tasks/pushNotificationConfig/set', {
            taskId: task.id,
            pushNotificationConfig: { id: 'second', url: 'https://other.example.com/hook' },
          }),
        );
        const got = assertRpcResult(
          await alice.rpc('tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: null }),
        );
        assert.equal((got.pushNotificationConfig as Json).id, task.id);
        const list = assertRpcResult(await alice.rpc('tasks/pushNotificationConfig/list', { id: task.id })) as Json[];
        assert.deepEqual(list.map((c) => (c.pushNotificationConfig as Json).id).sort(), [task.id, 'second'].sort());
        assert.ok(!JSON.stringify(list).includes('secret-token') && !JSON.stringify(list).includes('cred"'));
        assert.equal(
          assertRpcResult(
            await alice.rpc('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'second' }),
          ),
          null,
        );
        assert.equal(
          assertRpcResult(
            await alice.rpc('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'second' }),
          ),
          null,
        );
        assertRpcError(
          await alice.rpc('tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'second' }, 'x'),
          -32001,
          'x',
        );
        const record = await getRecord(t, task.id, bearer(KEY_ALICE));
        assertSchema(validateTaskState, record, 'record with pushConfig');
        assert.equal((record.pushConfig as Json).url, 'https://caller.example.com/push');
        assert.ok(String((record.pushConfig as Json).tokenFingerprint).length <= 32);
        assert.ok(!JSON.stringify(record).includes('secret-token'));
      });

      it('push configs: an inline config on message/send is refused by the guard before any run starts', async () => {
        const res = await noNewRuns(() =>
          alice.send(textMessage('x'), {
            configuration: { pushNotificationConfig: { url: 'https://127.0.0.1/push' } },
          }),
        );
        assertRpcError(res, -32602, res.body.id);
      });

      it('streams: errors before the first event are the one SSE error event (-32001, \
-32602) and start nothing', async () => {
        const unknown = await alice.rpc('tasks/resubscribe', { id: 'run_nope' }, 's2');
        assertSseRpcError(unknown, -32001, 's2');
        const bad = await noNewRuns(() =>
          alice.rpc('message/stream', { message: { kind: 'message', role: 'user', parts: [] } }, 's1'),
        );
        assertSseRpcError(bad, -32602, 's1');
        const task = await echoTask();
        const cursor = await alice.rpc('tasks/resubscribe', { id: task.id, metadata: { lastEventId: 'abc' } }, 's3');
        assertSseRpcError(cursor, -32602, 's3');
      });

      it('-32004: a message into a terminal task', async () => {
        const done = await echoTask();
        const res = await untouched(done.id, () =>
          alice.send(textMessage('more', { taskId: done.id, contextId: done.contextId })),
        );
        assertRpcError(res, -32004, res.body.id);
        const failed = await alice.sendOk(skillMessage('fail', 'x'));
        assert.equal(failed.status.state, 'failed');
        const res2 = await untouched(failed.id, () =>
          alice.send(dataMessage({ action: 'accept' }, { taskId: failed.id })),
        );
        assertRpcError(res2, -32004, res2.body.id);
      });

      it('-32004: a message into a task that is not waiting for input', async () => {
        const task = await sleepingTask();
        const res = await untouched(task.id, () => alice.send(textMessage('hello?', { taskId: task.id })));
        assertRpcError(res, -32004, res.body.id);
        const canceled = assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
        assert.equal(canceled.status.state, 'canceled');
        const res2 = await untouched(task.id, () => alice.send(textMessage('hello?', { taskId: task.id })));
        assertRpcError(res2, -32004, res2.body.id);
      });

      it('-32007: agent/getAuthenticatedExtendedCard', async () => {
        assertRpcError(
          await noNewRuns(() => alice.rpc('agent/getAuthenticatedExtendedCard', undefined, 'x1')),
          -32007,
          'x1',
        );
        assertRpcError(await noNewRuns(() => alice.rpc('agent/getAuthenticatedExtendedCard', {}, 'x2')), -32007, 'x2');
      });
    });

    // ------------------------------------------------------------ message/send

    describe('message/send: the echo skill', () => {
      it('blocking (default) → a completed Task with artifact, history and openwop metadata', async () => {
        const msg = textMessage('hello, world');
        const task = await alice.sendOk(msg);
        assert.equal(task.kind, 'task');
        assert.match(task.id, /^run_/);
        assert.equal(typeof task.contextId, 'string');
        assert.ok(task.contextId.length > 0);
        assert.equal(task.status.state, 'completed');
        assert.match(task.status.timestamp, ISO);
        assert.equal(task.status.message, undefined);
        assert.equal(task.artifacts.length, 1);
        assert.deepEqual(artifactData(task), { echo: 'hello, world' });
        assert.equal(task.artifacts[0].artifactId, 'echo');
        assert.ok(Array.isArray(task.history));
        const mine = task.history.find((m: Json) => m.messageId === msg.messageId);
        assert.ok(mine, `history lacks the user message: ${JSON.stringify(task.history)}`);
        assert.equal(mine.kind, 'message');
        assert.equal(mine.role, 'user');
        assert.deepEqual(mine.parts, msg.parts);
        assert.deepEqual(task.metadata.openwop, { runId: task.id, workflowId: 'echo', runStatus: 'completed' });
        // tasks/get says the same.
        assert.deepEqual(await alice.getTask(task.id), task);
      });

      it('the Task a blocking send answers with is exactly what tasks/get then reads (completed, failed, own context, \
historyLength)', async () => {
        const cases: Array<[Json, number | undefined]> = [
          [textMessage('same'), undefined],
          [{ ...textMessage('mine'), contextId: 'ctx-of-the-caller' }, 0],
          [dataMessage({ reason: 'on purpose' }, { metadata: { skillId: 'fail' } }), 1],
        ];
        for (const [msg, historyLength] of cases) {
          const sent = await alice.sendOk(msg, historyLength === undefined ? {} : { configuration: { historyLength } });
          assert.ok(['completed', 'failed'].includes(sent.status.state), JSON.stringify(sent.status));
          assert.deepEqual(
            await alice.getTask(sent.id, historyLength),
            sent,
            `tasks/get differs from the send answer for ${JSON.stringify(msg.parts)}`,
          );
          const record = await alice.record(sent.id);
          assert.equal(record.contextId, sent.contextId, 'the stored record keeps the context the answer named');
        }
      });

      it('the echo is the default skill; skillId may also come from params.metadata', async () => {
        const viaParams = await alice.sendOk(textMessage('p'), { metadata: { skillId: 'echo' } });
        assert.deepEqual(artifactData(viaParams), { echo: 'p' });
        const failed = await alice.sendOk(textMessage('q'), { metadata: { skillId: 'fail' } });
        assert.equal(failed.status.state, 'failed');
        assert.equal((await alice.run(failed.id)).workflowId, 'fail');
      });

      it('several text parts are joined into the prompt; a data part overrides it', async () => {
        const joined = await alice.sendOk(message([textPart('a'), textPart('b')]));
        assert.deepEqual(artifactData(joined), { echo: 'a\nb' });
        const data = await alice.sendOk(message([textPart('a'), { kind: 'data', data: { prompt: 'from data' } }]));
        assert.deepEqual(artifactData(data), { echo: 'from data' });
      });

      it('a caller contextId is kept; without one the host generates a distinct one', async () => {
        const ctx = `ctx-${randomUUID()}`;
        const a = await alice.sendOk(textMessage('1', { contextId: ctx }));
        const b = await alice.sendOk(textMessage('2', { contextId: ctx }));
        assert.equal(a.contextId, ctx);
        assert.equal(b.contextId, ctx);
        assert.notEqual(a.id, b.id);
        const c = await alice.sendOk(textMessage('3'));
        const d = await alice.sendOk(textMessage('4'));
        assert.notEqual(c.contextId, d.contextId);
        assert.equal((await alice.getTask(c.id)).contextId, c.contextId);
      });

      it('blocking:false returns at once; tasks/get later shows completed', async () => {
        const task = await alice.sendOk(textMessage('later'), { configuration: { blocking: false } });
        assert.ok(['submitted', 'working', 'completed'].includes(task.status.state), task.status.state);
        await t.waitForStatus(task.id, ['completed'], alice.headers);
        const got = await alice.getTask(task.id);
        assert.equal(got.status.state, 'completed');
        assert.deepEqual(artifactData(got), { echo: 'later' });
      });

      it('blocking:false on a long run returns a non-terminal state without waiting', async () => {
        const task = await alice.sendOk(
          dataMessage({ steps: 1, stepMs: 3_600_000 }, { metadata: { skillId: 'steps' } }),
          {
            configuration: { blocking: false },
          },
        );
        assert.ok(['submitted', 'working'].includes(task.status.state), task.status.state);
        assert.equal(task.artifacts, undefined);
        assert.equal(assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id })).status.state, 'canceled');
      });

      it('historyLength: 0 omits history, 1 keeps the last message, absent keeps all', async () => {
        const msg = textMessage('h');
        const none = await alice.sendOk(msg, { configuration: { historyLength: 0 } });
        assert.equal(none.status.state, 'completed');
        assert.ok(!('history' in none), JSON.stringify(none));
        const all = await alice.getTask(none.id);
        assert.equal(all.history.length, 1);
        assert.ok(!('history' in (await alice.getTask(none.id, 0))));
        const one = await alice.getTask(none.id, 1);
        assert.deepEqual(
          one.history.map((m: Json) => m.messageId),
          [msg.messageId],
        );
        const many = await alice.getTask(none.id, 50);
        assert.deepEqual(many.history, all.history);
      });
    });

    // ------------------------------------------------------------ idempotency

    describe('idempotent message/send (principal, messageId)', () => {
      it('the same messageId twice → the same task, one run', async () => {
        const msg = textMessage('once');
        const before = await countRuns();
        const a = await alice.sendOk(msg);
        const b = await alice.sendOk(msg);
        assert.equal(b.id, a.id);
        assert.equal(b.contextId, a.contextId);
        assert.equal(b.status.state, 'completed');
        assert.equal(await countRuns(), before + 1);
        // The replay does not add the message to the history again.
        assert.equal(b.history.length, 1);
      });

      it('a replay with different content still answers with the first task', async () => {
        const id = `msg-${randomUUID()}`;
        const a = await alice.sendOk(textMessage('first', { messageId: id }));
        const b = await alice.sendOk(skillMessage('fail', 'second', { messageId: id }));
        assert.equal(b.id, a.id);
        assert.deepEqual(artifactData(b), { echo: 'first' });
      });

      it('5 parallel sends of one messageId → one task, one run', async () => {
        const msg = textMessage('parallel');
        const before = await countRuns();
        const results = await Promise.all(Array.from({ length: 5 }, () => alice.send(msg)));
        const ids = results.map((r) => assertRpcResult(r).id as string);
        assert.equal(new Set(ids).size, 1, `ids: ${ids.join(', ')}`);
        assert.equal(await countRuns(), before + 1);
        const snap = await t.waitForStatus(ids[0] as string, ['completed'], alice.headers);
        assert.deepEqual(snap.nodeStates.echo, { echo: 'parallel' });
      });

      it('5 parallel non-blocking sends of one messageId → one task, one run', async () => {
        const msg = dataMessage({ steps: 1, stepMs: 3_600_000 }, { metadata: { skillId: 'steps' } });
        const before = await countRuns();
        const results = await Promise.all(
          Array.from({ length: 5 }, () => alice.send(msg, { configuration: { blocking: false } })),
        );
        const ids = results.map((r) => assertRpcResult(r).id as string);
        assert.equal(new Set(ids).size, 1, `ids: ${ids.join(', ')}`);
        assert.equal(await countRuns(), before + 1);
        assertRpcResult(await alice.rpc('tasks/cancel', { id: ids[0] }));
      });

      it('the same messageId from another principal (same tenant) or another tenant is a different task', async () => {
        const msg = textMessage('shared id');
        const before = await countRuns();
        const a = await alice.sendOk(msg);
        const b = await bob.sendOk(msg);
        const e = await eve.sendOk(msg);
        assert.equal(new Set([a.id, b.id, e.id]).size, 3);
        assert.equal(await countRuns(), before + 3);
        assert.equal((await bob.sendOk(msg)).id, b.id);
        assert.equal((await eve.sendOk(msg)).id, e.id);
        assert.equal(await countRuns(), before + 3);
        assert.equal((await bob.run(b.id)).owner.principal, 'bob');
      });
    });

    // ------------------------------------------------------------ trust

    describe('runs started over A2A', () => {
      it('are marked untrusted and tagged a2a:<messageId> and a2a:<contextId>', async () => {
        const ctx = `ctx-${randomUUID()}`;
        const msg = textMessage('tagged', { contextId: ctx });
        const task = await alice.sendOk(msg);
        const snap = await alice.run(task.id);
        assert.equal(snap.metadata.contentTrust, 'untrusted');
        assert.deepEqual(snap.tags, [`a2a:${msg.messageId}`, `a2a:${ctx}`]);
        assert.equal(snap.metadata.a2a.messageId, msg.messageId);
        assert.equal(snap.metadata.a2a.contextId, ctx);
        assert.equal(snap.owner.tenant, 't1');
        assert.equal(snap.owner.principal, 'alice');
        assert.deepEqual(snap.inputs, { prompt: 'tagged' });
      });

      it('without a contextId only the messageId tag is set', async () => {
        const msg = textMessage('untagged');
        const task = await alice.sendOk(msg);
        const snap = await alice.run(task.id);
        assert.equal(snap.metadata.contentTrust, 'untrusted');
        assert.deepEqual(snap.tags, [`a2a:${msg.messageId}`]);
      });

      it('file parts enter the run inputs as references only (name, mimeType, uri, size)', async () => {
        const bytes = Buffer.from('TOP-SECRET-FILE-CONTENT').toString('base64');
        const msg = message([
          textPart('see files'),
          { kind: 'file', file: { bytes, name: 'a.txt', mimeType: 'text/plain' } },
          { kind: 'file', file: { uri: 'https://files.example.com/b.pdf', name: 'b.pdf' } },
        ]);
        const task = await alice.sendOk(msg);
        const snap = await alice.run(task.id);
        assert.deepEqual(snap.inputs, {
          prompt: 'see files',
          files: [
            { name: 'a.txt', mimeType: 'text/plain', size: 23 },
            { name: 'b.pdf', uri: 'https://files.example.com/b.pdf' },
          ],
        });
        assert.ok(!JSON.stringify(snap).includes(bytes));
      });

      it('inline file bytes are not written to the run event log', {}, async () => {
        const bytes = Buffer.from('TOP-SECRET-FILE-CONTENT').toString('base64');
        const task = await alice.sendOk(message([textPart('x'), { kind: 'file', file: { bytes, name: 'a.txt' } }]));
        const leaked = (await t.events(task.id, alice.headers)).filter((e) => JSON.stringify(e).includes(bytes));
        assert.deepEqual(
          leaked.map((e) => e.type),
          [],
        );
      });

      it('a data part with a __proto__ key neither pollutes prototypes nor breaks the run', async () => {
        const msg = message([textPart('proto')]);
        const raw = JSON.stringify({
          jsonrpc: '2.0',
          id: 'proto',
          method: 'message/send',
          params: { message: msg },
        }).replace(
          '"parts":[',
          '"parts":[{"kind":"data","data":' +
            '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}},',
        );
        const res = await rpcRaw(t, raw, alice.headers);
        const task = assertRpcResult(res, 'proto');
        assert.equal(task.status.state, 'completed');
        assert.equal(({} as Record<string, unknown>).polluted, undefined);
        assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
      });

      it('message metadata cannot override the trust marking', async () => {
        const msg = textMessage('sneaky', {
          metadata: { skillId: 'echo', contentTrust: 'trusted', openwop: { contentTrust: 'trusted' } },
        });
        const task = await alice.sendOk(msg, { metadata: { contentTrust: 'trusted' } });
        assert.equal((await alice.run(task.id)).metadata.contentTrust, 'untrusted');
      });
    });
  });
}
