// http.request `auth`: OAuth2 client credentials against a real provider (oidc-provider on
// loopback), the token held across calls, fetched once more when the server answers 401, and
// scrubbed from what the server echoes; a static bearer token from a secret.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { node, workflowOf } from '../support/call-workflows.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { startProvider, type TestProvider } from '../support/oidc.js';

let idp: TestProvider;
let api: Server;
let t: TestHost;
/** Authorization headers the API saw, in order; the first token it sees it refuses (revoked). */
const seen: string[] = [];

before(async () => {
  idp = await startProvider({ audience: 'https://api.test', tenant: 'acme' });
  api = createServer((req, res) => {
    const authorization = req.headers.authorization ?? '';
    seen.push(authorization);
    const refused =
      authorization.startsWith('Bearer ey') && authorization === seen.find((s) => s.startsWith('Bearer ey'));
    res.writeHead(refused ? 401 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ echo: authorization }));
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}/thing`;
  const dir = mkdtempSync(join(tmpdir(), 'handoff-auth-wf-'));
  const oauth = {
    type: 'oauth2-client-credentials',
    tokenUrl: `${idp.issuer}/token`,
    clientId: 'a-host',
    clientSecret: '{{ secrets.CC_SECRET }}',
    scopes: ['runs:read'],
    resource: 'https://api.test',
  };
  writeFileSync(
    join(dir, 'oauth_call.json'),
    JSON.stringify(workflowOf('oauth_call', [node('call', 'http.request', { method: 'GET', url, auth: oauth })], [])),
  );
  const bearer = { type: 'bearer', token: '{{ secrets.STATIC_TOKEN }}' };
  writeFileSync(
    join(dir, 'bearer_call.json'),
    JSON.stringify(workflowOf('bearer_call', [node('call', 'http.request', { method: 'GET', url, auth: bearer })], [])),
  );
  t = await startTestHost({
    workflows: [dir],
    env: {
      HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1',
      HANDOFF_SECRET_CC_SECRET: 'a-host-secret',
      HANDOFF_SECRET_STATIC_TOKEN: 'static-token-value',
    },
  });
});

after(async () => {
  await t?.close();
  api?.close();
  await idp?.close();
});

test('client credentials: a 401 fetches a new token once; the token is held for the next call and never recorded', async () => {
  const first = await t.waitForStatus(await t.createRun('oauth_call'), ['completed', 'failed']);
  assert.equal(first.status, 'completed', JSON.stringify(first.error));
  assert.equal(idp.tokenRequests, 2, 'the refused token was replaced once');
  assert.equal(first.nodeStates.call.status, 200);
  assert.equal(first.nodeStates.call.body.echo, 'Bearer [redacted]', 'the echoed token is scrubbed');
  const second = await t.waitForStatus(await t.createRun('oauth_call'), ['completed', 'failed']);
  assert.equal(second.status, 'completed', JSON.stringify(second.error));
  assert.equal(idp.tokenRequests, 2, 'the held token served the next call');
  assert.equal(seen.at(-1), seen.at(-2), 'the same token both times');
  assert.doesNotMatch(JSON.stringify(await t.events(second.runId)), /eyJ[\w-]+\.eyJ/);
});

test('bearer: the secret is sent as the token and redacted from the echo', async () => {
  const run = await t.waitForStatus(await t.createRun('bearer_call'), ['completed', 'failed']);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  assert.equal(seen.at(-1), 'Bearer static-token-value');
  assert.equal(run.nodeStates.call.body.echo, 'Bearer [redacted]');
});
