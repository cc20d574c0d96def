import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  errorResponse,
  parseEnvelope,
  parseJson,
  RawJson,
  successResponse,
  successText,
  validateParams,
  KNOWN_METHODS,
} from '../../src/a2a/jsonrpc.js';
import { INVALID_PARAMS, JSON_RPC_CODES, jsonRpcErrorV0_3 } from '../../src/a2a/codec/error-forms.js';
import {
  type A2AError,
  invalidParams,
  taskNotFound,
  toA2AError,
  internal,
  methodNotFound,
  pushNotSupported,
  taskNotCancelable,
  unsupportedOperation,
  invalidRequest,
} from '../../src/a2a/errors.js';

const INVALID_REQUEST = -32600;
const PARSE_ERROR = -32700;
/** The JSON-RPC code a binding sends for the error's kind. */
const codeOf = (e: A2AError): number => JSON_RPC_CODES[e.kind];

const req = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tasks/get',
  params: { id: 't1' },
  ...over,
});

function expectError(body: unknown, code: number, id: string | number | null) {
  const env = parseEnvelope(body);
  assert.equal(env.ok, false, JSON.stringify(body));
  if (env.ok) return;
  assert.equal(codeOf(env.error), code);
  assert.equal(env.id, id);
}

describe('parseEnvelope', () => {
  test('a valid request', () => {
    assert.deepEqual(parseEnvelope(req()), { ok: true, id: 1, method: 'tasks/get', params: { id: 't1' } });
    assert.deepEqual(parseEnvelope(req({ id: 'abc' })), {
      ok: true,
      id: 'abc',
      method: 'tasks/get',
      params: { id: 't1' },
    });
  });

  test('null or absent id answers as null; params may be absent', () => {
    const withNull = parseEnvelope(req({ id: null }));
    assert.ok(withNull.ok && withNull.id === null);
    const { id: _drop, ...noId } = req();
    const absent = parseEnvelope(noId);
    assert.ok(absent.ok && absent.id === null);
    const noParams = parseEnvelope({ jsonrpc: '2.0', id: 2, method: 'agent/getAuthenticatedExtendedCard' });
    assert.ok(noParams.ok && noParams.params === undefined);
  });

  test('jsonrpc must be exactly "2.0", echoing the id', () => {
    expectError(req({ jsonrpc: 'aaa' }), INVALID_REQUEST, 1);
    expectError(req({ jsonrpc: 2.0 }), INVALID_REQUEST, 1);
    expectError(req({ jsonrpc: undefined, id: 'x' }), INVALID_REQUEST, 'x');
  });

  test('method missing or not a string', () => {
    const { method: _m, ...noMethod } = req();
    expectError(noMethod, INVALID_REQUEST, 1);
    expectError(req({ method: 5 }), INVALID_REQUEST, 1);
    expectError(req({ method: '' }), INVALID_REQUEST, 1);
  });

  test('id of a wrong type → -32600 with id null', () => {
    for (const id of [{ bad: 'type' }, [1], true, 1.5, Number.NaN]) expectError(req({ id }), INVALID_REQUEST, null);
  });

  test('params must be a non-array object', () => {
    expectError(req({ params: [1, 2] }), INVALID_PARAMS, 1);
    expectError(req({ params: 'x' }), INVALID_PARAMS, 1);
    expectError(req({ params: null }), INVALID_PARAMS, 1);
  });

  test('an empty-string key anywhere in params → -32602', () => {
    expectError(req({ params: { '': 'x' } }), INVALID_PARAMS, 1);
    expectError(req({ params: { id: 't', metadata: { a: { '': 1 } } } }), INVALID_PARAMS, 1);
    expectError(req({ params: { message: { parts: [{ kind: 'data', data: { '': 1 } }] } } }), INVALID_PARAMS, 1);
    const env = parseEnvelope(req({ params: { id: 't', metadata: { a: { '': 1 } } } }));
    assert.ok(!env.ok && env.error.message.startsWith('params.metadata.a'));
  });

  test('batches and non-objects → -32600 id null', () => {
    expectError([req()], INVALID_REQUEST, null);
    expectError([], INVALID_REQUEST, null);
    expectError('hello', INVALID_REQUEST, null);
    expectError(null, INVALID_REQUEST, null);
    expectError(42, INVALID_REQUEST, null);
  });

  test('unknown methods parse; the dispatcher answers -32601', () => {
    const env = parseEnvelope(req({ method: 'no/such' }));
    assert.ok(env.ok);
    assert.equal(validateParams('no/such', {}), undefined);
    assert.ok(!KNOWN_METHODS.has('no/such'));
    assert.ok(KNOWN_METHODS.has('message/send') && KNOWN_METHODS.has('agent/getAuthenticatedExtendedCard'));
  });
});

