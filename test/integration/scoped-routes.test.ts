// Every authenticated route has a scope (src/http/scopes.ts): a key limited to scopes is refused
// 403 naming the scope an operation needs, on every operation of the OpenAPI document that takes a
// credential, and admitted with it — the webhook routes with `webhooks:manage`, the audit log with
// `audit:read` — and on the A2A bindings, where a message into a task at a gate needs
// `approvals:respond`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { bearer, type Json, startTestHost, type TestHost } from '../support/host.js';

const NONE = 'key-scoped-none';
const READER = 'key-scoped-read';
const HOOKS = 'key-scoped-hook';
const AUDIT = 'key-scoped-audt';
const RESPONDER = 'key-scoped-resp';
const V1 = { 'a2a-version': '1.0' };
const key = (scopes: string[]) => ({ tenant: 'acme', principal: 'p', scopes });

describe('scoped API keys on every authenticated route', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost({
      apiKeys: JSON.stringify({
        [NONE]: key([]),
        [READER]: key(['runs:read', 'runs:create']),
        [HOOKS]: key(['webhooks:manage']),
        [AUDIT]: key(['audit:read']),
        [RESPONDER]: key(['runs:read', 'approvals:respond']),
      }),
      env: { HANDOFF_CONFORMANCE_FIXTURES: '1', HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8' },
    });
  });
  after(() => t?.close());

  it('POST and DELETE /v1/webhooks need webhooks:manage: 403 naming it without, 201 and 204 with', async () => {
    const body = { url: 'https://127.0.0.1:65535/hook', events: ['run.completed'] };
    const refused = await t.post('/v1/webhooks', body, bearer(READER));
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.details.scopeRequired, 'webhooks:manage');
    const made = await t.post('/v1/webhooks', body, bearer(HOOKS));
    assert.equal(made.status, 201, made.text);
    const url = `/v1/webhooks/${made.body.webhookId}`;
    const kept = await t.request('DELETE', url, undefined, bearer(READER));
    assert.equal(kept.status, 403, kept.text);
    assert.equal(kept.body.details.scopeRequired, 'webhooks:manage');
    const gone = await t.request('DELETE', url, undefined, bearer(HOOKS));
    assert.ok(gone.status === 204 || gone.status === 200, gone.text);
  });

  it('GET /v1/audit needs audit:read; GET /v1/notifications webhooks:manage', async () => {
    const refused = await t.get('/v1/audit', bearer(READER));
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.details.scopeRequired, 'audit:read');
    assert.equal((await t.get('/v1/audit', bearer(AUDIT))).status, 200);
    const notes = await t.get('/v1/notifications', bearer(READER));
    assert.equal(notes.body.details.scopeRequired, 'webhooks:manage');
    assert.equal((await t.get('/v1/notifications', bearer(HOOKS))).status, 200);
  });

  it('every authenticated operation of the API document names the scope it needs', async () => {
    const doc = (await t.get('/v1/openapi.json')).body;
    const checked: string[] = [];
    for (const [path, ops] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(ops)) {
        if (Array.isArray(op.security) && op.security.length === 0) continue; // public
        // The A2A JSON-RPC route's scope is its body's method (tested with the bindings).
        if (path === '/v1/a2a') continue;
        const url = path.replace(/\{[^}]+\}/g, 'x');
        const body = ['post', 'put', 'patch'].includes(method) ? {} : undefined;
        const res = await t.request(method.toUpperCase(), url, body, bearer(NONE));
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
        // REST answers details.scopeRequired; the A2A HTTP+JSON binding its own error naming the scope.
        assert.match(res.text, /lacks the scope this operation needs: [a-z]+:[a-z]+/, `${method} ${path}: ${res.text}`);
        checked.push(`${method} ${path}`);
      }
    }
    for (const op of ['post /v1/webhooks', 'get /v1/audit', 'get /v1/notifications', 'get /v1/a2a/tasks']) {
      assert.ok(checked.includes(op), `${op} checked`);
    }
  });

  it('A2A 1.0 JSON-RPC: SendMessage continuing a task at a gate needs approvals:respond; without it nothing changes', async () => {
    const rpc = (who: string, method: string, params: Json) =>
      t.post('/v1/a2a', { jsonrpc: '2.0', id: 7, method, params }, { ...bearer(who), ...V1 });
    const msg = (parts: Json[], extra: Json = {}) => ({
      messageId: `m-${randomUUID()}`,
      role: 'ROLE_USER',
      parts,
      ...extra,
    });
    // Starting a task is runs:create, which the reader holds.
    const started = await rpc(READER, 'SendMessage', {
      message: msg([{ text: 'draft' }], { metadata: { skillId: 'approval' } }),
    });
    assert.equal(started.status, 200, started.text);
    const taskId = started.body.result.task.id as string;
    assert.equal(started.body.result.task.status.state, 'TASK_STATE_INPUT_REQUIRED');
    const before = (await t.get(`/v1/runs/${taskId}`, bearer(READER))).body;
    assert.equal(before.status, 'waiting-approval');

    const accept = { message: msg([{ data: { action: 'accept' } }], { taskId }) };
    // Refused before the binding reads the message, like a missing credential: HTTP 403 with the
    // host's envelope naming the scope (JSON-RPC has no forbidden error of its own), and the
    // HTTP+JSON binding's PERMISSION_DENIED.
    const refused = await rpc(READER, 'SendMessage', accept);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error, 'forbidden', refused.text);
    assert.equal(refused.body.details.scopeRequired, 'approvals:respond');
    assert.match(String(refused.headers['www-authenticate']), /insufficient_scope.*approvals:respond/);
    const viaRest = await t.post('/v1/a2a/rest/message:send', accept, { ...bearer(READER), ...V1 });
    assert.equal(viaRest.status, 403, viaRest.text);
    assert.equal(viaRest.body.error.status, 'PERMISSION_DENIED', viaRest.text);
    assert.match(viaRest.body.error.message, /approvals:respond/);
    assert.deepEqual((await t.get(`/v1/runs/${taskId}`, bearer(READER))).body, before);

    const answered = await rpc(RESPONDER, 'SendMessage', accept);
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.body.result.task.status.state, 'TASK_STATE_COMPLETED');
  });
});
