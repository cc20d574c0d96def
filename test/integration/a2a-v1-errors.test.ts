// A2A 1.0 errors with malformed or hostile requests, on JSON-RPC (`error.data` a list with a
// google.rpc.ErrorInfo) and on HTTP+JSON (the HTTP status and a google.rpc.Status body), and the
// version negotiation that decides which form a caller gets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KEY_ALICE, KEY_EVE, oneErrorEvent, startA2ATeam } from '../support/a2a.js';
import { bearer, type Json, type Reply, type TestHost } from '../support/host.js';

const V1 = { 'a2a-version': '1.0' };
const REST = '/v1/a2a/rest';
const alice = { ...bearer(KEY_ALICE), ...V1 };
const eve = { ...bearer(KEY_EVE), ...V1 };

const userText = (text: string, extra: Record<string, unknown> = {}) => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  role: 'ROLE_USER',
  parts: [{ text }],
  ...extra,
});

function assertRpcV1(res: Reply, code: number, reason: string): Json {
  assert.equal(res.status, 200, res.text);
  const err = res.body.error;
  assert.equal(err?.code, code, res.text);
  assert.ok(Array.isArray(err.data), `error.data is a list: ${res.text}`);
  assert.equal(err.data[0]['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
  assert.equal(err.data[0].reason, reason);
  assert.equal(err.data[0].domain, 'a2a-protocol.org');
  return err;
}

function assertRest(res: Reply, http: number, status: string, reason: string): Json {
  assert.equal(res.status, http, res.text);
  assert.match(String(res.headers['content-type']), /^application\/a2a\+json/);
  const err = res.body.error;
  assert.equal(err.code, http);
  assert.equal(err.status, status);
  assert.equal(err.details[0]['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
  assert.equal(err.details[0].reason, reason);
  assert.equal(err.details[0].domain, 'a2a-protocol.org');
  return err;
}

describe('A2A 1.0 errors (sqlite)', () => {
  let t: TestHost;
  let done: Json;
  const rpc = (method: string, params: unknown, headers: Record<string, string> = alice) =>
    t.request('POST', '/v1/a2a', { jsonrpc: '2.0', id: 1, method, params }, headers);

  before(async () => {
    ({ t } = await startA2ATeam('sqlite'));
    const res = await rpc('SendMessage', { message: userText('finished', { metadata: { skillId: 'echo' } }) });
    done = res.body.result.task;
    assert.equal(done.status.state, 'TASK_STATE_COMPLETED', res.text);
  });
  after(async () => {
    await t?.close();
  });

  it('-32001 TaskNotFound: an unknown id, and another tenant’s task (404 on REST)', async () => {
    assertRpcV1(await rpc('GetTask', { id: 'run_does_not_exist' }), -32001, 'TASK_NOT_FOUND');
    assertRpcV1(await rpc('GetTask', { id: done.id }, eve), -32001, 'TASK_NOT_FOUND');
    assertRest(await t.get(`${REST}/tasks/${done.id}`, eve), 404, 'NOT_FOUND', 'TASK_NOT_FOUND');
    assertRest(
      await t.get(`${REST}/tasks/run_nope/pushNotificationConfigs`, alice),
      404,
      'NOT_FOUND',
      'TASK_NOT_FOUND',
    );
  });

  it('-32002 TaskNotCancelable: cancel a finished task (400 FAILED_PRECONDITION)', async () => {
    assertRpcV1(await rpc('CancelTask', { id: done.id }), -32002, 'TASK_NOT_CANCELABLE');
    assertRest(
      await t.post(`${REST}/tasks/${done.id}:cancel`, undefined, alice),
      400,
      'FAILED_PRECONDITION',
      'TASK_NOT_CANCELABLE',
    );
  });

  it('-32004 UnsupportedOperation: a reply to a finished task, subscribing to it, the extended card', async () => {
    const replyToDone = { message: userText('again', { taskId: done.id, contextId: done.contextId }) };
    assertRpcV1(await rpc('SendMessage', replyToDone), -32004, 'UNSUPPORTED_OPERATION');
    // A streaming method's refusal is the one event of an SSE answer (what streaming clients read).
    const subscribed = await rpc('SubscribeToTask', { id: done.id });
    assertRpcV1({ ...subscribed, body: oneErrorEvent(subscribed) }, -32004, 'UNSUPPORTED_OPERATION');
    assertRpcV1(await rpc('GetExtendedAgentCard', {}), -32004, 'UNSUPPORTED_OPERATION');
    assertRest(await t.get(`${REST}/extendedAgentCard`, alice), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION');
    const restSubscribed = await t.post(`${REST}/tasks/${done.id}:subscribe`, undefined, alice);
    const status = oneErrorEvent(restSubscribed);
    assert.equal(status.error.code, 400);
    assert.equal(status.error.status, 'FAILED_PRECONDITION');
    assert.equal(status.error.details[0].reason, 'UNSUPPORTED_OPERATION');
  });

  it('-32005 ContentTypeNotSupported: acceptedOutputModes this agent cannot produce', async () => {
    const before = await t.host.store.runs.count();
    const params = {
      message: userText('x', { metadata: { skillId: 'echo' } }),
      configuration: { acceptedOutputModes: ['image/png'] },
    };
    assertRpcV1(await rpc('SendMessage', params), -32005, 'CONTENT_TYPE_NOT_SUPPORTED');
    assertRest(
      await t.post(`${REST}/message:send`, params, alice),
      400,
      'INVALID_ARGUMENT',
      'CONTENT_TYPE_NOT_SUPPORTED',
    );
    assert.equal(await t.host.store.runs.count(), before, 'nothing started');
  });

  it('-32007 (0.3) and -32602 with field violations (1.0)', async () => {
    const old = await t.request(
      'POST',
      '/v1/a2a',
      { jsonrpc: '2.0', id: 1, method: 'agent/getAuthenticatedExtendedCard' },
      bearer(KEY_ALICE),
    );
    assert.equal(old.body.error.code, -32007);
    const bad = assertRpcV1(await rpc('GetTask', { id: 42 }), -32602, 'INVALID_PARAMS');
    assert.match(bad.message, /id/);
    const rest = assertRest(
      await t.get(`${REST}/tasks?pageSize=500`, alice),
      400,
      'INVALID_ARGUMENT',
      'INVALID_PARAMS',
    );
    assert.match(rest.message, /pageSize/);
    assertRest(await t.get(`${REST}/tasks?pageToken=forged`, alice), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS');
    // The tenant of a request may only confirm the caller's own.
    assertRest(await t.get(`${REST}/t1/tasks`, eve), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS');
    assertRpcV1(await rpc('ListTasks', { tenant: 't1' }, eve), -32602, 'INVALID_PARAMS');
  });

  it('-32009 VersionNotSupported: an unknown version, a 1.0 method without the header, REST without 1.0', async () => {
    assertRpcV1(
      await rpc('GetTask', { id: done.id }, { ...alice, 'a2a-version': '2.0' }),
      -32009,
      'VERSION_NOT_SUPPORTED',
    );
    const noHeader = await t.request(
      'POST',
      '/v1/a2a',
      { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: done.id } },
      bearer(KEY_ALICE),
    );
    assert.equal(noHeader.body.error.code, -32009);
    assertRest(
      await t.get(`${REST}/tasks/${done.id}`, bearer(KEY_ALICE)),
      400,
      'FAILED_PRECONDITION',
      'VERSION_NOT_SUPPORTED',
    );
    // The query parameter is as good as the header.
    const viaQuery = await t.get(`${REST}/tasks/${done.id}?A2A-Version=1.0`, bearer(KEY_ALICE));
    assert.equal(viaQuery.status, 200, viaQuery.text);
    assert.equal(viaQuery.body.status.state, 'TASK_STATE_COMPLETED');
  });

  it('REST: the host’s own refusals are google.rpc.Status too (401, 404 route, 415)', async () => {
    assertRest(await t.get(`${REST}/tasks`, V1), 401, 'UNAUTHENTICATED', 'UNAUTHENTICATED');
    assertRest(await t.get(`${REST}/nothing/here/at/all`, alice), 404, 'NOT_FOUND', 'NOT_FOUND');
    const form = await t.request('POST', `${REST}/message:send`, 'a=b', {
      ...alice,
      'content-type': 'application/x-www-form-urlencoded',
    });
    assertRest(form, 415, 'INVALID_ARGUMENT', 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('0.3 push get: no id, "default" or the task id find the only config; another id is not found', async () => {
    const v03 = bearer(KEY_ALICE);
    const call = (method: string, params: unknown) =>
      t.request('POST', '/v1/a2a', { jsonrpc: '2.0', id: 1, method, params }, v03);
    const started = await call('message/send', {
      message: {
        kind: 'message',
        messageId: `m-${Date.now()}`,
        role: 'user',
        parts: [{ kind: 'text', text: 'x' }],
        metadata: { skillId: 'approval' },
      },
    });
    const taskId = started.body.result.id as string;
    const url = 'https://hooks.example.com/a2a';
    const set = await call('tasks/pushNotificationConfig/set', { taskId, pushNotificationConfig: { url } });
    assert.equal(set.body.result.pushNotificationConfig.url, url, set.text);
    for (const pushNotificationConfigId of [undefined, 'default', taskId]) {
      const got = await call('tasks/pushNotificationConfig/get', { id: taskId, pushNotificationConfigId });
      assert.equal(got.body.result?.pushNotificationConfig.url, url, got.text);
    }
    const missing = await call('tasks/pushNotificationConfig/get', { id: taskId, pushNotificationConfigId: 'other' });
    assert.equal(missing.body.error.code, -32001);
    assert.match(missing.body.error.message, /^Push notification config not found/);
    await call('tasks/cancel', { id: taskId });
  });

  it('the card: 0.3 (hybrid) without a version, 1.0 with one, Vary: A2A-Version', async () => {
    const v03 = await t.get('/.well-known/agent-card.json');
    assert.equal(v03.headers.vary, 'A2A-Version');
    assert.equal(v03.body.protocolVersion, '0.3.0');
    assert.deepEqual(
      v03.body.supportedInterfaces.map((i: Json) => `${i.protocolBinding} ${i.protocolVersion}`),
      ['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3'],
    );
    const v1 = await t.get('/.well-known/agent-card.json', V1);
    assert.equal(v1.body.protocolVersion, undefined);
    assert.equal(v1.body.capabilities.extendedAgentCard, false);
  });
});
