// The 1.0 error forms of every code: the JSON-RPC error with google.rpc details in `data`, and the
// HTTP+JSON status with its google.rpc.Status body; both read back by the official SDK (1.3.0) as
// the error class the code stands for, with the HTTP status and status name the SDK's own server
// would use.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as SdkErrors from '@a2a-js/sdk/errors';
import {
  A2AError,
  contentTypeNotSupported,
  extendedCardNotConfigured,
  extensionSupportRequired,
  internal,
  invalidAgentResponse,
  invalidParams,
  invalidRequest,
  methodNotFound,
  parseError,
  pushNotSupported,
  taskNotCancelable,
  taskNotFound,
  unsupportedOperation,
  versionNotSupported,
} from '../../src/a2a/errors.js';
import { JSON_RPC_CODES, jsonRpcErrorV0_3, jsonRpcErrorV1, restError } from '../../src/a2a/codec/error-forms.js';

interface Row {
  err: A2AError;
  reason: string;
  http: number;
  status: string;
  /** The SDK class the error is read back as (undefined: a transport-level error). */
  sdk?: string;
}

const rows: Row[] = [
  { err: taskNotFound('run_x'), reason: 'TASK_NOT_FOUND', http: 404, status: 'NOT_FOUND', sdk: 'TaskNotFoundError' },
  {
    err: taskNotCancelable('run_x'),
    reason: 'TASK_NOT_CANCELABLE',
    http: 400,
    status: 'FAILED_PRECONDITION',
    sdk: 'TaskNotCancelableError',
  },
  {
    err: pushNotSupported(),
    reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
    http: 400,
    status: 'FAILED_PRECONDITION',
    sdk: 'PushNotificationNotSupportedError',
  },
  {
    err: unsupportedOperation('task run_x is completed'),
    reason: 'UNSUPPORTED_OPERATION',
    http: 400,
    status: 'FAILED_PRECONDITION',
    sdk: 'UnsupportedOperationError',
  },
  {
    err: contentTypeNotSupported('text/csv'),
    reason: 'CONTENT_TYPE_NOT_SUPPORTED',
    http: 400,
    status: 'INVALID_ARGUMENT',
    sdk: 'ContentTypeNotSupportedError',
  },
  {
    err: invalidAgentResponse('peer said nonsense'),
    reason: 'INVALID_AGENT_RESPONSE',
    http: 500,
    status: 'INTERNAL',
    sdk: 'InvalidAgentResponseError',
  },
  {
    err: extendedCardNotConfigured(),
    reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
    http: 400,
    status: 'FAILED_PRECONDITION',
    sdk: 'ExtendedAgentCardNotConfiguredError',
  },
  {
    err: extensionSupportRequired(['https://ext.example.com/a', 'https://ext.example.com/b']),
    reason: 'EXTENSION_SUPPORT_REQUIRED',
    http: 400,
    status: 'FAILED_PRECONDITION',
    sdk: 'ExtensionSupportRequiredError',
  },
  {
    err: versionNotSupported('2.0', ['0.3', '1.0']),
    reason: 'VERSION_NOT_SUPPORTED',
    http: 400,
    status: 'FAILED_PRECONDITION',
    sdk: 'VersionNotSupportedError',
  },
  {
    err: invalidParams('params.id: must be a non-empty string'),
    reason: 'INVALID_PARAMS',
    http: 400,
    status: 'INVALID_ARGUMENT',
    sdk: 'RequestMalformedError',
  },
  { err: parseError(), reason: 'PARSE_ERROR', http: 400, status: 'INVALID_ARGUMENT' },
  {
    err: invalidRequest('jsonrpc must be exactly "2.0"'),
    reason: 'INVALID_REQUEST',
    http: 400,
    status: 'INVALID_ARGUMENT',
  },
  { err: methodNotFound('Nope'), reason: 'METHOD_NOT_FOUND', http: 404, status: 'NOT_FOUND' },
  { err: internal(), reason: 'INTERNAL_ERROR', http: 500, status: 'INTERNAL' },
];

