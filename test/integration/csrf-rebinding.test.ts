// A web page the local user visits must not drive a keyless loopback host:
// - bodies a browser may send cross-site without a preflight (text/plain, forms, multipart, no
//   type) are 415 on /v1/a2a and every REST write route, with no side effect — before, /v1/a2a
//   parsed any type, so a page could start a task and approve a waiting one;
// - CORS is closed unless HANDOFF_CORS_ORIGINS opens it, and a write whose Origin is neither the
//   host's own nor listed is 403;
// - a Host that is not one of this host's names is 421 (DNS rebinding), so the card and the
//   discovery document never echo a foreign host — before, `Host: attacker.example` came back as
//   the card's url; and a Host that is not a valid host[:port] is 421 on every route, whatever the
//   allow list — before, `Host: 127.0.0.1:1@attacker.example` passed as 127.0.0.1 and the card's
//   url pointed at attacker.example.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertRpcResult, dataMessage, RPC_PATH, sendOk, skillMessage } from '../support/a2a.js';
import { footprint, type Headers, type Reply, startTestHost, type TestHost } from '../support/host.js';
import { openSse } from '../support/sse-client.js';

const approve = (taskId: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'message/send',
    params: { message: dataMessage({ action: 'accept' }, { taskId }) },
  });
const startTask = JSON.stringify({
  jsonrpc: '2.0',
  id: 2,
  method: 'message/send',
  params: { message: skillMessage('approval', 'from a web page') },
});

function assertEnvelope(res: Reply, status: number, error: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error, error, res.text);
}

