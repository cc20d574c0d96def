// How calls to peers fail, and that the egress guard holds for URLs from run input. The misbehaving
// peers are one local HTTPS server (a throw-away CA) answering each path its own wrong way; the
// good guarded peer is a real Handoff host serving HTTPS.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createEgressPolicy } from '../../src/egress/address.js';
import { loadConfig } from '../../src/config.js';
import { Peers } from '../../src/peers/client.js';
import { PeerError } from '../../src/peers/errors.js';
import { messageIdFor } from '../../src/peers/identity.js';
import { type AgentEntry, tokenSetting } from '../../src/peers/registry.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { generateTestCerts } from '../support/https-receiver.js';
import { closedPort } from '../support/server-process.js';
import { until } from '../support/until.js';

const RUN = { runId: 'run_peer_errors', callerAgentId: 'https://caller.example/agent' };
const TOKEN = 'sekret-token-never-shown';
const certs = generateTestCerts();

/** An A2A 0.3 card whose JSON-RPC endpoint is `rpcUrl`. */
const card03 = (rpcUrl: string) => ({
  name: 'misbehaving',
  description: 'answers wrongly on purpose',
  url: rpcUrl,
  version: '0.0.0',
  protocolVersion: '0.3.0',
  preferredTransport: 'JSONRPC',
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [],
});

type Route = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));

