// The HTTP+JSON binding's route table and request mapping, mounted on a real Fastify router (in
// process, no socket): every route of the 1.0 binding, with and without a tenant, matches the
// operation it names, and path, query and body become the neutral request, or a 400 naming the
// field in google.rpc.Status form.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { RestRequestMalformedError, fromRestErrorBody } from '@a2a-js/sdk/errors';
import { A2A_REST_PATH, decodeRestRequest, REST_ROUTES } from '../../src/a2a/codec/rest.js';
import { restError } from '../../src/a2a/codec/error-forms.js';
import { toA2AError } from '../../src/a2a/errors.js';
import { encodePageToken } from '../../src/a2a/page-token.js';

let app: FastifyInstance;

before(async () => {
  app = Fastify();
  for (const route of REST_ROUTES) {
    app.route({
      method: route.method,
      url: A2A_REST_PATH + route.path,
      handler: async (req, reply) => {
        try {
          const request = decodeRestRequest(route.operation, {
            params: req.params as Record<string, string>,
            query: req.query as Record<string, unknown>,
            body: req.body,
          });
          return { operation: route.operation, status: route.status, request };
        } catch (e) {
          const { httpStatus, body } = restError(toA2AError(e));
          return reply.code(httpStatus).send(body);
        }
      },
    });
  }
  await app.ready();
});

after(() => app.close());

async function call(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) {
  const res = await app.inject({
    method,
    url: A2A_REST_PATH + path,
    ...(body === undefined ? {} : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.statusCode, json: res.json() as Record<string, any> };
}

async function ok(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) {
  const res = await call(method, path, body);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  return res.json as { operation: string; status: number; request: Record<string, unknown> };
}

/** A 400 whose google.rpc.Status names `message`, read back by the official SDK as malformed. */
async function bad(method: 'GET' | 'POST' | 'DELETE', path: string, message: string, body?: unknown) {
  const res = await call(method, path, body);
  assert.equal(res.status, 400, JSON.stringify(res.json));
  assert.equal(res.json.error.code, 400);
  assert.equal(res.json.error.status, 'INVALID_ARGUMENT');
  assert.equal(res.json.error.message, message);
  assert.equal(res.json.error.details[0].reason, 'INVALID_PARAMS');
  const sdkError = fromRestErrorBody(res.json.error, { statusCode: res.status });
  assert.ok(sdkError instanceof RestRequestMalformedError, sdkError.name);
  return res.json.error;
}

const message = { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }] };

describe('every route of the binding, with and without a tenant', () => {
  const cases: Array<[method: 'GET' | 'POST' | 'DELETE', path: string, operation: string, body?: unknown]> = [
    ['POST', '/message:send', 'send', { message }],
    ['POST', '/message:stream', 'stream', { message }],
    ['GET', '/tasks/run_1', 'get'],
    ['GET', '/tasks', 'list'],
    ['POST', '/tasks/run_1:cancel', 'cancel'],
    ['GET', '/tasks/run_1:subscribe', 'subscribe'],
    ['POST', '/tasks/run_1:subscribe', 'subscribe'],
    ['POST', '/tasks/run_1/pushNotificationConfigs', 'push.create', { url: 'https://hooks.example.com' }],
    ['GET', '/tasks/run_1/pushNotificationConfigs', 'push.list'],
    ['GET', '/tasks/run_1/pushNotificationConfigs/cfg1', 'push.get'],
    ['DELETE', '/tasks/run_1/pushNotificationConfigs/cfg1', 'push.delete'],
    ['GET', '/extendedAgentCard', 'card.extended'],
  ];
  for (const [method, path, operation, body] of cases) {
    test(`${method} ${path} → ${operation}`, async () => {
      const plain = await ok(method, path, body);
      assert.equal(plain.operation, operation);
      assert.equal(plain.request.tenant, undefined);
      const tenanted = await ok(method, `/acme${path}`, body);
      assert.equal(tenanted.operation, operation);
      assert.equal(tenanted.request.tenant, 'acme');
    });
  }

  test('success statuses: 201 for a created config, 204 for a delete, else 200', async () => {
    assert.equal((await ok('POST', '/tasks/t/pushNotificationConfigs', { url: 'https://h.example.com' })).status, 201);
    assert.equal((await ok('DELETE', '/tasks/t/pushNotificationConfigs/c')).status, 204);
    assert.equal((await ok('GET', '/tasks/t')).status, 200);
  });

  test('a verb the binding does not have is no route', async () => {
    assert.equal((await call('POST', '/tasks/run_1:bogus')).status, 404);
    assert.equal((await call('GET', '/tasks/run_1:cancel')).status, 404);
    assert.equal((await call('PUT' as 'GET', '/tasks/run_1')).status, 404);
  });
});

