// A2A 1.0 errors with malformed or hostile requests, on JSON-RPC (`error.data` a list with a
// google.rpc.ErrorInfo) and on HTTP+JSON (the HTTP status and a google.rpc.Status body), and the
// version negotiation that decides which form a caller gets. Every code of -32001…-32009 has a
// test; -32003, -32006 and -32008 cannot occur on this host, and their tests say why and show the
// hostile requests nearest to them getting the error they deserve instead.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { restError } from '../../src/a2a/codec/error-forms.js';
import { extensionSupportRequired, invalidAgentResponse, pushNotSupported } from '../../src/a2a/errors.js';
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
    // HTTP+JSON answers it with an HTTP status before any stream byte (A2A 1.0 §11.6).
    assertRest(
      await t.post(`${REST}/tasks/${done.id}:subscribe`, undefined, alice),
      400,
      'FAILED_PRECONDITION',
      'UNSUPPORTED_OPERATION',
    );
  });

  it('REST streams refused before they open: a finished task is HTTP 400, an unknown or foreign one 404', async () => {
    const finished = 'FAILED_PRECONDITION';
    for (const [method, path] of [
      ['POST', `${REST}/tasks/${done.id}:subscribe`],
      ['GET', `${REST}/tasks/${done.id}:subscribe`],
      ['POST', `${REST}/t1/tasks/${done.id}:subscribe`],
    ] as const) {
      assertRest(await t.request(method, path, undefined, alice), 400, finished, 'UNSUPPORTED_OPERATION');
    }
    for (const [path, who] of [
      [`${REST}/tasks/run_does_not_exist:subscribe`, alice],
      [`${REST}/tasks/${done.id}:subscribe`, eve],
      [`${REST}/t1/tasks/run_does_not_exist:subscribe`, alice],
    ] as const) {
      assertRest(await t.post(path, undefined, who), 404, 'NOT_FOUND', 'TASK_NOT_FOUND');
    }
    // message:stream naming a task: the same answers, and nothing is started.
    const before = await t.host.store.runs.count();
    const naming = (taskId: string) => ({ message: userText('again', { taskId }) });
    assertRest(await t.post(`${REST}/message:stream`, naming(done.id), alice), 400, finished, 'UNSUPPORTED_OPERATION');
    assertRest(await t.post(`${REST}/message:stream`, naming(done.id), eve), 404, 'NOT_FOUND', 'TASK_NOT_FOUND');
    assertRest(
      await t.post(`${REST}/message:stream`, naming('run_does_not_exist'), alice),
      404,
      'NOT_FOUND',
      'TASK_NOT_FOUND',
    );
    // A malformed stream request is refused the same way (400 INVALID_PARAMS).
    assertRest(
      await t.post(`${REST}/message:stream`, { message: 42 }, alice),
      400,
      'INVALID_ARGUMENT',
      'INVALID_PARAMS',
    );
    assert.equal(await t.host.store.runs.count(), before, 'nothing started');
    // The JSON-RPC binding keeps its SSE error event (what its streaming clients read).
    const viaRpc = await rpc('SubscribeToTask', { id: 'run_does_not_exist' });
    assertRpcV1({ ...viaRpc, body: oneErrorEvent(viaRpc) }, -32001, 'TASK_NOT_FOUND');
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

  it('REST: what the router refuses is google.rpc.Status too (bad %-encoding 400, a segment over 256 characters 414)', async () => {
    const long = 'x'.repeat(300);
    const badEncodings = ['%zz', '%E0%A4%A', '%C3', '%', 'a%2', '%FF%FE'];
    for (const bad of badEncodings) {
      for (const path of [
        `/tasks/${bad}`,
        `/tasks/${bad}:cancel`,
        `/${bad}/tasks`,
        `/tasks/run_x/pushNotificationConfigs/${bad}`,
      ]) {
        const res = await t.get(`${REST}${path}`, alice);
        const err = assertRest(res, 400, 'INVALID_ARGUMENT', 'BAD_URL');
        assert.doesNotMatch(err.message, /%/, 'the path is not echoed');
      }
    }
    for (const path of [
      `/tasks/${long}`,
      `/tasks/${long}:subscribe`,
      `/${long}/tasks`,
      `/tasks/run_x/pushNotificationConfigs/${long}`,
    ]) {
      const res = await t.request(path.endsWith(':subscribe') ? 'POST' : 'GET', `${REST}${path}`, undefined, alice);
      const err = assertRest(res, 414, 'INVALID_ARGUMENT', 'URI_TOO_LONG');
      assert.doesNotMatch(err.message, /xxxx/, 'the path is not echoed');
    }
    // Elsewhere the same refusals come in the OpenWOP envelope.
    const rest = await t.get('/v1/runs/%zz', alice);
    assert.equal(rest.status, 400, rest.text);
    assert.deepEqual(Object.keys(rest.body).sort(), ['error', 'message']);
    assert.equal(rest.body.error, 'bad_url');
    const long404 = await t.get(`/v1/runs/${long}`, alice);
    assert.equal(long404.status, 414, long404.text);
    assert.equal(long404.body.error, 'uri_too_long');
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

  // The three codes Handoff never sends, each with the hostile requests that come closest to it.
  // Their form, were they sent, is fixed in errors.ts: checked here so the docs can cite it.

  it('-32003 PushNotificationNotSupported cannot occur: push is always on; hostile configs are -32602 (400)', async () => {
    // Every host is built with push support (host.ts) and says so; -32003 is only what
    // the handler answers when built without it.
    const card = await t.get('/.well-known/agent-card.json', V1);
    assert.equal(card.body.capabilities.pushNotifications, true);
    assert.deepEqual(restError(pushNotSupported()).httpStatus, 400);
    const started = await rpc('SendMessage', { message: userText('hook me', { metadata: { skillId: 'approval' } }) });
    const taskId = started.body.result.task.id as string;
    const hostile = [
      'http://hooks.example.com/a2a',
      'https://169.254.169.254/latest/meta-data',
      'https://user:secret@hooks.example.com/a2a',
      'file:///etc/passwd',
      'https://[::1]/a2a',
    ];
    for (const url of hostile) {
      const viaRpc = assertRpcV1(
        await rpc('CreateTaskPushNotificationConfig', { taskId, url }),
        -32602,
        'INVALID_PARAMS',
      );
      assert.notEqual(viaRpc.code, -32003);
      // The message names the field as this version spells it (1.0: `url`, flat on the config).
      assert.match(viaRpc.message, /^url refused \(/, JSON.stringify(viaRpc));
      const viaRest = assertRest(
        await t.post(`${REST}/tasks/${taskId}/pushNotificationConfigs`, { url }, alice),
        400,
        'INVALID_ARGUMENT',
        'INVALID_PARAMS',
      );
      assert.match(viaRest.message, /^url refused \(/, JSON.stringify(viaRest));
    }
    // Over 0.3 the same refusal names 0.3's fields.
    const v03 = bearer(KEY_ALICE);
    const set03 = await rpc(
      'tasks/pushNotificationConfig/set',
      { taskId, pushNotificationConfig: { url: hostile[0] } },
      v03,
    );
    assert.match(set03.body.error?.message ?? '', /^pushNotificationConfig\.url refused \(/, set03.text);
    const send03 = await rpc(
      'message/send',
      {
        message: { kind: 'message', messageId: `m-${Date.now()}`, role: 'user', parts: [{ kind: 'text', text: 'x' }] },
        configuration: { pushNotificationConfig: { url: hostile[0] } },
      },
      v03,
    );
    assert.match(
      send03.body.error?.message ?? '',
      /^configuration\.pushNotificationConfig\.url refused \(/,
      send03.text,
    );
    // Inline on a send: refused before anything starts.
    const before = await t.host.store.runs.count();
    const inline = {
      message: userText('x', { metadata: { skillId: 'echo' } }),
      configuration: { taskPushNotificationConfig: { url: hostile[0] } },
    };
    const inlineRpc = assertRpcV1(await rpc('SendMessage', inline), -32602, 'INVALID_PARAMS');
    assert.match(inlineRpc.message, /^configuration\.taskPushNotificationConfig\.url refused \(/);
    const inlineRest = assertRest(
      await t.post(`${REST}/message:send`, inline, alice),
      400,
      'INVALID_ARGUMENT',
      'INVALID_PARAMS',
    );
    assert.match(inlineRest.message, /^configuration\.taskPushNotificationConfig\.url refused \(/);
    assert.equal(await t.host.store.runs.count(), before, 'nothing started');
    // Another tenant's task is not found (404), never "push unsupported".
    const url = 'https://hooks.example.com/a2a';
    assertRpcV1(await rpc('CreateTaskPushNotificationConfig', { taskId, url }, eve), -32001, 'TASK_NOT_FOUND');
    assertRest(
      await t.post(`${REST}/tasks/${taskId}/pushNotificationConfigs`, { url }, eve),
      404,
      'NOT_FOUND',
      'TASK_NOT_FOUND',
    );
    const listed = await rpc('ListTaskPushNotificationConfigs', { taskId });
    assert.deepEqual(listed.body.result.configs, [], 'no refused config was stored');
    await rpc('CancelTask', { id: taskId });
  });

  it('-32006 InvalidAgentResponse cannot occur: it is what a client says of an agent; malformed input is -32602', async () => {
    // Handoff builds every answer itself from its own model; -32006 is raised by its peer client
    // about another agent's answer (test/integration/peers-errors.test.ts). Requests shaped like a
    // broken agent answer (a part with no content, an unknown state, bytes that are not base64)
    // are the caller's mistake: -32602.
    assert.equal(restError(invalidAgentResponse('x')).httpStatus, 500);
    const before = await t.host.store.runs.count();
    const broken = [
      { messageId: 'm-empty-part', role: 'ROLE_USER', parts: [{}] },
      { messageId: 'm-bad-role', role: 'ROLE_UNKNOWN', parts: [{ text: 'x' }] },
      { messageId: 'm-bad-bytes', role: 'ROLE_USER', parts: [{ raw: '%%% not base64 %%%' }] },
      { messageId: 'm-no-parts', role: 'ROLE_USER', parts: [] },
    ];
    for (const message of broken) {
      const res = await rpc('SendMessage', { message });
      assert.notEqual(res.body.error?.code, -32006, res.text);
      assertRpcV1(res, -32602, 'INVALID_PARAMS');
      assertRest(await t.post(`${REST}/message:send`, { message }, alice), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS');
    }
    assertRpcV1(await rpc('ListTasks', { status: 'TASK_STATE_BOGUS' }), -32602, 'INVALID_PARAMS');
    assert.equal(await t.host.store.runs.count(), before, 'nothing started');
  });

  it('-32008 ExtensionSupportRequired cannot occur: no extension is required; unknown ones are ignored', async () => {
    // The card declares no extension, so none is required; a client naming extensions Handoff does
    // not know (header and message) is served as if it named none.
    assert.equal(restError(extensionSupportRequired(['urn:x'])).httpStatus, 400);
    const card = await t.get('/.well-known/agent-card.json', V1);
    const required = (card.body.capabilities.extensions ?? []).filter((e: Json) => e.required === true);
    assert.deepEqual(required, []);
    const ext = { ...alice, 'a2a-extensions': 'https://example.com/ext/unknown/v1, urn:bogus' };
    const message = userText('with extensions', {
      metadata: { skillId: 'echo' },
      extensions: ['https://example.com/ext/unknown/v1'],
    });
    const viaRpc = await rpc('SendMessage', { message }, ext);
    assert.equal(viaRpc.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', viaRpc.text);
    const viaRest = await t.post(
      `${REST}/message:send`,
      { message: { ...message, messageId: `${message.messageId}-r` } },
      ext,
    );
    assert.equal(viaRest.status, 200, viaRest.text);
    assert.equal(viaRest.body.task.status.state, 'TASK_STATE_COMPLETED');
    // The extended card (-32007 when declared but not configured) is not declared at all: -32004.
    assert.equal(card.body.capabilities.extendedAgentCard, false);
    assertRest(await t.get(`${REST}/extendedAgentCard`, ext), 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION');
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
