// Hostile and malformed 1.0 requests: each is -32602 with a message naming the field, and the
// 1.0 error form carries the field as a google.rpc.BadRequest violation.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { v1_0 } from '../../src/a2a/codec/v1_0.js';
import { jsonRpcErrorV1, restError } from '../../src/a2a/codec/error-forms.js';
import { A2AError } from '../../src/a2a/errors.js';
import type { Operation } from '../../src/a2a/model.js';
import { decodePageToken, encodePageToken } from '../../src/a2a/page-token.js';

const message = { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] };

/** The -32602 a decode throws (fails the test if it decodes). */
function refusal(operation: Operation, params: unknown): A2AError {
  try {
    v1_0.decodeRequest(operation, params);
  } catch (e) {
    assert.ok(e instanceof A2AError, String(e));
    assert.equal(e.kind, 'invalid-params', e.message);
    return e;
  }
  assert.fail(`decoded: ${JSON.stringify(params)}`);
}

const refused = (operation: Operation, params: unknown, text: string) =>
  assert.equal(refusal(operation, params).message, text);

describe('SendMessage params', () => {
  test('parts with no content, or two', () => {
    const hint = 'must be a part with exactly one of text, raw, url or data';
    refused('send', { message: { ...message, parts: [{}] } }, `params.message.parts[0]: ${hint}`);
    refused(
      'send',
      { message: { ...message, parts: [{ filename: 'x', mediaType: 'text/plain' }] } },
      `params.message.parts[0]: ${hint}`,
    );
    refused('send', { message: { ...message, parts: [{ text: 'a', data: {} }] } }, `params.message.parts[0]: ${hint}`);
    refused(
      'send',
      { message: { ...message, parts: [{ text: 'ok' }, { raw: 'aGk=', url: 'https://x.example.com' }] } },
      `params.message.parts[1]: ${hint}`,
    );
    refused(
      'send',
      { message: { ...message, parts: [{ kind: 'text', text: 'a 0.3 part' }, 'text'] } },
      `params.message.parts[1]: ${hint}`,
    );
  });

  test('wrong types and unknown enum names', () => {
    refused('send', { message: { ...message, messageId: 7 } }, 'params.message.messageId: must be a non-empty string');
    refused('send', { message: { ...message, messageId: '' } }, 'params.message.messageId: must be a non-empty string');
    refused(
      'send',
      { message: { ...message, role: 'user' } },
      'params.message.role: must be "ROLE_USER" or "ROLE_AGENT"',
    );
    refused(
      'send',
      { message: { ...message, role: 'ROLE_UNSPECIFIED' } },
      'params.message.role: must be "ROLE_USER" or "ROLE_AGENT"',
    );
    refused('send', { message: { ...message, role: 1 } }, 'params.message.role: must be "ROLE_USER" or "ROLE_AGENT"');
    refused('send', { message: { ...message, parts: [] } }, 'params.message.parts: must be a non-empty array of parts');
    refused(
      'send',
      { message: { ...message, parts: { text: 'x' } } },
      'params.message.parts: must be a non-empty array of parts',
    );
    refused(
      'send',
      { message: { ...message, parts: [{ text: 5 }] } },
      'params.message.parts[0].text: must be a string',
    );
    refused(
      'send',
      { message: { ...message, parts: [{ raw: 'not base64!' }] } },
      'params.message.parts[0].raw: must be base64',
    );
    refused(
      'send',
      { message: { ...message, parts: [{ url: '' }] } },
      'params.message.parts[0].url: must be a non-empty string',
    );
    refused('send', { message: { ...message, metadata: [1] } }, 'params.message.metadata: must be an object');
    refused('send', { message: { ...message, taskId: 5 } }, 'params.message.taskId: must be a string');
    refused(
      'send',
      { message: { ...message, referenceTaskIds: 't1' } },
      'params.message.referenceTaskIds: must be an array of strings',
    );
    refused('send', { message: 'hi' }, 'params.message: must be an object');
    refused('send', {}, 'params.message: must be an object');
    refused('send', undefined, 'params: is required');
    refused(
      'send',
      { message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } },
      'params.message.messageId: must be a non-empty string',
    );
  });

  test('configuration', () => {
    const send = (configuration: unknown) => ({ message, configuration });
    refused('send', send([]), 'params.configuration: must be an object');
    refused('send', send({ returnImmediately: 'yes' }), 'params.configuration.returnImmediately: must be a boolean');
    refused('send', send({ historyLength: -1 }), 'params.configuration.historyLength: must be an integer >= 0');
    refused('send', send({ historyLength: 1.5 }), 'params.configuration.historyLength: must be an integer >= 0');
    refused('send', send({ historyLength: 2 ** 40 }), 'params.configuration.historyLength: must be an integer >= 0');
    refused('send', send({ historyLength: '3' }), 'params.configuration.historyLength: must be an integer >= 0');
    refused(
      'send',
      send({ acceptedOutputModes: [1] }),
      'params.configuration.acceptedOutputModes[0]: must be a string',
    );
    refused(
      'send',
      send({ taskPushNotificationConfig: { token: 't' } }),
      'params.configuration.taskPushNotificationConfig.url: must be a non-empty string',
    );
    refused(
      'send',
      send({ taskPushNotificationConfig: { url: 'https://h.example.com', authentication: { schemes: ['Bearer'] } } }),
      'params.configuration.taskPushNotificationConfig.authentication.scheme: must be a non-empty string',
    );
  });

  test('proto3 defaults: empty ids are unset; URL-safe or unpadded base64 is normalized', () => {
    const req = v1_0.decodeRequest('send', {
      tenant: '',
      message: { ...message, taskId: '', contextId: '', parts: [{ raw: '-_8' }, { text: '', mediaType: '' }] },
    });
    assert.deepEqual(req.message, {
      messageId: 'm1',
      role: 'user',
      parts: [
        { kind: 'file', bytes: '+/8=' },
        { kind: 'text', text: '' },
      ],
    });
    assert.equal(req.tenant, undefined);
  });

  test('unknown fields are ignored (ProtoJSON), data may be any JSON value', () => {
    const req = v1_0.decodeRequest('send', {
      message: { ...message, parts: [{ data: null }, { data: 'x' }, { data: [1] }], future: 1 },
      extra: true,
    });
    assert.deepEqual(
      req.message.parts.map((p) => (p.kind === 'data' ? p.data : undefined)),
      [null, 'x', [1]],
    );
  });
});

