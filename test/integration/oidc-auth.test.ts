// Inbound OpenID Connect access tokens against a real provider (oidc-provider on loopback): tokens
// accepted beside API keys on REST and both A2A bindings with tenant and principal mapped; every
// refusal a 401 with WWW-Authenticate that changes nothing; scopes gating operations; a groups claim
// admitting approvers (RFC 0104); the provider rotating its key; the card declaring the provider's schemes.
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { base64url, importJWK, type JWK, SignJWT } from 'jose';
import { startProvider, type TestProvider } from '../support/oidc.js';
import { startTestHost, type TestHost } from '../support/host.js';

const AUDIENCE = 'https://handoff-b.test';
const ACME_KEY = 'key-acme-ops-1';
const OTHER_KEY = 'key-other-ops-1';

let idp: TestProvider;
let t: TestHost;
let dir: string;

/** A gate two members of the `finance` group must accept. */
const FINANCE_GATE = {
  id: 'finance-gate',
  nodes: [
    {
      id: 'review',
      typeId: 'core.approvalGate',
      config: { title: 'Finance', requiredApprovals: 2, approverGroupRefs: ['finance'] },
    },
  ],
};

const decoded = (part: string | undefined) => JSON.parse(new TextDecoder().decode(base64url.decode(part ?? '')));
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const v1 = { 'a2a-version': '1.0' };

/** A token signed with the provider's own key, claims as given (what the provider would never issue). */
async function forged(claims: Record<string, unknown>, opts: { alg?: string } = {}): Promise<string> {
  const jwk = idp.keys[0] as JWK;
  const key = await importJWK(jwk, 'ES256');
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tenant: 'acme', ...claims })
    .setProtectedHeader({ alg: opts.alg ?? 'ES256', kid: jwk.kid as string, typ: 'at+jwt' })
    .setIssuer((claims.iss as string) ?? idp.issuer)
    .setAudience((claims.aud as string) ?? AUDIENCE)
    .setSubject('forger')
    .setIssuedAt(now - 7200)
    .setExpirationTime((claims.exp as number) ?? now + 600)
    .sign(key);
}

async function runCount(): Promise<number> {
  const res = await t.get('/v1/runs?limit=100', { authorization: `Bearer ${ACME_KEY}` });
  assert.equal(res.status, 200, res.text);
  return res.body.runs.length;
}

before(async () => {
  idp = await startProvider({
    audience: AUDIENCE,
    tenant: 'acme',
    clients: {
      'a-host': 'a-host-secret',
      'fin-a': 'fin-a-secret',
      'fin-b': 'fin-b-secret',
      'fin-spaced': 'fin-spaced-secret',
    },
    // The claim as an array of strings, and as a string: one name, never split on spaces.
    clientClaims: {
      'fin-a': { groups: ['audit', 'finance'] },
      'fin-b': { groups: 'finance' },
      'fin-spaced': { groups: 'audit finance' },
    },
  });
  dir = mkdtempSync(join(tmpdir(), 'handoff-wf-'));
  writeFileSync(join(dir, 'finance-gate.json'), JSON.stringify(FINANCE_GATE));
  t = await startTestHost({
    apiKeys: `${ACME_KEY}=acme:ops,${OTHER_KEY}=other:ops`,
    workflows: [dir],
    env: {
      HANDOFF_OIDC_ISSUER: idp.issuer,
      HANDOFF_OIDC_AUDIENCE: AUDIENCE,
      HANDOFF_OIDC_SCOPES_CLAIM: 'scope',
      HANDOFF_OIDC_GROUPS_CLAIM: 'groups',
      HANDOFF_OIDC_JWKS_COOLDOWN_MS: '0',
    },
  });
});