describe('cross-site writes and foreign Host names (keyless loopback host)', () => {
  let t: TestHost;
  let waiting: string;
  before(async () => {
    t = await startTestHost();
    waiting = (await sendOk(t, skillMessage('approval', 'needs approval'))).id;
  });
  after(async () => {
    await t?.close();
  });

  async function refusedWithoutEffect(method: string, url: string, body: string | undefined, headers: Headers) {
    const before = await footprint(t);
    const res = await t.request(method, url, body, headers);
    assert.deepEqual(await footprint(t), before, `${url} ${JSON.stringify(headers)} wrote something`);
    return res;
  }

  const SIMPLE_TYPES = [
    'text/plain',
    'text/plain;charset=UTF-8',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/jsonx',
    'text/json',
  ];

  it('POST /v1/a2a with a body type a page may send without a preflight → 415, the waiting task is not approved', async () => {
    for (const type of SIMPLE_TYPES) {
      for (const body of [approve(waiting), startTask]) {
        // No Origin here: that check (403, below) would answer first.
        const res = await refusedWithoutEffect('POST', RPC_PATH, body, { 'content-type': type });
        assertEnvelope(res, 415, 'unsupported_media_type');
      }
    }
    assert.equal((await t.get(`/v1/runs/${waiting}`)).body.status, 'waiting-approval');
  });

  it('POST /v1/a2a with a body and no Content-Type → 415 (a page can send a Blob without one)', async () => {
    const res = await refusedWithoutEffect('POST', RPC_PATH, approve(waiting), {});
    assertEnvelope(res, 415, 'unsupported_media_type');
  });

  it('REST write routes refuse the same types with 415 and change nothing', async () => {
    const routes: Array<[string, string]> = [
      ['/v1/runs', '{"workflowId":"echo"}'],
      [`/v1/runs/${waiting}/cancel`, '{}'],
      [`/v1/runs/${waiting}/interrupts/review`, '{"resumeValue":{"action":"accept"}}'],
      [`/v1/runs/${waiting}/approvals/review`, '{"action":"accept"}'],
    ];
    for (const [url, body] of routes) {
      for (const type of SIMPLE_TYPES) {
        const res = await refusedWithoutEffect('POST', url, body, { 'content-type': type });
        assertEnvelope(res, 415, 'unsupported_media_type');
      }
    }
    assert.equal((await t.get(`/v1/runs/${waiting}`)).body.status, 'waiting-approval');
  });

  it('application/json (with a charset) and application/a2a+json are read on both surfaces', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/a2a+json']) {
      const rpc = await t.request(
        'POST',
        RPC_PATH,
        JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tasks/get', params: { id: waiting } }),
        { 'content-type': type },
      );
      assert.equal(assertRpcResult(rpc, 9).id, waiting);
      const run = await t.request('POST', '/v1/runs', '{"workflowId":"echo"}', { 'content-type': type });
      assert.equal(run.status, 201, run.text);
    }
  });

  it('CORS is closed by default: no Access-Control-* header, and a preflight is not answered', async () => {
    const preflight = await t.request('OPTIONS', RPC_PATH, undefined, {
      origin: 'https://evil.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type',
    });
    assert.ok(preflight.status >= 400, `preflight answered ${preflight.status}`);
    const read = await t.get(`/v1/runs/${waiting}`, { origin: 'https://evil.example' });
    assert.equal(read.status, 200);
    for (const res of [preflight, read]) {
      assert.deepEqual(
        Object.keys(res.headers).filter((h) => h.startsWith('access-control-')),
        [],
        JSON.stringify(res.headers),
      );
    }
  });

  it('a JSON write from a foreign Origin → 403, before any work', async () => {
    const headers = { 'content-type': 'application/json', origin: 'https://evil.example' };
    for (const [url, body] of [
      [RPC_PATH, approve(waiting)],
      [RPC_PATH, startTask],
      ['/v1/runs', '{"workflowId":"echo"}'],
      [`/v1/runs/${waiting}/cancel`, '{}'],
    ] as const) {
      const res = await refusedWithoutEffect('POST', url, body, headers);
      assertEnvelope(res, 403, 'forbidden');
      assert.match(res.body.message, /HANDOFF_CORS_ORIGINS/);
    }
    // `Origin: null` (sandboxed frames, file: pages) is foreign too.
    assertEnvelope(
      await refusedWithoutEffect('POST', RPC_PATH, startTask, { ...headers, origin: 'null' }),
      403,
      'forbidden',
    );
    assert.equal((await t.get(`/v1/runs/${waiting}`)).body.status, 'waiting-approval');
  });

  it("a write from the host's own origin, or with no Origin (not a browser), is served", async () => {
    const own = await t.request('POST', '/v1/runs', '{"workflowId":"echo"}', {
      'content-type': 'application/json',
      host: '127.0.0.1:8080',
      origin: 'http://127.0.0.1:8080',
    });
    assert.equal(own.status, 201, own.text);
    const none = await t.request('POST', '/v1/runs', '{"workflowId":"echo"}', { 'content-type': 'application/json' });
    assert.equal(none.status, 201, none.text);
  });

  it('a Host that is not one of this host’s names → 421 on every route but the probes; nothing echoed', async () => {
    for (const host of ['attacker.example', 'attacker.example:8080', '127.0.0.1.attacker.example', 'localhost.evil']) {
      for (const url of ['/.well-known/agent-card.json', '/.well-known/openwop', '/v1/a2a/agent.json']) {
        const res = await t.get(url, { host });
        assertEnvelope(res, 421, 'misdirected_request');
        assert.doesNotMatch(res.text, /attacker\.example:|"url"/);
      }
      const write = await refusedWithoutEffect('POST', RPC_PATH, approve(waiting), {
        host,
        'content-type': 'application/json',
      });
      assertEnvelope(write, 421, 'misdirected_request');
      assert.equal((await t.get('/healthz', { host })).status, 200, 'load balancers probe by address');
    }
  });

  it('a Host that is not a valid host[:port] (userinfo, path, bad port) → 421 everywhere, probes too; nothing echoed', async () => {
    const hosts = [
      '127.0.0.1:1@attacker.example',
      'localhost@attacker.example',
      '[::1]@attacker.example',
      '[::1]:80@attacker.example',
      'user:pass@127.0.0.1',
      '127.0.0.1/attacker.example',
      '127.0.0.1:8080/x',
      '127.0.0.1?x=attacker.example',
      '127.0.0.1#attacker.example',
      '127.0.0.1:99999',
      '127.0.0.1:',
      '127.0.0.1:80:81',
      'localhost\\attacker.example',
    ];
    for (const host of hosts) {
      for (const url of ['/.well-known/agent-card.json', '/.well-known/openwop', '/healthz']) {
        const res = await t.get(url, { host });
        assertEnvelope(res, 421, 'misdirected_request');
        assert.doesNotMatch(res.text, /attacker\.example/);
      }
    }
  });

  it('loopback names with any port are served, and the card is built on them', async () => {
    for (const host of ['localhost', 'localhost:1234', '127.0.0.1:8080', '127.3.4.5', '[::1]:8080', 'LOCALHOST:9']) {
      const res = await t.get('/.well-known/agent-card.json', { host });
      assert.equal(res.status, 200, `${host}: ${res.text}`);
      assert.equal(res.body.url, `http://${host}/v1/a2a`);
    }
  });
});