describe('responses and JSON parsing', () => {
  test('successResponse / errorResponse', () => {
    assert.deepEqual(successResponse('a', { x: 1 }), { jsonrpc: '2.0', id: 'a', result: { x: 1 } });
    assert.deepEqual(successResponse(3, null), { jsonrpc: '2.0', id: 3, result: null });
    assert.deepEqual(errorResponse(null, taskNotFound('t9')), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32001, message: 'Task not found: t9' },
    });
    assert.deepEqual(errorResponse(1, invalidParams('bad', { f: 'x' })).error, {
      code: -32602,
      message: 'bad',
      data: { f: 'x' },
    });
  });

  test('successText splices a pre-serialized result in verbatim and equals JSON.stringify otherwise', () => {
    const task = { kind: 'task', id: 't"1', status: { state: 'completed' }, history: [{ text: 'ünï "q" \\ \n' }] };
    for (const id of ['a"b\\c', 7, null]) {
      const expected = JSON.stringify(successResponse(id, task));
      assert.equal(successText(id, new RawJson(JSON.stringify(task))), expected);
      assert.equal(successText(id, task), expected);
    }
    // Anything else that serializes a RawJson (a log line, a wrapper) still gets the same JSON.
    assert.equal(JSON.stringify({ r: new RawJson('{"a":[1,2]}') }), '{"r":{"a":[1,2]}}');
  });

  test('parseJson: malformed → -32700', () => {
    const bad = parseJson('{"jsonrpc":');
    assert.ok(!bad.ok && codeOf(bad.error) === PARSE_ERROR);
    const good = parseJson('{"a":1}');
    assert.ok(good.ok);
    assert.deepEqual(good.value, { a: 1 });
  });
});

describe('errors', () => {
  test('codes and factories', () => {
    assert.equal(codeOf(taskNotFound('x')), -32001);
    assert.equal(codeOf(taskNotCancelable('x')), -32002);
    assert.equal(codeOf(pushNotSupported()), -32003);
    assert.equal(codeOf(unsupportedOperation('nope')), -32004);
    assert.equal(codeOf(methodNotFound('m')), -32601);
    assert.match(methodNotFound('m').message, /m/);
    assert.equal(codeOf(invalidRequest('r')), -32600);
    assert.equal(codeOf(internal()), -32603);
    assert.ok(taskNotFound('x') instanceof Error);
  });

  test('toA2AError hides foreign errors', () => {
    const e = toA2AError(new Error('SQLITE_BUSY: secret path'));
    assert.equal(codeOf(e), -32603);
    assert.ok(!e.message.includes('SQLITE'));
    const own = taskNotFound('x');
    assert.equal(toA2AError(own), own);
    assert.deepEqual(jsonRpcErrorV0_3(unsupportedOperation('x')), { code: -32004, message: 'x' });
  });
});

