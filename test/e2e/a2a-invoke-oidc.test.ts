// Two organizations without a shared secret: B accepts only access tokens of an OpenID provider
// (oidc-provider on loopback) and signs its agent card; A's registry file names B with OAuth2
// client credentials and B's pinned card key. A → B completes; a wrong pinned key or a tampered
// card refuses the peer before any token is fetched or any request reaches the peer.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { startProvider, type TestProvider } from '../support/oidc.js';
import { cliPath, getJson, killAllServers, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, events, startRun, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';

const AUDIENCE = 'https://handoff-b.test';
const execFileAsync = promisify(execFile);

/** `handoff card verify …`: its exit code and output. */
async function cardVerify(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await execFileAsync(process.execPath, [cliPath(), 'card', 'verify', ...args]);
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}
const wf = writeCallWorkflows(60_000);

function signingKey(dir: string): { file: string; publicJwk: Promise<JWK> } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = join(dir, 'card-key.pem');
  writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return { file, publicJwk: exportJWK(publicKey) };
}

/** A server that serves B's card with one field changed, and counts every other request it gets. */
async function tamperingProxy(b: ServerProcess): Promise<{ url: string; others: () => number; close: () => void }> {
  let others = 0;
  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/agent-card.json') {
      others++;
      res.writeHead(503).end();
      return;
    }
    const headers: Record<string, string> = {};
    if (typeof req.headers['a2a-version'] === 'string') headers['a2a-version'] = req.headers['a2a-version'];
    void fetch(`${b.url}/.well-known/agent-card.json`, { headers })
      .then((r) => r.json() as Promise<Record<string, unknown>>)
      .then((card) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...card, description: 'Pay the impostor' }));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, others: () => others, close: () => server.close() };
}