describe('ListTasks params', () => {
  test('pageSize is 1–100 and an integer', () => {
    const hint = 'params.pageSize: must be an integer from 1 to 100';
    for (const pageSize of [0, 101, 1e9, -1, 1.5, '10', null]) refused('list', { pageSize }, hint);
    assert.equal(v1_0.decodeRequest('list', { pageSize: 100 }).pageSize, 100);
    assert.equal(v1_0.decodeRequest('list', {}).pageSize, 50);
  });

  test('status: TASK_STATE_* names; unspecified means no filter; anything else refused', () => {
    assert.equal(v1_0.decodeRequest('list', { status: 'TASK_STATE_INPUT_REQUIRED' }).state, 'input-required');
    assert.equal(v1_0.decodeRequest('list', { status: 'TASK_STATE_UNSPECIFIED' }).state, undefined);
    assert.equal(v1_0.decodeRequest('list', { status: 'UNRECOGNIZED' }).state, undefined);
    assert.equal(v1_0.decodeRequest('list', { status: 'working' }).state, 'working');
    const hint = 'params.status: must be a TaskState name such as "TASK_STATE_WORKING"';
    for (const status of ['TASK_STATE_CANCELLED', 'TASK_STATE_BOGUS', 'task_state_working', 2, '', 'unknown']) {
      refused('list', { status }, hint);
    }
  });

  test('statusTimestampAfter: ISO 8601 with a zone, normalized to UTC', () => {
    assert.equal(
      v1_0.decodeRequest('list', { statusTimestampAfter: '2026-06-13T19:00:00Z' }).statusTimestampAfter,
      '2026-06-13T19:00:00.000Z',
    );
    const hint =
      'params.statusTimestampAfter: must be an ISO 8601 date-time with a time zone, e.g. "2026-01-31T09:00:00Z"';
    for (const t of ['yesterday', '2026-06-13', '2026-06-13T19:00:00', '2026-13-40T99:00:00Z', 1_750_000_000, '']) {
      refused('list', { statusTimestampAfter: t }, hint);
    }
  });

  test('other fields: types checked; the page token decoded', () => {
    refused('list', { includeArtifacts: 'true' }, 'params.includeArtifacts: must be a boolean');
    refused('list', { historyLength: -2 }, 'params.historyLength: must be an integer >= 0');
    refused('list', { contextId: 9 }, 'params.contextId: must be a string');
    refused('list', { pageToken: 5 }, 'params.pageToken: must be a string');
    const token = encodePageToken({ timestamp: '2026-06-13T19:00:00.000Z', taskId: 'run_9' });
    assert.deepEqual(v1_0.decodeRequest('list', { pageToken: token, contextId: '' }), {
      pageSize: 50,
      after: { timestamp: '2026-06-13T19:00:00.000Z', taskId: 'run_9' },
      includeArtifacts: false,
    });
  });

  test('malformed page tokens', () => {
    const text = 'params.pageToken: is not a page token from this server; pass nextPageToken unchanged';
    const b64 = (s: string) => Buffer.from(s).toString('base64url');
    const hostile = [
      'garbage!',
      'x'.repeat(2000),
      b64('not json'),
      b64('{"a":1}'),
      b64('["2026-06-13T19:00:00.000Z"]'),
      b64('["2026-06-13T19:00:00.000Z","run_1","extra"]'),
      b64('["yesterday","run_1"]'),
      b64('["2026-06-13T19:00:00.000Z",""]'),
      b64('["2026-06-13T19:00:00.000Z",5]'),
      b64('[null,"run_1"]'),
      b64('["2026-02-31T99:00:00.000Z","run_1"]'),
    ];
    for (const pageToken of hostile) refused('list', { pageToken }, text);
  });
});