describe('HANDOFF_ALLOWED_HOSTS, --public-url and HANDOFF_CORS_ORIGINS', () => {
  let t: TestHost;
  const APP = 'https://app.example.com';
  before(async () => {
    t = await startTestHost({
      env: {
        HANDOFF_ALLOWED_HOSTS: 'handoff.internal,10.0.0.5',
        HANDOFF_PUBLIC_URL: 'https://handoff.example.org',
        HANDOFF_CORS_ORIGINS: `${APP},http://localhost:5173`,
      },
    });
  });
  after(async () => {
    await t?.close();
  });

  it('listed names and the public URL’s host are served; the card says the public URL', async () => {
    for (const host of ['handoff.internal:8080', '10.0.0.5', 'handoff.example.org', 'localhost:8080']) {
      const res = await t.get('/.well-known/agent-card.json', { host });
      assert.equal(res.status, 200, `${host}: ${res.text}`);
      assert.equal(res.body.url, 'https://handoff.example.org/v1/a2a');
    }
    assertEnvelope(await t.get('/.well-known/agent-card.json', { host: 'other.internal' }), 421, 'misdirected_request');
  });

  it('a preflight from a listed origin is answered with the CORS headers; an unlisted one gets none', async () => {
    const ask = (origin: string) =>
      t.request('OPTIONS', RPC_PATH, undefined, {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      });
    const ok = await ask(APP);
    assert.equal(ok.status, 204, ok.text);
    assert.equal(ok.headers['access-control-allow-origin'], APP);
    assert.match(String(ok.headers['access-control-allow-headers']), /Authorization/i);
    assert.match(String(ok.headers['access-control-allow-methods']), /POST/);
    const other = await ask('https://evil.example');
    assert.equal(other.headers['access-control-allow-origin'], undefined);
  });

  it('writes from a listed origin and from the public URL’s origin are served; others are 403', async () => {
    const write = (origin: string) =>
      t.request('POST', '/v1/runs', '{"workflowId":"echo"}', { 'content-type': 'application/json', origin });
    const app = await write(APP);
    assert.equal(app.status, 201, app.text);
    assert.equal(app.headers['access-control-allow-origin'], APP);
    assert.equal((await write('https://handoff.example.org')).status, 201);
    assert.equal((await write('http://localhost:5173')).status, 201);
    assertEnvelope(await write('https://evil.example'), 403, 'forbidden');
    assertEnvelope(await write('https://app.example.com.evil.example'), 403, 'forbidden');
  });

  it('an event stream read from a listed origin carries the CORS headers too (the stream writes its own head)', async () => {
    const runId = await t.createRun('echo', { prompt: 'hi' });
    await t.waitForStatus(runId, ['completed']);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    const stream = await openSse(`http://localhost:${port}/v1/runs/${runId}/events`, { headers: { origin: APP } });
    await stream.waitForEnd();
    assert.ok(stream.isSse, stream.contentType);
    assert.equal(stream.headers['access-control-allow-origin'], APP);
    assert.match(String(stream.headers.vary), /Origin/);
    assert.match(String(stream.headers.vary), /Accept/);
  });
});

describe('HANDOFF_ALLOWED_HOSTS=*', () => {
  it('turns the Host check off (for a proxy that rewrites Host itself)', async () => {
    const t = await startTestHost({ env: { HANDOFF_ALLOWED_HOSTS: '*' } });
    try {
      assert.equal((await t.get('/.well-known/openwop', { host: 'anything.example' })).status, 200);
      // Any name, but still a name: userinfo never reaches the card's URL.
      const card = await t.get('/.well-known/agent-card.json', { host: '127.0.0.1:1@attacker.example' });
      assertEnvelope(card, 421, 'misdirected_request');
      assert.doesNotMatch(card.text, /attacker\.example/);
    } finally {
      await t.close();
    }
  });
});