function routes(base: string, held: ServerResponse[]): Record<string, Route> {
  const rpcId = (body: string) => (JSON.parse(body) as { id: number }).id;
  return {
    '/html/.well-known/agent-card.json': (_q, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
    '/empty.json': (_q, res) => json(res, 200, {}),
    '/no-skills.json': (_q, res) => json(res, 200, { ...card03(`${base}/rpc/ok`), skills: 'none' }),
    '/grpc.json': (_q, res) =>
      json(res, 200, {
        ...card03(''),
        url: undefined,
        preferredTransport: undefined,
        protocolVersion: undefined,
        supportedInterfaces: [{ url: `${base}/grpc`, protocolBinding: 'GRPC', protocolVersion: '1.0', tenant: '' }],
      }),
    '/missing.json': (_q, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no card here'),
    '/busy.json': (_q, res) => json(res, 503, { error: 'busy' }, { 'retry-after': '7' }),
    '/moved.json': (_q, res) => res.writeHead(302, { location: 'http://169.254.169.254/latest' }).end(),
    '/huge.json': (_q, res) => json(res, 200, { name: 'x'.repeat(5 * 1024 * 1024) }),
    '/http-interface.json': (_q, res) => json(res, 200, card03(base.replace('https:', 'http:') + '/rpc/ok')),
    '/garbage.json': (_q, res) => json(res, 200, card03(`${base}/rpc/garbage`)),
    '/rpc/garbage': (_q, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('not json at all'),
    '/limited.json': (_q, res) => json(res, 200, card03(`${base}/rpc/limited`)),
    '/rpc/limited': (_q, res) => json(res, 429, { error: 'slow down' }, { 'retry-after': '2' }),
    '/teapot.json': (_q, res) => json(res, 200, card03(`${base}/rpc/teapot`)),
    '/rpc/teapot': (_q, res) => res.writeHead(418, { 'content-type': 'text/plain' }).end('I am a teapot'),
    '/custom-error.json': (_q, res) => json(res, 200, card03(`${base}/rpc/custom-error`)),
    '/rpc/custom-error': (_q, res, body) =>
      json(res, 200, { jsonrpc: '2.0', id: rpcId(body), error: { code: -32099, message: 'vendor says no' } }),
    '/hang.json': (_q, res) => json(res, 200, card03(`${base}/rpc/hang`)),
    '/rpc/hang': (_q, res) => {
      held.push(res);
    },
    '/short-stream.json': (_q, res) => json(res, 200, card03(`${base}/rpc/short-stream`)),
    '/rpc/short-stream': (_q, res, body) => {
      const task = { kind: 'task', id: 't-short', contextId: 'c-short', status: { state: 'working' } };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: rpcId(body), result: task })}\n\n`);
    },
  };
}

let misc: Server;
let base: string;
const held: ServerResponse[] = [];
let tls: TestHost;
let tlsUrl: string;
let downPort: number;
const dir = mkdtempSync(join(tmpdir(), 'handoff-peer-errors-'));

before(async () => {
  misc = createServer({ key: certs.keyPem, cert: certs.certPem }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      const route = routes(base, held)[(req.url ?? '').split('?')[0]!];
      if (route) route(req, res, body);
      else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => misc.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(misc.address() as AddressInfo).port}`;
  downPort = await closedPort();
  writeFileSync(join(dir, 'cert.pem'), certs.certPem);
  writeFileSync(join(dir, 'key.pem'), certs.keyPem);
  writeFileSync(join(dir, 'ca.pem'), certs.caPem);
  tls = await startTestHost({
    startRunner: false,
    env: { HANDOFF_TLS_CERT: join(dir, 'cert.pem'), HANDOFF_TLS_KEY: join(dir, 'key.pem') },
  });
  tlsUrl = await tls.host.listen();
});

after(async () => {
  for (const res of held) res.destroy();
  misc.closeAllConnections();
  await new Promise((resolve) => misc.close(resolve));
  await tls.close();
  rmSync(dir, { recursive: true, force: true });
});

const registry = (names: string[]): Map<string, AgentEntry> =>
  new Map(names.map((n) => [n, { name: n, cardUrl: `${base}/${n}.json`, token: TOKEN }]));

async function fails(p: Promise<unknown>, expect: (e: PeerError) => boolean): Promise<PeerError> {
  let caught: unknown;
  await p.catch((err: unknown) => {
    caught = err;
  });
  assert.ok(caught instanceof PeerError, `expected a PeerError, got ${String(caught)}`);
  assert.ok(expect(caught), JSON.stringify(caught.failure));
  assert.ok(!caught.message.includes(TOKEN), 'a token must never be in an error');
  return caught;
}

const isRefused = (e: PeerError) => e.failure.kind === 'refused';
const isPeer = (code: number) => (e: PeerError) => e.failure.kind === 'peer' && e.failure.code === code;
const isTransport = (e: PeerError) => e.failure.kind === 'transport';

describe('peers from the registry that fail', () => {
  let peers: Peers;
  before(() => {
    // Built the way the host will build it: settings → loadConfig → Peers.fromConfig.
    const names = ['empty', 'no-skills', 'grpc', 'missing', 'busy', 'moved', 'huge', 'garbage', 'limited'];
    const agents = [
      ...[...names, 'teapot', 'custom-error', 'short-stream'].map((n) => `${n}=${base}/${n}.json`),
      `html=${base}/html`,
      `down=http://127.0.0.1:${downPort}`,
    ];
    const env: Record<string, string> = {
      HANDOFF_AGENTS: agents.join(','),
      HANDOFF_AGENT_CA_FILE: join(dir, 'ca.pem'),
      HANDOFF_AGENT_TIMEOUT_MS: '10000',
    };
    for (const n of [...names, 'down']) env[tokenSetting(n)] = TOKEN;
    peers = Peers.fromConfig(loadConfig({}, env));
  });
  after(() => peers.close());

  const resolve = (agent: string) => peers.resolve({ agent }, RUN);
  const send = async (agent: string) =>
    (await resolve(agent)).send({ messageId: messageIdFor(`${agent}:1`), text: 'hi' });

  it('an unknown agent name is refused, naming the registered ones', async () => {
    const e = await fails(resolve('nobody'), isRefused);
    assert.match(e.message, /'nobody'.*HANDOFF_AGENTS.*registered: .*empty/);
  });

  it('a closed port is a transport error (retry later) that names the failure, not the token', async () => {
    const e = await fails(resolve('down'), isTransport);
    assert.match(e.message, /ECONNREFUSED/);
  });

  it('a card that is not JSON, or not a card, is a clear peer error (-32006)', async () => {
    assert.match((await fails(resolve('html'), isPeer(-32006))).message, /agent card at .*\/html\/.* is unreadable/);
    assert.match((await fails(resolve('empty'), isPeer(-32006))).message, /offers no interface .*: none/);
    assert.match(
      (await fails(resolve('no-skills'), isPeer(-32006))).message,
      /no-skills\.json is unreadable: .*skills/,
    );
    assert.match((await fails(resolve('grpc'), isPeer(-32006))).message, /GRPC 1\.0/);
    assert.match((await fails(resolve('huge'), isPeer(-32006))).message, /larger than 4194304 bytes/);
  });

  it('HTTP answers: 404 is a peer error with that code; 503 and 429 are transport errors (Retry-After)', async () => {
    await fails(resolve('missing'), isPeer(404));
    const busy = await fails(resolve('busy'), isTransport);
    assert.equal(busy.failure.kind === 'transport' && busy.failure.retryAfterMs, 7000);
    const limited = await fails(send('limited'), isTransport);
    assert.equal(limited.failure.kind === 'transport' && limited.failure.retryAfterMs, 2000);
    await fails(send('teapot'), isPeer(418));
  });

  it('a redirect is refused, not followed', async () => {
    assert.match((await fails(resolve('moved'), isRefused)).message, /HTTP 302.*not followed/);
  });

  it("a JSON-RPC error keeps the peer's own code and message; an answer that is not JSON is -32006", async () => {
    assert.match((await fails(send('custom-error'), isPeer(-32099))).message, /vendor says no/);
    await fails(send('garbage'), isPeer(-32006));
  });

  it('a stream that closes before the task settles is a transport error (subscribe again or poll)', async () => {
    const peer = await resolve('short-stream');
    const seen: string[] = [];
    await fails(
      (async () => {
        for await (const t of peer.subscribe('t-short')) seen.push(t.status.state);
      })(),
      isTransport,
    );
    assert.deepEqual(seen, ['working']);
  });

  it('a peer that does not answer is a transport error after the timeout', async () => {
    const quick = new Peers({ registry: registry(['hang']), timeoutMs: 300, ca: certs.caPem });
    try {
      const peer = await quick.resolve({ agent: 'hang' }, RUN);
      const e = await fails(peer.getTask('t1'), isTransport);
      assert.match(e.message, /no answer within 300 ms/);
    } finally {
      await quick.close();
    }
  });
});

describe('peers named by a URL from run input (the full egress guard)', () => {
  const strict = new Peers({ registry: new Map(), timeoutMs: 10_000, ca: certs.caPem });
  after(() => strict.close());
  const resolveUrl = (url: string, peers = strict) => peers.resolve({ url }, RUN);

  it('refuses plain http, loopback, link-local and metadata addresses, denied names and credentials', async () => {
    const cases: Array<[string, RegExp]> = [
      [`http://127.0.0.1:${downPort}`, /must use https/],
      ['http://example.com', /must use https/],
      ['https://127.0.0.1:8443', /127\.0\.0\.1 is not a public address/],
      ['https://169.254.169.254/latest/meta-data', /169\.254\.169\.254 is not a public address/],
      ['https://[::1]:8443/', /::1 is not a public address/],
      ['https://10.1.2.3/', /10\.1\.2\.3 is not a public address/],
      ['https://localhost:8443/', /localhost is on the deny list/],
      ['https://metadata.google.internal/', /deny list/],
      ['https://user:hunter2@example.com/', /credentials/],
      ['ftp://example.com/card.json', /must be http\(s\)/],
      ['not a url', /must be http\(s\)/],
    ];
    for (const [url, why] of cases) {
      const e = await fails(resolveUrl(url), isRefused);
      assert.match(e.message, why, url);
      assert.ok(!e.message.includes('hunter2'));
    }
  });

  it('refuses at dial time a name that resolves to a private address', async () => {
    const rebinding = new Peers({
      registry: new Map(),
      timeoutMs: 10_000,
      lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    try {
      const e = await fails(resolveUrl(`https://peer.example.com:${new URL(base).port}/`, rebinding), isRefused);
      assert.match(e.message, /resolves to disallowed address 127\.0\.0\.1/);
    } finally {
      await rebinding.close();
    }
  });

  describe('with loopback allowlisted (as an operator may), over https', () => {
    const allowing = new Peers({
      registry: new Map(),
      timeoutMs: 10_000,
      ca: certs.caPem,
      inputPolicy: createEgressPolicy({ allowCidrs: ['127.0.0.0/8'] }),
    });
    after(() => allowing.close());

    it('calls a Handoff host serving HTTPS: send, then read the task to completion', async () => {
      const peer = await resolveUrl(tlsUrl, allowing);
      assert.deepEqual(peer.chosen, { url: `${tlsUrl}/v1/a2a`, binding: 'JSONRPC', protocolVersion: '1.0' });
      const sent = await peer.send({ messageId: messageIdFor('guarded:1'), text: 'over tls' });
      assert.equal(sent.kind, 'task');
      const taskId = sent.kind === 'task' ? sent.task.id : '';
      const done = await until('completed', async () => (await peer.getTask(taskId)).status.state === 'completed');
      assert.ok(done);
    });

    it('still refuses a card that sends it to a plain-http interface', async () => {
      assert.match((await fails(resolveUrl(`${base}/http-interface.json`, allowing), isRefused)).message, /https/);
    });

    it('still refuses a redirect', async () => {
      await fails(resolveUrl(`${base}/moved.json`, allowing), isRefused);
    });
  });
});