after(async () => {
  await t?.close();
  await idp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('tokens accepted', () => {
  test('REST and both A2A bindings take a token; tenant from the claim, principal the subject', async () => {
    const token = await idp.token('a-host', { scope: 'runs:create runs:read' });
    const runId = await t.createRun('echo', { message: 'hi' }, bearer(token));
    const run = await t.waitForStatus(runId, ['completed'], bearer(token));
    assert.equal(run.status, 'completed');
    // The run is acme's: acme's API key sees it, another tenant's does not.
    assert.equal((await t.get(`/v1/runs/${runId}`, { authorization: `Bearer ${ACME_KEY}` })).status, 200);
    assert.equal((await t.get(`/v1/runs/${runId}`, { authorization: `Bearer ${OTHER_KEY}` })).status, 404);
    assert.deepEqual(run.owner, { tenant: 'acme', principal: 'a-host' });

    const rpc = await t.post(
      '/v1/a2a',
      { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: runId } },
      bearer(token),
    );
    assert.equal(rpc.status, 200, rpc.text);
    assert.equal(rpc.body.result.id, runId);
    const rest = await t.get(`/v1/a2a/rest/tasks/${runId}`, { ...bearer(token), ...v1 });
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.body.id, runId);
  });

  test('the provider rotates its key: new tokens are accepted, and old ones while their key is published', async () => {
    const before = await idp.token('a-host', { scope: 'runs:read' });
    assert.equal((await t.get('/v1/runs', bearer(before))).status, 200);
    await idp.rotate();
    const afterRotation = await idp.token('a-host', { scope: 'runs:read' });
    assert.notEqual(decoded(afterRotation.split('.')[0]).kid, idp.keys[1]?.kid);
    assert.equal((await t.get('/v1/runs', bearer(afterRotation))).status, 200);
    assert.equal((await t.get('/v1/runs', bearer(before))).status, 200);
  });
});

describe('tokens refused: 401 with WWW-Authenticate, nothing changes', () => {
  const cases: Array<[string, () => Promise<string | undefined>, RegExp]> = [
    ['missing', async () => undefined, /^Bearer realm="handoff"$/],
    ['expired', () => forged({ exp: Math.floor(Date.now() / 1000) - 3600 }), /invalid_token.*expired/],
    ['wrong audience', () => idp.token('a-host', { resource: 'https://someone-else.test' }), /invalid_token.*'aud'/],
    ['wrong issuer', () => forged({ iss: 'https://impostor.test' }), /invalid_token.*'iss'/],
    [
      'alg none',
      async () => {
        const real = await idp.token('a-host');
        const [, payload] = real.split('.');
        return `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'at+jwt' }))}.${payload}.`;
      },
      /invalid_token/,
    ],
    [
      'tampered',
      async () => {
        const [header, payload, signature] = (await idp.token('a-host')).split('.');
        const claims = decoded(payload);
        const changed = base64url.encode(JSON.stringify({ ...claims, tenant: 'other' }));
        return `${header}.${changed}.${signature}`;
      },
      /invalid_token.*signature/,
    ],
    [
      'HS256 with the public key as secret',
      async () => {
        const jwk = idp.keys[0] as JWK;
        const pem = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } as never, format: 'jwk' })
          .export({ type: 'spki', format: 'pem' })
          .toString();
        const now = Math.floor(Date.now() / 1000);
        return new SignJWT({ tenant: 'acme' })
          .setProtectedHeader({ alg: 'HS256', kid: jwk.kid as string })
          .setIssuer(idp.issuer)
          .setAudience(AUDIENCE)
          .setSubject('forger')
          .setExpirationTime(now + 600)
          .sign(new TextEncoder().encode(pem));
      },
      /invalid_token.*algorithm/,
    ],
  ];
  for (const [name, make, challenge] of cases) {
    test(name, async () => {
      const token = await make();
      const headers = token === undefined ? {} : bearer(token);
      const runs = await runCount();
      for (const res of [
        await t.post('/v1/runs', { workflowId: 'echo', inputs: { message: 'no' } }, headers),
        await t.post('/v1/a2a', { jsonrpc: '2.0', id: 1, method: 'tasks/list', params: {} }, headers),
        await t.get('/v1/a2a/rest/tasks', { ...headers, ...v1 }),
      ]) {
        assert.equal(res.status, 401, res.text);
        assert.match(String(res.headers['www-authenticate']), challenge);
      }
      assert.equal(await runCount(), runs, 'a refused request started no run');
    });
  }
});

