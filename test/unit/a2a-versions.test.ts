// Version negotiation (A2A-Version header or query parameter) and the JSON-RPC method tables.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JSON_RPC_CODES } from '../../src/a2a/codec/error-forms.js';
import { A2AError } from '../../src/a2a/errors.js';
import { CODECS } from '../../src/a2a/codec/index.js';
import { cardVersion, jsonRpcMethod, methodName, requestedVersion, SERVED_VERSIONS } from '../../src/a2a/versions.js';

const code = (fn: () => unknown): number | undefined => {
  try {
    fn();
    return undefined;
  } catch (e) {
    assert.ok(e instanceof A2AError);
    return JSON_RPC_CODES[e.kind];
  }
};

describe('requestedVersion', () => {
  test('absent or empty means 0.3', () => {
    assert.equal(requestedVersion(undefined), '0.3');
    assert.equal(requestedVersion(''), '0.3');
    assert.equal(requestedVersion('', ''), '0.3');
  });

  test('Major.Minor; a patch number is ignored; surrounding blanks too', () => {
    for (const v of ['1.0', '1.0.0', '1.0.1', ' 1.0 ', '01.00']) assert.equal(requestedVersion(v), '1.0', v);
    for (const v of ['0.3', '0.3.0', '0.3.14']) assert.equal(requestedVersion(v), '0.3', v);
  });

  test('the header wins over the query parameter; the query parameter alone counts', () => {
    assert.equal(requestedVersion('0.3', '1.0'), '0.3');
    assert.equal(requestedVersion(undefined, '1.0'), '1.0');
    assert.equal(requestedVersion('', '1.0'), '1.0');
  });

  test('anything else is -32009 naming what was asked and what is served', () => {
    for (const v of ['2.0', '1.1', '0.2', '1', 'abc', '1.0, 0.3', ['1.0', '1.0'], '1.0.0.0', '-1.0', 'v1.0', 7]) {
      assert.equal(
        code(() => requestedVersion(v)),
        -32009,
        String(v),
      );
    }
    assert.throws(
      () => requestedVersion('2.0'),
      (e: unknown) =>
        e instanceof A2AError &&
        e.message === "A2A version '2.0' is not supported; supported versions: 0.3, 1.0" &&
        e.info?.requestedVersion === '2.0',
    );
    assert.equal(
      code(() => requestedVersion(undefined, '9.9')),
      -32009,
    );
  });
});

describe('cardVersion: discovery never fails', () => {
  test('no version or 0.x → the 0.3 (hybrid) card; 1.x or anything else → the 1.0 card', () => {
    assert.equal(cardVersion(undefined), '0.3');
    assert.equal(cardVersion(''), '0.3');
    assert.equal(cardVersion('0.3'), '0.3');
    assert.equal(cardVersion('0.2'), '0.3');
    assert.equal(cardVersion('1.0'), '1.0');
    assert.equal(cardVersion(undefined, '1.0'), '1.0');
    assert.equal(cardVersion('1.5'), '1.0');
    assert.equal(cardVersion('banana'), '1.0');
  });
});

const V1 = [
  ['SendMessage', 'send', false],
  ['SendStreamingMessage', 'stream', true],
  ['GetTask', 'get', false],
  ['ListTasks', 'list', false],
  ['CancelTask', 'cancel', false],
  ['SubscribeToTask', 'subscribe', true],
  ['CreateTaskPushNotificationConfig', 'push.create', false],
  ['GetTaskPushNotificationConfig', 'push.get', false],
  ['ListTaskPushNotificationConfigs', 'push.list', false],
  ['DeleteTaskPushNotificationConfig', 'push.delete', false],
  ['GetExtendedAgentCard', 'card.extended', false],
] as const;

const V03 = [
  ['message/send', 'send', false],
  ['message/stream', 'stream', true],
  ['tasks/get', 'get', false],
  ['tasks/cancel', 'cancel', false],
  ['tasks/resubscribe', 'subscribe', true],
  ['tasks/pushNotificationConfig/set', 'push.create', false],
  ['tasks/pushNotificationConfig/get', 'push.get', false],
  ['tasks/pushNotificationConfig/list', 'push.list', false],
  ['tasks/pushNotificationConfig/delete', 'push.delete', false],
  ['agent/getAuthenticatedExtendedCard', 'card.extended', false],
] as const;

describe('jsonRpcMethod: PascalCase is 1.0, slash names 0.3', () => {
  test('every 1.0 method under A2A-Version 1.0', () => {
    for (const [method, operation, streaming] of V1) {
      assert.deepEqual(jsonRpcMethod(method, '1.0'), { version: '1.0', operation, streaming });
      assert.equal(methodName('1.0', operation), method);
    }
  });

  test('every 0.3 method without a version', () => {
    for (const [method, operation, streaming] of V03) {
      assert.deepEqual(jsonRpcMethod(method, '0.3'), { version: '0.3', operation, streaming });
      assert.equal(methodName('0.3', operation), method);
    }
    assert.equal(methodName('0.3', 'list'), undefined);
  });

  test('a 1.0 method without A2A-Version: 1.0 is -32009 telling the caller to send it', () => {
    for (const [method] of V1)
      assert.equal(
        code(() => jsonRpcMethod(method, '0.3')),
        -32009,
        method,
      );
    assert.throws(
      () => jsonRpcMethod('SendMessage', '0.3'),
      (e: unknown) =>
        e instanceof A2AError &&
        e.message ===
          'SendMessage is an A2A 1.0 method but the request asks for A2A 0.3 (no A2A-Version header means 0.3): ' +
            'send A2A-Version: 1.0',
    );
  });

  test('a 0.3 method under A2A-Version 1.0 is -32009 naming the 1.0 method', () => {
    for (const [method] of V03)
      assert.equal(
        code(() => jsonRpcMethod(method, '1.0')),
        -32009,
        method,
      );
    assert.throws(
      () => jsonRpcMethod('tasks/get', '1.0'),
      (e: unknown) =>
        e instanceof A2AError &&
        e.message ===
          'tasks/get is an A2A 0.3 method but the request asks for A2A 1.0: send it without A2A-Version, ' +
            'or use the 1.0 method GetTask',
    );
  });

  test('a name in neither table is -32601, whatever the version', () => {
    for (const method of [
      'tasks/list',
      'sendMessage',
      'SendMessage ',
      'message/Send',
      'constructor',
      '__proto__',
      'toString',
    ]) {
      assert.equal(
        code(() => jsonRpcMethod(method, '0.3')),
        -32601,
        method,
      );
      assert.equal(
        code(() => jsonRpcMethod(method, '1.0')),
        -32601,
        method,
      );
    }
  });
});

describe('CODECS', () => {
  test('every served version has the codec of that version', () => {
    for (const v of SERVED_VERSIONS) assert.equal(CODECS[v].version, v);
  });
});