describe('path, query and body → the neutral request', () => {
  test('send: the body is the SendMessageRequest', async () => {
    const { request } = await ok('POST', '/message:send', {
      message: { ...message, contextId: 'ctx_1' },
      configuration: { returnImmediately: true, historyLength: 0 },
      metadata: { skillId: 'triage' },
    });
    assert.deepEqual(request, {
      message: { messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }], contextId: 'ctx_1' },
      configuration: { blocking: false, historyLength: 0 },
      metadata: { skillId: 'triage' },
    });
  });

  test('GetTask: id from the path, historyLength from the query', async () => {
    assert.deepEqual((await ok('GET', '/tasks/run_1?historyLength=3')).request, { id: 'run_1', historyLength: 3 });
    assert.deepEqual((await ok('GET', '/tasks/run%201')).request, { id: 'run 1' });
  });

  test('ListTasks: every filter from the query', async () => {
    const token = encodePageToken({ timestamp: '2026-06-13T19:00:00.000Z', taskId: 'run_9' });
    const q =
      '?contextId=ctx_1&status=TASK_STATE_INPUT_REQUIRED&pageSize=10&pageToken=' +
      token +
      '&historyLength=0&statusTimestampAfter=2026-06-13T19%3A00%3A00Z&includeArtifacts=true&unknown=1';
    assert.deepEqual((await ok('GET', `/tasks${q}`)).request, {
      contextId: 'ctx_1',
      state: 'input-required',
      statusTimestampAfter: '2026-06-13T19:00:00.000Z',
      pageSize: 10,
      after: { timestamp: '2026-06-13T19:00:00.000Z', taskId: 'run_9' },
      historyLength: 0,
      includeArtifacts: true,
    });
    // The binding's own example spells the state the 0.3 way; an empty parameter is no filter.
    assert.equal((await ok('GET', '/tasks?status=working')).request.state, 'working');
    assert.deepEqual((await ok('GET', '/tasks?contextId=&pageSize=')).request, {
      pageSize: 50,
      includeArtifacts: false,
    });
  });

  test('cancel: with no body, or the CancelTaskRequest body', async () => {
    assert.deepEqual((await ok('POST', '/tasks/run_1:cancel')).request, { id: 'run_1' });
    assert.deepEqual((await ok('POST', '/tasks/run_1:cancel', { metadata: { why: 'x' } })).request, {
      id: 'run_1',
      metadata: { why: 'x' },
    });
    assert.deepEqual((await ok('POST', '/tasks/run_1:cancel', { id: 'run_1' })).request, { id: 'run_1' });
  });

  test('push configs: the config body, the ids from the path', async () => {
    const created = await ok('POST', '/tasks/run_1/pushNotificationConfigs', {
      taskId: 'run_1',
      url: 'https://hooks.example.com',
      token: 't',
      authentication: { scheme: 'Bearer', credentials: 'c' },
    });
    assert.deepEqual(created.request, {
      taskId: 'run_1',
      config: {
        url: 'https://hooks.example.com',
        token: 't',
        authentication: { schemes: ['Bearer'], credentials: 'c' },
      },
    });
    assert.deepEqual((await ok('GET', '/tasks/run_1/pushNotificationConfigs?pageSize=5&pageToken=x')).request, {
      taskId: 'run_1',
      pageSize: 5,
      pageToken: 'x',
    });
    assert.deepEqual((await ok('GET', '/acme/tasks/run_1/pushNotificationConfigs/cfg1')).request, {
      tenant: 'acme',
      taskId: 'run_1',
      id: 'cfg1',
    });
  });
});

describe('malformed REST requests: 400 INVALID_ARGUMENT naming the field', () => {
  test('query parameters of the wrong type, out of range, or repeated', async () => {
    await bad('GET', '/tasks?pageSize=abc', 'pageSize: must be an integer from 1 to 100');
    await bad('GET', '/tasks?pageSize=0', 'pageSize: must be an integer from 1 to 100');
    await bad('GET', '/tasks?pageSize=101', 'pageSize: must be an integer from 1 to 100');
    await bad('GET', '/tasks?pageSize=99999999999999999999', 'pageSize: must be an integer from 1 to 100');
    await bad('GET', '/tasks?pageSize=1.5', 'pageSize: must be an integer from 1 to 100');
    await bad('GET', '/tasks?pageSize=1&pageSize=2', 'pageSize: must be given once');
    await bad('GET', '/tasks?includeArtifacts=yes', 'includeArtifacts: must be a boolean');
    await bad('GET', '/tasks?status=TASK_STATE_BOGUS', 'status: must be a TaskState name such as "TASK_STATE_WORKING"');
    await bad(
      'GET',
      '/tasks?statusTimestampAfter=yesterday',
      'statusTimestampAfter: must be an ISO 8601 date-time with a time zone, e.g. "2026-01-31T09:00:00Z"',
    );
    const error = await bad(
      'GET',
      '/tasks?pageToken=bad!',
      'pageToken: is not a page token from this server; pass nextPageToken unchanged',
    );
    assert.deepEqual(error.details[1], {
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'pageToken', description: 'is not a page token from this server' }],
    });
    await bad('GET', '/tasks/run_1?historyLength=-1', 'historyLength: must be an integer >= 0');
    await bad('GET', '/tasks/run_1/pushNotificationConfigs?pageSize=500', 'pageSize: must be an integer from 0 to 100');
  });

  test('bodies: missing, not an object, or contradicting the path', async () => {
    await bad('POST', '/message:send', 'message: must be an object');
    await bad('POST', '/message:send', 'request body: must be a JSON object', [message]);
    await bad('POST', '/message:send', 'message.parts[0]: must be a part with exactly one of text, raw, url or data', {
      message: { ...message, parts: [{ text: 'a', url: 'https://x.example.com' }] },
    });
    await bad('POST', '/acme/message:send', 'tenant: the body says "other" but the path says "acme"', {
      tenant: 'other',
      message,
    });
    await bad('POST', '/tasks/run_1:cancel', 'id: the body says "run_2" but the path says "run_1"', { id: 'run_2' });
    await bad(
      'POST',
      '/tasks/run_1/pushNotificationConfigs',
      'taskId: the body says "run_2" but the path says "run_1"',
      {
        taskId: 'run_2',
        url: 'https://h.example.com',
      },
    );
    await bad('POST', '/tasks/run_1/pushNotificationConfigs', 'url: must be a non-empty string', { token: 'x' });
  });
});