describe('validateParams', () => {
  const message = (over: Record<string, unknown> = {}) => ({
    kind: 'message',
    messageId: 'm1',
    role: 'user',
    parts: [{ kind: 'text', text: 'hi' }],
    ...over,
  });
  const fails = (method: string, params: unknown, field: string) => {
    const err = validateParams(method, params);
    assert.ok(err, `${method} ${JSON.stringify(params)} should fail`);
    assert.equal(codeOf(err), INVALID_PARAMS);
    assert.ok(err.message.startsWith(`${field}:`), `got "${err.message}", expected field ${field}`);
  };
  const passes = (method: string, params: unknown) => assert.equal(validateParams(method, params)?.message, undefined);

  test('message/send and message/stream: valid forms, open to extra fields', () => {
    for (const m of ['message/send', 'message/stream']) {
      passes(m, { message: message() });
      passes(m, {
        message: message({
          taskId: 't',
          contextId: 'c',
          metadata: { skillId: 'x' },
          extraField: 1,
          parts: [
            { kind: 'text', text: 'a' },
            { kind: 'file', file: { uri: 'https://x/f', name: 'f' } },
            { kind: 'file', file: { bytes: 'aGk=' } },
            { kind: 'data', data: { action: 'accept' } },
          ],
        }),
        configuration: {
          blocking: false,
          historyLength: 0,
          acceptedOutputModes: ['text/plain'],
          pushNotificationConfig: { url: 'https://cb' },
        },
        metadata: {},
        somethingElse: true,
      });
    }
  });

  test('message/send failures name the field', () => {
    const m = 'message/send';
    fails(m, undefined, 'params');
    fails(m, {}, 'params.message');
    fails(m, { message: { kind: 'message' } }, 'params.message.messageId');
    fails(m, { message: message({ kind: 'task' }) }, 'params.message.kind');
    fails(m, { message: message({ messageId: '' }) }, 'params.message.messageId');
    fails(m, { message: message({ messageId: 5 }) }, 'params.message.messageId');
    fails(m, { message: message({ role: 'system' }) }, 'params.message.role');
    fails(m, { message: message({ parts: [] }) }, 'params.message.parts');
    fails(m, { message: message({ parts: 'x' }) }, 'params.message.parts');
    fails(m, { message: message({ parts: [{ kind: 'text' }] }) }, 'params.message.parts[0].text');
    fails(m, { message: message({ parts: [{ kind: 'text', text: 1 }] }) }, 'params.message.parts[0].text');
    fails(m, { message: message({ parts: [{ kind: 'video' }] }) }, 'params.message.parts[0]');
    fails(m, { message: message({ parts: [{ kind: 'file', file: {} }] }) }, 'params.message.parts[0].file');
    fails(
      m,
      { message: message({ parts: [{ kind: 'file', file: { bytes: 'a', uri: 'b' } }] }) },
      'params.message.parts[0].file',
    );
    fails(
      m,
      {
        message: message({
          parts: [
            { kind: 'text', text: 'a' },
            { kind: 'data', data: 'x' },
          ],
        }),
      },
      'params.message.parts[1].data',
    );
    fails(m, { message: message({ taskId: 5 }) }, 'params.message.taskId');
    fails(m, { message: message({ contextId: {} }) }, 'params.message.contextId');
    fails(m, { message: message({ metadata: [] }) }, 'params.message.metadata');
    fails(m, { message: message(), metadata: 'x' }, 'params.metadata');
    fails(m, { message: message(), configuration: 'x' }, 'params.configuration');
    fails(m, { message: message(), configuration: { blocking: 'yes' } }, 'params.configuration.blocking');
    fails(m, { message: message(), configuration: { historyLength: -1 } }, 'params.configuration.historyLength');
    fails(m, { message: message(), configuration: { historyLength: 1.5 } }, 'params.configuration.historyLength');
    fails(
      m,
      { message: message(), configuration: { acceptedOutputModes: [1] } },
      'params.configuration.acceptedOutputModes[0]',
    );
    fails(
      m,
      { message: message(), configuration: { pushNotificationConfig: {} } },
      'params.configuration.pushNotificationConfig.url',
    );
  });

  test('the message names the field in a readable form', () => {
    assert.equal(
      validateParams('message/send', { message: message({ messageId: '' }) })?.message,
      'params.message.messageId: must be a non-empty string',
    );
  });

  test('tasks/get', () => {
    passes('tasks/get', { id: 't', historyLength: 3, metadata: {} });
    fails('tasks/get', {}, 'params.id');
    fails('tasks/get', { id: '' }, 'params.id');
    fails('tasks/get', { id: 1 }, 'params.id');
    fails('tasks/get', { id: 't', historyLength: -1 }, 'params.historyLength');
    fails('tasks/get', { id: 't', historyLength: '2' }, 'params.historyLength');
    fails('tasks/get', { id: 't', metadata: 1 }, 'params.metadata');
  });

  test('tasks/cancel and tasks/resubscribe', () => {
    for (const m of ['tasks/cancel', 'tasks/resubscribe']) {
      passes(m, { id: 't' });
      fails(m, {}, 'params.id');
      fails(m, { id: null }, 'params.id');
    }
  });

  test('tasks/pushNotificationConfig/set', () => {
    const m = 'tasks/pushNotificationConfig/set';
    passes(m, {
      taskId: 't',
      pushNotificationConfig: {
        url: 'https://cb',
        id: 'c1',
        token: 'tok',
        authentication: { schemes: ['Bearer'], credentials: 'x' },
      },
    });
    fails(m, { pushNotificationConfig: { url: 'https://cb' } }, 'params.taskId');
    fails(m, { taskId: 't' }, 'params.pushNotificationConfig');
    fails(m, { taskId: 't', pushNotificationConfig: {} }, 'params.pushNotificationConfig.url');
    fails(m, { taskId: 't', pushNotificationConfig: { url: 5 } }, 'params.pushNotificationConfig.url');
    fails(
      m,
      { taskId: 't', pushNotificationConfig: { url: 'https://cb', token: 5 } },
      'params.pushNotificationConfig.token',
    );
    fails(
      m,
      { taskId: 't', pushNotificationConfig: { url: 'https://cb', authentication: {} } },
      'params.pushNotificationConfig.authentication.schemes',
    );
    fails(
      m,
      { taskId: 't', pushNotificationConfig: { url: 'https://cb', authentication: { schemes: 'Bearer' } } },
      'params.pushNotificationConfig.authentication.schemes',
    );
  });

  test('tasks/pushNotificationConfig/get, list, delete', () => {
    passes('tasks/pushNotificationConfig/get', { id: 't' });
    passes('tasks/pushNotificationConfig/get', { id: 't', pushNotificationConfigId: null });
    passes('tasks/pushNotificationConfig/get', { id: 't', pushNotificationConfigId: 'c1' });
    fails('tasks/pushNotificationConfig/get', {}, 'params.id');
    fails(
      'tasks/pushNotificationConfig/get',
      { id: 't', pushNotificationConfigId: 3 },
      'params.pushNotificationConfigId',
    );
    passes('tasks/pushNotificationConfig/list', { id: 't' });
    fails('tasks/pushNotificationConfig/list', { id: 3 }, 'params.id');
    passes('tasks/pushNotificationConfig/delete', { id: 't', pushNotificationConfigId: 'c1' });
    fails('tasks/pushNotificationConfig/delete', { id: 't' }, 'params.pushNotificationConfigId');
    fails('tasks/pushNotificationConfig/delete', { pushNotificationConfigId: 'c1' }, 'params.id');
  });

  test('the extended card takes no params', () => {
    passes('agent/getAuthenticatedExtendedCard', undefined);
  });
});