describe('1.0 JSON-RPC error form', () => {
  for (const { err, reason, sdk } of rows) {
    test(`${JSON_RPC_CODES[err.kind]} → data [ErrorInfo ${reason}]`, () => {
      const wire = jsonRpcErrorV1(err);
      assert.equal(wire.code, JSON_RPC_CODES[err.kind]);
      assert.equal(wire.message, err.message);
      assert.ok(Array.isArray(wire.data));
      const [info] = wire.data as Array<Record<string, unknown>>;
      assert.equal(info?.['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
      assert.equal(info?.reason, reason);
      assert.equal(info?.domain, 'a2a-protocol.org');
      // The SDK client maps it by code to the same error the SDK server would have thrown.
      const read = SdkErrors.fromJsonRpcErrorResponse({ jsonrpc: '2.0', id: 1, error: wire as never });
      if (sdk) assert.equal(read.name, sdk);
      assert.equal(read.message, err.message);
    });
  }

  test('ErrorInfo metadata carries the context (string values only)', () => {
    const data = (e: A2AError) => jsonRpcErrorV1(e).data as Array<Record<string, unknown>>;
    assert.deepEqual(data(taskNotFound('run_x'))[0]?.metadata, { taskId: 'run_x' });
    assert.deepEqual(data(versionNotSupported('2.0', ['0.3', '1.0']))[0]?.metadata, {
      requestedVersion: '2.0',
      supportedVersions: '0.3,1.0',
    });
    assert.equal(data(pushNotSupported())[0]?.metadata, undefined);
  });

  test('-32602 with validator data adds google.rpc.BadRequest; other 0.3 data is not carried', () => {
    const fields = invalidParams('params.message.parts[0]: must be a part', {
      errors: [
        { path: 'params.message.parts[0]', message: 'must be a part' },
        { path: 'params', message: 'is required' },
        { bogus: true },
      ],
    });
    assert.deepEqual((jsonRpcErrorV1(fields).data as unknown[])[1], {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [
        { field: 'message.parts[0]', description: 'must be a part' },
        { field: '', description: 'is required' },
      ],
    });
    const skills = invalidParams("unknown skill 'x'; available: a, b", { skills: ['a', 'b'] });
    assert.equal((jsonRpcErrorV1(skills).data as unknown[]).length, 1);
  });

  test('the 0.3 form is unchanged by the 1.0 context', () => {
    assert.deepEqual(jsonRpcErrorV0_3(taskNotFound('run_x')), { code: -32001, message: 'Task not found: run_x' });
    assert.deepEqual(jsonRpcErrorV0_3(versionNotSupported('2.0', ['0.3'])), {
      code: -32009,
      message: "A2A version '2.0' is not supported; supported versions: 0.3",
    });
  });
});

describe('1.0 HTTP+JSON error form', () => {
  for (const { err, reason, http, status, sdk } of rows) {
    test(`${JSON_RPC_CODES[err.kind]} → HTTP ${http} ${status}`, () => {
      const { httpStatus, body } = restError(err);
      assert.equal(httpStatus, http);
      assert.deepEqual(Object.keys(body.error), ['code', 'status', 'message', 'details']);
      assert.equal(body.error.code, http);
      assert.equal(body.error.status, status);
      assert.equal(body.error.message, err.message);
      assert.equal(body.error.details[0]?.['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
      assert.equal((body.error.details[0] as { reason: string }).reason, reason);
      const read = SdkErrors.fromRestErrorBody(body.error as never, { statusCode: httpStatus });
      if (!sdk) return;
      // Read back as the right class, and the SDK's server would answer the same status and name.
      assert.equal(read.name, sdk);
      const Cls = (SdkErrors as unknown as Record<string, new (o: { message: string }) => Error>)[sdk] as new (o: {
        message: string;
      }) => Error;
      const theirs = new Cls({ message: err.message });
      assert.equal(SdkErrors.restStatusFor(theirs), http);
      assert.equal(SdkErrors.toRestErrorBody(theirs, http).error.status, status);
    });
  }

  test('a validation error names its fields (REST paths have no params root)', () => {
    const { body } = restError(
      invalidParams('pageSize: must be an integer from 1 to 100', { errors: [{ path: 'pageSize', message: 'x' }] }),
    );
    assert.deepEqual(body.error.details[1], {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'pageSize', description: 'x' }],
    });
  });

  test('an internal error is answered as internal', () => {
    const { httpStatus, body } = restError(new A2AError('internal', 'odd'));
    assert.equal(httpStatus, 500);
    assert.equal(body.error.status, 'INTERNAL');
  });
});
