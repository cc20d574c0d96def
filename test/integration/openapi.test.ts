// The OpenAPI document (spec/libraries.md §10): served at GET /v1/openapi.json, lint-clean under
// Redocly's `recommended` rules, covering exactly the routes the real host registers, built from
// the schemas the routes validate with, and describing what the live host really answers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildOpenApi, OPENAPI_PATH, openapiRoutes } from '../../src/http/openapi.js';
import { RunListQuery } from '../../src/http/routes/run-list.js';
import { CancelBody, CreateRunBody, PollQuery, ResolveBody } from '../../src/http/routes/runs.js';
import { bearer, type Json, REPO_ROOT, startTestHost, type TestHost } from '../support/host.js';

const addFormats = addFormatsModule.default;
const run = promisify(execFile);
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const plain = (v: unknown): Json => JSON.parse(JSON.stringify(v));
const readSchema = (file: string): Json => JSON.parse(readFileSync(join(REPO_ROOT, 'schemas', file), 'utf8'));

/** Every operation of the document as "METHOD /path". */
function operations(doc: Json): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const m of METHODS) if (item[m]) out.push(`${m.toUpperCase()} ${path}`);
  }
  return out.sort();
}

const opOf = (doc: Json, key: string): Json => {
  const [method, path] = key.split(' ') as [string, string];
  return doc.paths[path][method.toLowerCase()];
};

/**
 * The routes a Fastify instance registered, from `printRoutes({commonPrefix: false})`: each line is
 * `<indent>├── <segment> (METHODS)` with 4 characters of indent per level below its parent.
 * HEAD routes are Fastify's automatic twins of GET routes.
 */
function registeredRoutes(app: FastifyInstance): string[] {
  const out = new Set<string>();
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!m) continue;
    stack.length = (m[1] ?? '').length / 4;
    stack.push(m[2] ?? '');
    const path = stack.join('').replace(/:(\w+)/g, '{$1}');
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim())) {
      if (method && method !== 'HEAD') out.add(`${method} ${path}`);
    }
  }
  return [...out].sort();
}

/**
 * Redocly's resolver takes every `#/…` $ref against the OpenAPI document, ignoring the `$id` of
 * an embedded JSON Schema (Redocly/redocly-cli#1233), so the published schemas' own `#/$defs/X`
 * refs look unresolved to it although they are valid 2020-12 (Ajv resolves them, see below);
 * its example validator, on the other hand, does honour `$id`. For linting only, lint the
 * equivalent document without the embedded resources' `$id` and with their internal refs rebased
 * onto document pointers; the served document keeps the published schemas unchanged.
 */