describe('scopes', () => {
  test('a token may do what its scopes name (OpenWOP auth.md), 403 naming the scope otherwise', async () => {
    const reader = await idp.token('a-host', { scope: 'runs:read' });
    const runs = await runCount();
    const create = await t.post('/v1/runs', { workflowId: 'echo', inputs: { message: 'x' } }, bearer(reader));
    assert.equal(create.status, 403, create.text);
    assert.equal(create.body.error, 'forbidden');
    assert.equal(create.body.details.scopeRequired, 'runs:create');
    assert.match(String(create.headers['www-authenticate']), /insufficient_scope/);
    const send = await t.post(
      '/v1/a2a',
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
      },
      bearer(reader),
    );
    assert.equal(send.status, 403, send.text);
    assert.equal(await runCount(), runs);
    assert.equal((await t.get('/v1/runs', bearer(reader))).status, 200);
    const list = await t.post('/v1/a2a', { jsonrpc: '2.0', id: 2, method: 'tasks/list', params: {} }, bearer(reader));
    assert.notEqual(list.status, 403, list.text);
    // API keys hold every scope.
    assert.equal(
      (
        await t.post(
          '/v1/runs',
          { workflowId: 'echo', inputs: { message: 'k' } },
          { authorization: `Bearer ${ACME_KEY}` },
        )
      ).status,
      201,
    );
  });
});

describe('approver groups from the token', () => {
  test("a token whose groups claim names the gate's group may decide; one without it (or with it inside a spaced string) is 403", async () => {
    const scope = 'runs:create runs:read approvals:respond';
    const outsider = await idp.token('a-host', { scope });
    const runId = await t.createRun('finance-gate', {}, bearer(outsider));
    await t.waitForStatus(runId, ['waiting-approval'], bearer(outsider));
    const decide = (token: string) =>
      t.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue: { action: 'accept' } }, bearer(token));

    const refused = await decide(outsider);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error, 'forbidden');
    // A string claim is one group name ("audit finance"), not the groups "audit" and "finance".
    const spaced = await decide(await idp.token('fin-spaced', { scope }));
    assert.equal(spaced.status, 403, spaced.text);

    const first = await decide(await idp.token('fin-a', { scope }));
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.interrupt.outcome, 'vote-recorded');
    const second = await decide(await idp.token('fin-b', { scope }));
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.interrupt.outcome, 'resolved');
    const done = await t.waitForStatus(runId, ['completed', 'failed'], bearer(outsider));
    assert.equal(done.status, 'completed');
    assert.deepEqual([...done.nodeStates.review.approvers].sort(), ['fin-a', 'fin-b']);
  });
});

describe('the agent card declares the provider', () => {
  test('0.3 and 1.0 cards: bearer, oauth2 client credentials at the token endpoint, OpenID discovery', async () => {
    const discovery = `${idp.issuer}/.well-known/openid-configuration`;
    const tokenUrl = `${idp.issuer}/token`;
    const v03 = (await t.get('/.well-known/agent-card.json')).body;
    assert.deepEqual(v03.securitySchemes.oidc, { type: 'openIdConnect', openIdConnectUrl: discovery });
    assert.equal(v03.securitySchemes.oauth2.flows.clientCredentials.tokenUrl, tokenUrl);
    assert.deepEqual(v03.security, [{ bearer: [] }, { oauth2: [] }, { oidc: [] }]);
    const card = (await t.get('/.well-known/agent-card.json', v1)).body;
    assert.deepEqual(card.securitySchemes.oidc, { openIdConnectSecurityScheme: { openIdConnectUrl: discovery } });
    assert.equal(card.securitySchemes.oauth2.oauth2SecurityScheme.flows.clientCredentials.tokenUrl, tokenUrl);
    assert.ok(card.securitySchemes.bearer.httpAuthSecurityScheme);
  });
});