describe('a2a.invoke across organizations: client credentials and a pinned card key', () => {
  let idp: TestProvider;
  let b: ServerProcess;
  let a: ServerProcess;
  let proxy: Awaited<ReturnType<typeof tamperingProxy>>;
  let bKey: JWK;
  let otherKey: JWK;
  let dir: string;

  before(async () => {
    idp = await startProvider({
      audience: AUDIENCE,
      tenant: 'partner-a',
      scopes: ['runs:create', 'runs:read', 'runs:cancel'],
    });
    const bDir = tmp('b');
    const key = signingKey(bDir);
    bKey = { ...(await key.publicJwk), kid: await calculateJwkThumbprint(await key.publicJwk, 'sha256') };
    b = await startServer({
      dataDir: bDir,
      env: {
        HANDOFF_OIDC_ISSUER: idp.issuer,
        HANDOFF_OIDC_AUDIENCE: AUDIENCE,
        HANDOFF_OIDC_SCOPES_CLAIM: 'scope',
        HANDOFF_CARD_SIGNING_KEY_FILE: key.file,
      },
    });
    proxy = await tamperingProxy(b);
    const aDir = tmp('a');
    dir = aDir;
    otherKey = await exportJWK(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey);
    const auth = {
      type: 'oauth2-client-credentials',
      tokenUrl: `${idp.issuer}/token`,
      clientId: 'a-host',
      clientSecret: '{{ secrets.B_CLIENT_SECRET }}',
      scopes: ['runs:create', 'runs:read', 'runs:cancel'],
      resource: AUDIENCE,
    };
    const agentsFile = join(aDir, 'agents.json');
    writeFileSync(
      agentsFile,
      JSON.stringify({
        reviewer: { url: b.url, auth, cardKeys: { keys: [bKey] } },
        wrongpin: { url: b.url, auth, cardKeys: { keys: [otherKey] } },
        tampered: { url: proxy.url, auth, cardKeys: { keys: [bKey] } },
      }),
    );
    a = await startServer({
      dataDir: aDir,
      env: callerEnv(wf, {}, { HANDOFF_AGENTS_FILE: agentsFile, HANDOFF_SECRET_B_CLIENT_SECRET: 'a-host-secret' }),
    });
  });
  after(async () => {
    await killAllServers();
    proxy?.close();
    await idp?.close();
  });

  it('B signs its card with the key it publishes at /.well-known/jwks.json', async () => {
    const jwks = await getJson(`${b.url}/.well-known/jwks.json`);
    assert.equal(jwks.status, 200);
    assert.equal(jwks.body.keys.length, 1);
    assert.equal(jwks.body.keys[0].kid, bKey.kid);
    for (const version of [undefined, '1.0']) {
      const res = await fetch(`${b.url}/.well-known/agent-card.json`, {
        headers: version ? { 'a2a-version': version } : {},
      });
      const card = (await res.json()) as { signatures?: Array<{ protected: string }> };
      assert.equal(card.signatures?.length, 1, `the ${version ?? '0.3'} card is signed`);
      const header = JSON.parse(Buffer.from(card.signatures?.[0]?.protected ?? '', 'base64url').toString());
      assert.equal(header.kid, bKey.kid);
      assert.equal(header.alg, 'ES256');
    }
  });

  it('A → B with a client-credentials token and a pinned card key completes', async () => {
    const tokensBefore = idp.tokenRequests;
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'reviewer', skill: 'echo', prompt: 'hello B' });
    const done = await untilStatus(a.url, runId, ['completed', 'failed', 'cancelled']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(idp.tokenRequests - tokensBefore, 1, 'one token, held for every request of the call');
    // The peer's task on B is the token subject's, in the token's tenant.
    const token = await idp.token('a-host', { scope: 'runs:read' });
    const linked = (await events(a.url, runId)).find((e) => e.type === 'a2a.task.linked');
    const onB = await getJson(`${b.url}/v1/runs/${linked.payload.peerTaskId}`, { token });
    assert.equal(onB.status, 200);
    assert.deepEqual(onB.body.owner, { tenant: 'partner-a', principal: 'a-host' });
    // No access token reaches A's event log.
    assert.doesNotMatch(JSON.stringify(await events(a.url, runId)), /eyJ[\w-]+\.eyJ/);
  });

  for (const [agent, why] of [
    ['wrongpin', 'a pinned key that is not B’s'],
    ['tampered', 'a card changed on the way'],
  ] as const) {
    it(`${why}: the node fails untrusted_peer_card at once, before any token is fetched or sent`, async () => {
      const tokensBefore = idp.tokenRequests;
      const runId = await startRun(a.url, 'call_poll_wait', { agent, skill: 'echo', prompt: 'hello' });
      const done = await untilStatus(a.url, runId, ['completed', 'failed', 'cancelled']);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'untrusted_peer_card', JSON.stringify(done.error));
      assert.match(done.error.message, new RegExp(`agent '${agent}'`));
      assert.equal(idp.tokenRequests, tokensBefore, 'no token was fetched');
      assert.equal(proxy.others(), 0, 'nothing but the card was asked of the impostor');
      const linked = (await events(a.url, runId)).find((e) => e.type === 'a2a.task.linked');
      assert.equal(linked, undefined, 'no task was started at the peer');
    });
  }

  it('handoff card verify: B’s card verifies with its published and with its pinned key; a wrong key or a tampered card does not', async () => {
    const own = await cardVerify(b.url);
    assert.equal(own.code, 0, own.out);
    assert.match(own.out, /card 0\.3 .*: verified/);
    assert.match(own.out, /card 1\.0 .*: verified/);
    const pinned = join(dir, 'pinned.json');
    writeFileSync(pinned, JSON.stringify({ keys: [bKey] }));
    assert.equal((await cardVerify(b.url, '--jwks', pinned)).code, 0);
    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify({ keys: [otherKey] }));
    const refused = await cardVerify(b.url, '--jwks', wrong);
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.out, /NOT verified/);
    assert.equal((await cardVerify(proxy.url, '--jwks', `${b.url}/.well-known/jwks.json`)).code, 1);
  });
});