function scopeIdRefs(doc: Json): { doc: Json; rewritten: number } {
  const copy = plain(doc);
  let rewritten = 0;
  const walk = (node: unknown, base: string, root: boolean): void => {
    if (Array.isArray(node)) {
      for (const n of node) walk(n, base, false);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const obj = node as Json;
    if (!root && typeof obj.$id === 'string') return; // another resource: its own scope (none today)
    if (typeof obj.$ref === 'string' && obj.$ref.startsWith('#')) {
      obj.$ref = base + obj.$ref.slice(1);
      rewritten++;
    }
    for (const [k, v] of Object.entries(obj)) if (k !== '$ref') walk(v, base, false);
  };
  for (const [name, schema] of Object.entries(copy.components.schemas as Record<string, Json>)) {
    if (typeof schema.$id !== 'string') continue;
    walk(schema, `#/components/schemas/${name}`, true);
    delete schema.$id;
  }
  return { doc: copy, rewritten };
}

/**
 * Rules of `recommended` that may report, each only inside the given embedded schema. Both misread
 * valid JSON Schema in the published workflow-definition schema, which is embedded unchanged: it
 * tags `oneOf` branches with `const` and uses Ajv's `discriminator` over them (Redocly wants
 * OpenAPI-style `$ref` branches), and it puts `required` in `if/then/else` beside the
 * `properties` that declare those fields (Redocly looks for them in the branch).
 */
const ALLOWED: Array<{ rule: string; under: string }> = [
  { rule: 'no-illogical-composition-keywords', under: '#/components/schemas/WorkflowDefinition/' },
  { rule: 'no-required-schema-properties-undefined', under: '#/components/schemas/WorkflowDefinition/' },
];

/**
 * `recommended`, except operation-4xx-response: the six public routes (discovery, the two agent
 * cards, this document, health, metrics) take no input and no credentials, so they have no 4xx to
 * declare. The test's own check below is stricter for every other operation.
 */
const REDOCLY_CONFIG = [
  'extends:',
  '  - recommended',
  'telemetry: off',
  'rules:',
  '  operation-4xx-response: off',
  '',
].join('\n');

interface LintProblem {
  ruleId: string;
  severity: string;
  message: string;
  location: Array<{ pointer?: string }>;
}

async function redoclyLint(doc: Json): Promise<{ totals: Json; problems: LintProblem[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-openapi-'));
  try {
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc, null, 2));
    writeFileSync(join(dir, 'redocly.yaml'), REDOCLY_CONFIG);
    const cli = join(REPO_ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    // Exit code 1 means "problems found": read the JSON report either way.
    const out = await run(
      process.execPath,
      [cli, 'lint', 'openapi.json', '--config', 'redocly.yaml', '--format', 'json'],
      {
        cwd: dir,
        env,
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024,
      },
    ).catch((err: { stdout?: string; stderr?: string; code?: number }) => {
      if (err.code === 1 && err.stdout) return { stdout: err.stdout, stderr: err.stderr ?? '' };
      throw new Error(`redocly lint failed to run (${String(err.code)}): ${err.stderr ?? ''}`);
    });
    return JSON.parse(out.stdout) as { totals: Json; problems: LintProblem[] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Validators for the document's component schemas, resolved the JSON Schema way (Ajv 2020). */
function componentValidators(doc: Json): (name: string) => ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'urn:handoff:openapi', components: doc.components });
  return (name) => {
    const v = ajv.getSchema(`urn:handoff:openapi#/components/schemas/${name}`);
    assert.ok(v, `no component schema ${name}`);
    return v;
  };
}

describe('OpenAPI document', () => {
  let served: Json;

  before(async () => {
    const app = Fastify();
    openapiRoutes(app);
    const res = await app.inject({ method: 'GET', url: OPENAPI_PATH });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    served = res.json();
    await app.close();
  });

  it('is served at GET /v1/openapi.json as the pure builder makes it', () => {
    assert.deepEqual(served, buildOpenApi() as Json);
    assert.equal(served.openapi, '3.1.0');
    assert.equal(served.jsonSchemaDialect, 'https://json-schema.org/draft/2020-12/schema');
    assert.equal(
      (buildOpenApi({ serverUrl: 'https://h.example.com' }) as Json).servers[0].url,
      'https://h.example.com',
    );
    assert.equal(served.servers[0].url, '/');
  });

  it('lints clean with @redocly/cli (recommended)', async () => {
    const { doc, rewritten } = scopeIdRefs(served);
    assert.ok(rewritten >= 1, 'the published A2ATaskState schema refs its own $defs');
    const report = await redoclyLint(doc);
    const unexpected = report.problems.filter(
      (p) => !ALLOWED.some((a) => a.rule === p.ruleId && (p.location[0]?.pointer ?? '').startsWith(a.under)),
    );
    assert.deepEqual(
      unexpected.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`),
      [],
      `totals ${JSON.stringify(report.totals)}`,
    );
  });

  it('embeds the published schemas unchanged, and their $id-scoped refs resolve', () => {
    const schemas = served.components.schemas;
    assert.deepEqual(schemas.A2ATaskState, readSchema('a2a-task-state.schema.json'));
    assert.deepEqual(schemas.A2ACapability, readSchema('capabilities-a2a.schema.json'));
    assert.deepEqual(schemas.WorkflowDefinition, readSchema('workflow-definition.schema.json'));
    const get = componentValidators(served);
    const state = get('A2ATaskState');
    // pushConfig goes through the schema's own `#/$defs/PushConfig`, resolved against its $id.
    assert.ok(
      state({
        taskId: 't',
        runId: 't',
        state: 'working',
        updatedAt: '2026-01-01T00:00:00Z',
        pushConfig: { url: 'https://a.example/p' },
      }),
    );
    assert.ok(
      !state({
        taskId: 't',
        runId: 't',
        state: 'working',
        updatedAt: '2026-01-01T00:00:00Z',
        pushConfig: { url: 'https://a.example/p', x: 1 },
      }),
    );
    assert.deepEqual(served.paths['/v1/a2a/tasks/{taskId}'].get.responses['200'].content['application/json'].schema, {
      $ref: '#/components/schemas/A2ATaskState',
    });
  });

  it('uses the TypeBox schemas the routes validate with', () => {
    const body = (key: string): Json => {
      const schema = opOf(served, key).requestBody.content['application/json'].schema;
      return served.components.schemas[schema.$ref.split('/').pop()];
    };
    assert.deepEqual(body('POST /v1/runs'), plain(CreateRunBody));
    assert.deepEqual(body('POST /v1/runs/{id}/cancel'), plain(CancelBody));
    assert.deepEqual(body('POST /v1/runs/{id}/interrupts/{nodeId}'), plain(ResolveBody));
    const query = (key: string) =>
      Object.fromEntries(
        (opOf(served, key).parameters as Json[]).filter((p) => p.in === 'query').map((p) => [p.name, p.schema]),
      );
    assert.deepEqual(query('GET /v1/runs/{id}/events/poll'), plain(PollQuery).properties);
    assert.deepEqual(query('GET /v1/runs'), plain(RunListQuery).properties);
  });

  it('describes JSON-RPC per method, errors included, on HTTP 200', () => {
    const rpc = served.paths['/v1/a2a'].post;
    const variants = served.components.schemas.JsonRpcRequest.oneOf as Json[];
    const methods = variants.map((v) => v.properties.method.const);
    for (const m of ['message/send', 'tasks/get', 'tasks/cancel', 'agent/getAuthenticatedExtendedCard'])
      assert.ok(methods.includes(m), m);
    assert.equal(new Set(methods).size, methods.length);
    assert.deepEqual(rpc.responses['200'].content['application/json'].schema.oneOf, [
      { $ref: '#/components/schemas/JsonRpcSuccessResponse' },
      { $ref: '#/components/schemas/JsonRpcErrorResponse' },
    ]);
    assert.match(rpc.description, /HTTP 200/);
  });

  it('declares the errors each operation can answer', () => {
    for (const key of operations(served)) {
      const op = opOf(served, key);
      const codes = Object.keys(op.responses);
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      if (!isPublic) assert.ok(codes.includes('401'), `${key}: 401`);
      if (op.requestBody) for (const c of ['413', '415']) assert.ok(codes.includes(c), `${key}: ${c}`);
      if (op.requestBody && key !== 'POST /v1/a2a') assert.ok(codes.includes('400'), `${key}: 400`);
      if (/\{id\}|\{taskId\}/.test(key)) assert.ok(codes.includes('404'), `${key}: 404`);
    }
  });
});

describe('OpenAPI document against the real host', () => {
  const KEY = 'key-openapi-1';
  const auth = bearer(KEY);
  let t: TestHost;
  let doc: Json;
  let validate: (name: string) => ValidateFunction;

  before(async () => {
    t = await startTestHost({ apiKeys: `${KEY}=t1:alice` });
    // The lead wires the route into buildApp; until then (and harmlessly after) mount it here.
    if (!t.app.hasRoute({ method: 'GET', url: OPENAPI_PATH })) openapiRoutes(t.app);
    await t.app.ready();
    const res = await t.get(OPENAPI_PATH);
    assert.equal(res.status, 200, res.text);
    doc = res.body;
    validate = componentValidators(doc);
  });
  after(async () => {
    await t?.close();
  });

  /** Assert `body` fits the component schema `name`, listing Ajv's errors otherwise. */
  const fits = (name: string, body: unknown): void => {
    const v = validate(name);
    assert.ok(v(body), `${name}: ${JSON.stringify(v.errors)}\n${JSON.stringify(body)}`);
  };
  const schemaOf = (key: string, status: string): string => {
    const s = opOf(doc, key).responses[status]?.content?.['application/json']?.schema ?? {};
    const r = (s.$ref ?? '') as string;
    assert.ok(r, `${key} ${status}: no $ref schema`);
    return r.split('/').pop() as string;
  };

  it('lists exactly the routes the host registers', () => {
    // The A2A HTTP+JSON binding is specified by A2A itself (docs/protocol/a2a.md#v10-served), like the
    // JSON-RPC methods behind POST /v1/a2a; this document does not repeat its routes.
    const registered = registeredRoutes(t.app).filter((r) => !r.includes(' /v1/a2a/rest/'));
    assert.ok(
      registered.includes('POST /v1/runs') && registered.includes('GET /v1/runs/{id}/events/poll'),
      registered.join('\n'),
    );
    assert.deepEqual(operations(doc), registered);
    for (const key of operations(doc)) {
      const [method, path] = key.split(' ') as [string, string];
      assert.ok(t.app.hasRoute({ method: method as 'GET', url: path.replace(/\{(\w+)\}/g, ':$1') }), key);
    }
  });

  it('marks as public exactly the routes that answer without a key', async () => {
    for (const key of operations(doc)) {
      const [method, path] = key.split(' ') as [string, string];
      const url = path.replace(/\{\w+\}/g, 'x');
      const res = await t.request(method, url, method === 'POST' ? {} : undefined);
      const op = opOf(doc, key);
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      if (isPublic) assert.notEqual(res.status, 401, key);
      else {
        assert.equal(res.status, 401, key);
        fits('ErrorEnvelope', res.body);
      }
    }
    assert.deepEqual(doc.security, [{ bearer: [] }]);
    assert.deepEqual(doc.components.securitySchemes.bearer.type, 'http');
  });

  it('describes the discovery, card, health and workflow responses', async () => {
    for (const [url, key] of [
      ['/.well-known/openwop', 'GET /.well-known/openwop'],
      ['/.well-known/agent-card.json', 'GET /.well-known/agent-card.json'],
      ['/v1/a2a/agent.json', 'GET /v1/a2a/agent.json'],
      ['/healthz', 'GET /healthz'],
      ['/v1/workflows', 'GET /v1/workflows'],
      ['/v1/workflows/approval', 'GET /v1/workflows/{id}'],
    ] as const) {
      const res = await t.get(url, auth);
      assert.equal(res.status, 200, `${url}: ${res.text}`);
      fits(schemaOf(key, '200'), res.body);
    }
    const missing = await t.get('/v1/workflows/nope', auth);
    assert.equal(missing.status, 404);
    fits('ErrorEnvelope', missing.body);
    const metrics = await t.get('/metrics');
    assert.equal(metrics.status, 200);
    assert.ok(doc.paths['/metrics'].get.responses['200'].content['text/plain']);
  });

  it('describes a run from creation through its approval gate', async () => {
    const created = await t.post(
      '/v1/runs',
      { workflowId: 'approval', inputs: { prompt: 'openapi' } },
      { ...auth, 'idempotency-key': 'openapi-1' },
    );
    assert.equal(created.status, 201, created.text);
    fits(schemaOf('POST /v1/runs', '201'), created.body);
    const replay = await t.post(
      '/v1/runs',
      { workflowId: 'approval', inputs: { prompt: 'openapi' } },
      { ...auth, 'idempotency-key': 'openapi-1' },
    );
    assert.equal(replay.headers['openwop-idempotent-replay'], 'true');
    assert.ok(opOf(doc, 'POST /v1/runs').responses['201'].headers['openwop-Idempotent-Replay']);
    const mismatch = await t.post('/v1/runs', { workflowId: 'echo' }, { ...auth, 'idempotency-key': 'openapi-1' });
    assert.equal(mismatch.status, 409);
    fits('ErrorEnvelope', mismatch.body);

    const runId = created.body.runId as string;
    const waiting = await t.waitForStatus(runId, ['waiting-approval'], auth);
    assert.ok(waiting.interrupt, 'the snapshot carries the open interrupt');
    fits(schemaOf('GET /v1/runs/{id}', '200'), waiting);
    const listed = await t.get('/v1/runs?status=waiting-approval', auth);
    assert.equal(listed.status, 200, listed.text);
    fits(schemaOf('GET /v1/runs', '200'), listed.body);
    assert.ok(listed.body.runs.some((r: Json) => r.runId === runId && r.interrupt?.nodeId === waiting.currentNodeId));
    const poll = await t.get(`/v1/runs/${runId}/events/poll?lastSequence=-1&timeout=0`, auth);
    fits(schemaOf('GET /v1/runs/{id}/events/poll', '200'), poll.body);

    const resolved = await t.post(
      `/v1/runs/${runId}/interrupts/${waiting.currentNodeId}`,
      { resumeValue: { action: 'accept' } },
      auth,
    );
    assert.equal(resolved.status, 200, resolved.text);
    fits(schemaOf('POST /v1/runs/{id}/interrupts/{nodeId}', '200'), resolved.body);
    const again = await t.post(
      `/v1/runs/${runId}/interrupts/${waiting.currentNodeId}`,
      { resumeValue: { action: 'accept' } },
      auth,
    );
    assert.ok(
      Object.keys(opOf(doc, 'POST /v1/runs/{id}/interrupts/{nodeId}').responses).includes(String(again.status)),
      `${again.status}`,
    );
    fits('ErrorEnvelope', again.body);
  });

  it('describes cancel, its 409 and the 404 envelope', async () => {
    const created = await t.post('/v1/runs', { workflowId: 'approval', inputs: { prompt: 'cancel me' } }, auth);
    const runId = created.body.runId as string;
    const cancelled = await t.post(`/v1/runs/${runId}/cancel`, { reason: 'openapi' }, auth);
    assert.equal(cancelled.status, 200, cancelled.text);
    fits(schemaOf('POST /v1/runs/{id}/cancel', '200'), cancelled.body);
    await t.waitForStatus(runId, ['cancelled'], auth);
    const twice = await t.post(`/v1/runs/${runId}/cancel`, {}, auth);
    assert.equal(twice.status, 409);
    assert.equal(twice.body.error, 'run_terminal');
    fits('ErrorEnvelope', twice.body);
    const unknown = await t.get('/v1/runs/run_unknown', auth);
    assert.equal(unknown.status, 404);
    fits('ErrorEnvelope', unknown.body);
  });

  it('describes the A2A JSON-RPC answers and the durable task state', async () => {
    const send = {
      jsonrpc: '2.0',
      id: 'oa-1',
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: 'openapi-msg-1',
          role: 'user',
          parts: [{ kind: 'text', text: 'hello' }],
        },
        configuration: { blocking: false },
      },
    };
    fits('JsonRpcRequest', send);
    const sent = await t.post('/v1/a2a', send, auth);
    assert.equal(sent.status, 200, sent.text);
    fits('JsonRpcSuccessResponse', sent.body);
    const taskId = sent.body.result.id as string;

    const state = await t.get(`/v1/a2a/tasks/${taskId}`, auth);
    assert.equal(state.status, 200, state.text);
    fits(schemaOf('GET /v1/a2a/tasks/{taskId}', '200'), state.body);
    const none = await t.get('/v1/a2a/tasks/run_unknown', auth);
    assert.equal(none.status, 404);
    fits('ErrorEnvelope', none.body);

    // JSON-RPC errors are HTTP 200 with an error object.
    for (const body of [
      { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: 'run_unknown' } },
      { jsonrpc: '2.0', id: 3, method: 'no/such' },
      '{not json',
    ]) {
      const res = await t.request('POST', '/v1/a2a', body, { ...auth, 'content-type': 'application/json' });
      assert.equal(res.status, 200, res.text);
      fits('JsonRpcErrorResponse', res.body);
    }
  });
});