describe('other methods', () => {
  test('task ids are required non-empty strings', () => {
    for (const op of ['get', 'cancel', 'subscribe'] as const) {
      refused(op, {}, 'params.id: must be a non-empty string');
      refused(op, { id: '' }, 'params.id: must be a non-empty string');
      refused(op, { id: ['t1'] }, 'params.id: must be a non-empty string');
    }
    refused('get', { id: 't1', historyLength: 'all' }, 'params.historyLength: must be an integer >= 0');
    refused('cancel', { id: 't1', metadata: 'x' }, 'params.metadata: must be an object');
  });

  test('push config methods', () => {
    refused('push.create', { url: 'https://h.example.com' }, 'params.taskId: must be a non-empty string');
    refused('push.create', { taskId: 't1' }, 'params.url: must be a non-empty string');
    refused(
      'push.create',
      { taskId: 't1', url: 'https://h.example.com', authentication: 'Bearer x' },
      'params.authentication: must be an object with a scheme string',
    );
    refused('push.create', { taskId: 't1', url: 'https://h.example.com', token: 5 }, 'params.token: must be a string');
    for (const op of ['push.get', 'push.delete'] as const) {
      refused(op, { taskId: 't1' }, 'params.id: must be a non-empty string');
      refused(op, { id: 'c1' }, 'params.taskId: must be a non-empty string');
    }
    refused('push.list', { taskId: 't1', pageSize: 1000 }, 'params.pageSize: must be an integer from 0 to 100');
    refused('push.list', { pageSize: 10 }, 'params.taskId: must be a non-empty string');
    assert.deepEqual(v1_0.decodeRequest('push.list', { taskId: 't1', pageSize: 10, pageToken: 'p' }), {
      taskId: 't1',
      pageSize: 10,
      pageToken: 'p',
    });
  });

  test('params that are not an object', () => {
    refused('get', 'run_1', 'params: must be an object');
    refused('get', null, 'params: must be an object');
    refused('card.extended', [], 'params: must be an object');
    refused('card.extended', { tenant: 5 }, 'params.tenant: must be a string');
  });
});

describe('the 1.0 error forms of a refusal', () => {
  test('JSON-RPC: ErrorInfo INVALID_PARAMS, then BadRequest naming the field', () => {
    const err = refusal('list', { pageSize: 500 });
    assert.deepEqual(jsonRpcErrorV1(err), {
      code: -32602,
      message: 'params.pageSize: must be an integer from 1 to 100',
      data: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'INVALID_PARAMS', domain: 'a2a-protocol.org' },
        {
          '@type': 'type.googleapis.com/google.rpc.BadRequest',
          fieldViolations: [{ field: 'pageSize', description: 'must be an integer from 1 to 100' }],
        },
      ],
    });
    assert.deepEqual(restError(err).httpStatus, 400);
  });

  test('a malformed page token names pageToken too', () => {
    const err = refusal('list', { pageToken: '%%%' });
    const [, badRequest] = (jsonRpcErrorV1(err).data as unknown[]) ?? [];
    assert.deepEqual(badRequest, {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'pageToken', description: 'is not a page token from this server' }],
    });
  });
});

describe('page tokens', () => {
  test('round trip, opaque text, ids and timestamps of any shape', () => {
    for (const cursor of [
      { timestamp: '2026-06-13T19:00:00.000Z', taskId: 'run_01J0ABC' },
      { timestamp: '2026-06-13T19:00:00+02:00', taskId: 'a|b"c\\d/é' },
      { timestamp: '2026-06-13T19:00:00.123456789Z', taskId: 'x' },
    ]) {
      const token = encodePageToken(cursor);
      assert.match(token, /^[A-Za-z0-9_-]+$/);
      assert.deepEqual(decodePageToken(token), cursor);
    }
  });

  test('the field name of the refusal follows the binding', () => {
    assert.throws(() => decodePageToken('!', 'pageToken'), /^A2AError: pageToken: /);
  });
});
