// One outbound HTTP call against real loopback servers (HTTPS with the test CA, and plain HTTP),
// through the real egress guard. Names resolve through the guard's lookup seam; nothing here
// reaches beyond loopback: refused destinations are never dialled.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { Agent } from 'undici';
import { createEgressPolicy, type EgressPolicy } from '../../src/egress/address.js';
import { createGuardedDispatcher } from '../../src/egress/dispatcher.js';
import { httpCall, type HttpCallRequest } from '../../src/calls/http.js';
import { resolverFor } from '../support/dns.js';
import { failureOf } from '../support/outcomes.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.js';

const KEY = 'run-1:fetch:0';
const lookup = resolverFor({
  'api.handoff.test': '127.0.0.1',
  'other.handoff.test': '127.0.0.1',
  'plain.handoff.test': '127.0.0.1',
  'evil.handoff.test': '10.0.0.1',
  'mixed.handoff.test': ['127.0.0.1', '10.0.0.1'],
});
/** The outbound-call policy of a deployment that allow-lists its test services by name. */
const allowHosts = createEgressPolicy({ allowHosts: ['api.handoff.test', 'other.handoff.test', 'plain.handoff.test'] });
const strict = createEgressPolicy();

describe('httpCall', () => {
  let rx: HttpsReceiver;
  let other: HttpsReceiver;
  let plain: HttpsReceiver;
  const dispatchers: Agent[] = [];

  const call = (request: HttpCallRequest, policy: EgressPolicy = allowHosts, redact?: (t: string) => string) => {
    const dispatcher = createGuardedDispatcher({ policy, lookup, ca: rx.caPem });
    dispatchers.push(dispatcher);
    return httpCall(request, { dispatcher, policy, idempotencyKey: KEY, ...(redact ? { redact } : {}) });
  };
  const api = (path = '/') => rx.urlFor('api.handoff.test', path);
  const seen = () => rx.requests.length + other.requests.length + plain.requests.length;

  before(async () => {
    [rx, other, plain] = await Promise.all([
      startHttpsReceiver(),
      startHttpsReceiver(),
      startHttpsReceiver({ tls: false }),
    ]);
  });
  afterEach(async () => {
    for (const r of [rx, other, plain]) {
      r.requests.length = 0;
      r.responses.length = 0;
      r.behave({ status: 200 });
    }
    await Promise.all(dispatchers.splice(0).map((d) => d.destroy()));
  });
  after(() => Promise.all([rx.close(), other.close(), plain.close()]));

  describe('success', () => {
    it('sends method, query, headers and the Idempotency-Key; returns status, allow-listed headers and parsed JSON', async () => {
      rx.behave({
        status: 200,
        headers: { 'content-type': 'application/json; charset=utf-8', etag: '"v1"', 'x-internal': 'no', 'x-rate': '9' },
        body: '{"items":[1,2]}',
      });
      const out = await call({
        method: 'GET',
        url: api('/items?fixed=1'),
        query: { q: 'a b', tag: ['x', 'y'], n: 3 },
        headers: { Accept: 'application/json', 'Idempotency-Key': 'caller-chosen' },
        responseHeaders: ['X-Rate'],
      });
      assert.deepEqual(out, {
        ok: true,
        status: 200,
        headers: { 'content-type': 'application/json; charset=utf-8', etag: '"v1"', 'x-rate': '9' },
        body: { items: [1, 2] },
      });
      const req = rx.requests[0]!;
      assert.equal(req.method, 'GET');
      assert.equal(req.path, '/items?fixed=1&q=a+b&tag=x&tag=y&n=3');
      assert.equal(req.headers['idempotency-key'], KEY, 'the engine key wins over a caller header');
      assert.equal(req.headers.accept, 'application/json');
      assert.match(String(req.headers['user-agent']), /^handoff\//);
      assert.equal(req.servername, 'api.handoff.test');
    });

    it('sends json as application/json and a raw body as given; a text answer is returned as text', async () => {
      rx.behave({ status: 201, headers: { 'content-type': 'text/plain' }, body: 'created' });
      const out = await call({ method: 'POST', url: api('/a'), json: { a: 1, b: [true, null] } });
      assert.deepEqual(out, { ok: true, status: 201, headers: { 'content-type': 'text/plain' }, body: 'created' });
      assert.equal(rx.requests[0]!.headers['content-type'], 'application/json');
      assert.equal(rx.requests[0]!.body, '{"a":1,"b":[true,null]}');
      rx.behave({ status: 204 });
      const put = await call({ method: 'PUT', url: api('/b'), body: 'x=1', headers: { 'content-type': 'text/csv' } });
      assert.deepEqual(put, { ok: true, status: 204, headers: {}, body: '' });
      assert.equal(rx.requests[1]!.body, 'x=1');
      assert.equal(rx.requests[1]!.headers['content-type'], 'text/csv');
      assert.equal(rx.requests[1]!.headers['idempotency-key'], KEY);
    });

    it('counts only the `expect` statuses as success when given', async () => {
      rx.behave({ status: 404, body: 'none' });
      assert.equal((await call({ method: 'GET', url: api(), expect: [200, 404] })).ok, true);
      rx.behave({ status: 200 });
      const out = failureOf(await call({ method: 'GET', url: api(), expect: [202] }));
      assert.deepEqual([out.code, out.status, out.retryable], ['http_status', 200, false]);
    });

    it('returns null for an empty JSON answer', async () => {
      rx.behave({ status: 200, headers: { 'content-type': 'application/problem+json' } });
      const out = await call({ method: 'DELETE', url: api('/x') });
      assert.ok(out.ok);
      assert.equal(out.body, null);
    });
  });

  describe('failures', () => {
    it('429 with Retry-After seconds is retryable and carries the wait', async () => {
      rx.behave({ status: 429, headers: { 'retry-after': '7' }, body: 'slow down' });
      const out = failureOf(await call({ method: 'GET', url: api() }));
      assert.deepEqual(out, {
        ok: false,
        code: 'http_status',
        retryable: true,
        message: 'unexpected status 429',
        status: 429,
        bodyExcerpt: 'slow down',
        retryAfterMs: 7000,
      });
    });

    it('429 with Retry-After as an HTTP date is retryable and carries the wait until then', async () => {
      rx.behave({ status: 429, headers: { 'retry-after': new Date(Date.now() + 60_000).toUTCString() } });
      const out = failureOf(await call({ method: 'GET', url: api() }));
      assert.equal(out.retryable, true);
      assert.ok(out.retryAfterMs! > 55_000 && out.retryAfterMs! <= 60_000, String(out.retryAfterMs));
    });

    it('502, 503 and 504 are retryable; 500, 400, 401, 404 and 409 are permanent', async () => {
      for (const [status, retryable] of [
        [502, true],
        [503, true],
        [504, true],
        [500, false],
        [400, false],
        [401, false],
        [404, false],
        [409, false],
      ] as const) {
        rx.behave({ status });
        const out = failureOf(await call({ method: 'GET', url: api() }));
        assert.deepEqual([out.code, out.status, out.retryable], ['http_status', status, retryable], `status ${status}`);
      }
    });

    it('a permanent status carries a redacted body excerpt of at most 512 characters', async () => {
      const body = `{"error":"bad token sk-live-123 ${'x'.repeat(2000)}"}`;
      rx.behave({ status: 422, headers: { 'content-type': 'application/json' }, body });
      const out = failureOf(
        await call({ method: 'POST', url: api(), json: {} }, allowHosts, (t) =>
          t.replaceAll('sk-live-123', '[redacted]'),
        ),
      );
      assert.equal(out.retryable, false);
      assert.equal(out.bodyExcerpt!.length, 512);
      assert.ok(out.bodyExcerpt!.startsWith('{"error":"bad token [redacted] xxx'));
    });

    it('a refused connection is a retryable network failure', async () => {
      const port = await new Promise<number>((resolve) => {
        const s = createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as { port: number }).port;
          s.close(() => resolve(p));
        });
      });
      const out = failureOf(await call({ method: 'GET', url: `https://api.handoff.test:${port}/` }));
      assert.deepEqual([out.code, out.retryable], ['network', true]);
      assert.match(out.message, /ECONNREFUSED/);
    });

    it('a connection reset before the answer is a retryable network failure', async () => {
      rx.behave({ reset: true });
      const out = failureOf(await call({ method: 'GET', url: api() }));
      assert.deepEqual([out.code, out.retryable], ['network', true]);
    });

    it('an answer that does not come within timeoutMs is a retryable timeout', async () => {
      rx.behave({ hang: true });
      const out = failureOf(await call({ method: 'GET', url: api(), timeoutMs: 200 }));
      assert.deepEqual(out, { ok: false, code: 'timeout', retryable: true, message: 'the call timed out' });
      assert.equal(rx.requests.length, 1);
    });

    it('an answer larger than responseLimitBytes fails without being read to its end', async () => {
      const total = 32 * 1024 * 1024;
      rx.behave({ status: 200, bodyBytes: total });
      const out = failureOf(await call({ method: 'GET', url: api(), responseLimitBytes: 64 * 1024 }));
      assert.deepEqual([out.code, out.retryable, out.status], ['response_too_large', false, 200]);
      assert.equal(rx.responses[0]!.finished, false, 'the body was not consumed');
      assert.ok(rx.responses[0]!.bytesWritten < total);
    });

    it('a declared Content-Length over the limit fails before reading', async () => {
      rx.behave({ status: 200, headers: { 'content-length': '5000' }, body: 'y'.repeat(5000) });
      const out = failureOf(await call({ method: 'GET', url: api(), responseLimitBytes: 4999 }));
      assert.equal(out.code, 'response_too_large');
      rx.behave({ status: 200, body: 'y'.repeat(5000) });
      assert.equal((await call({ method: 'GET', url: api(), responseLimitBytes: 5000 })).ok, true);
    });

    it('a JSON content type with a body that is not JSON is an invalid response', async () => {
      rx.behave({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"truncated":' });
      const out = failureOf(await call({ method: 'GET', url: api() }));
      assert.deepEqual([out.code, out.retryable, out.bodyExcerpt], ['invalid_response', false, '{"truncated":']);
    });

    it('refuses a malformed request without sending anything', async () => {
      const bad: Array<[HttpCallRequest, RegExp]> = [
        [{ method: 'POST', url: api(), json: {}, body: 'x' }, /json or body/],
        [{ method: 'GET', url: api(), body: 'x' }, /GET has no body/],
        [{ method: 'TRACE', url: api() }, /\/method/],
        [{ method: 'GET', url: api(), headers: { Host: 'elsewhere' } }, /Host is set by the HTTP client/],
        [{ method: 'GET', url: api(), headers: { 'x-a': '1\r\nx-b: 2' } }, /\/headers\/x-a/],
        [{ method: 'GET', url: api(), headers: { 'bad name': '1' } }, /\/headers/],
        [{ method: 'GET', url: api(), timeoutMs: 0 }, /\/timeoutMs/],
        [{ method: 'GET', url: api(), extra: 1 } as unknown as HttpCallRequest, /\/extra/],
        [{ method: 'GET', url: 'not a url' }, /does not parse/],
      ];
      for (const [request, why] of bad) {
        const out = failureOf(await call(request));
        assert.deepEqual([out.code, out.retryable], ['invalid_request', false], JSON.stringify(request));
        assert.match(out.message, why);
      }
      assert.equal(seen(), 0);
    });
  });

  describe('redirects', () => {
    it('are not followed by default: a 3xx is a permanent redirect failure', async () => {
      rx.behave({ status: 302, location: other.urlFor('other.handoff.test', '/next') });
      const out = failureOf(await call({ method: 'GET', url: api() }));
      assert.deepEqual([out.code, out.status, out.retryable], ['redirect', 302, false]);
      assert.match(out.message, /302 redirect to https:\/\/other\.handoff\.test/);
      assert.equal(other.requests.length, 0);
    });

    it('an expected 3xx is the answer, with its Location', async () => {
      rx.behave({ status: 302, location: '/elsewhere' });
      const out = await call({ method: 'GET', url: api(), expect: [302] });
      assert.deepEqual(out, { ok: true, status: 302, headers: { location: '/elsewhere' }, body: '' });
    });

    it('are followed when asked, keeping credentials on the same origin and dropping them across origins', async () => {
      rx.behave((req) =>
        req.path === '/start'
          ? { status: 301, location: '/moved' }
          : { status: 307, location: other.urlFor('other.handoff.test', '/final') },
      );
      other.behave({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"done":true}' });
      const out = await call({
        method: 'GET',
        url: api('/start'),
        followRedirects: true,
        headers: { authorization: 'Bearer s3cret', 'x-api-key': 'k3y', cookie: 'a=b', accept: 'application/json' },
      });
      assert.deepEqual(out, {
        ok: true,
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: { done: true },
      });
      assert.deepEqual(
        rx.requests.map((r) => [r.path, r.headers.authorization, r.headers['x-api-key']]),
        [
          ['/start', 'Bearer s3cret', 'k3y'],
          ['/moved', 'Bearer s3cret', 'k3y'],
        ],
      );
      const final = other.requests[0]!;
      assert.equal(final.path, '/final');
      assert.equal(final.headers.authorization, undefined);
      assert.equal(final.headers['x-api-key'], undefined);
      assert.equal(final.headers.cookie, undefined);
      assert.equal(final.headers.accept, 'application/json');
      assert.equal(final.headers['idempotency-key'], KEY);
    });

    it('re-check every hop: a hop to a private address, a name resolving to one, or plain http is refused', async () => {
      const hops = [
        `https://10.0.0.1:${rx.port}/`,
        `https://[::ffff:7f00:1]:${rx.port}/`,
        `https://evil.handoff.test:${rx.port}/`,
        `https://mixed.handoff.test:${rx.port}/`,
        `https://localhost:${rx.port}/`,
        'https://169.254.169.254/latest/meta-data/',
        `http://other.handoff.test.evil:${plain.port}/`,
        `http://127.0.0.1:${plain.port}/`,
      ];
      for (const hop of hops) {
        rx.behave({ status: 302, location: hop });
        const out = failureOf(await call({ method: 'GET', url: api(), followRedirects: 3 }));
        assert.deepEqual([out.code, out.retryable], ['egress_denied', false], hop);
      }
      assert.equal(rx.requests.length, hops.length, 'only the first hop of each call was made');
      assert.equal(other.requests.length + plain.requests.length, 0);
    });

    it('303 after a POST becomes a GET without a body; 307 repeats the POST with its body', async () => {
      const redirectThenEcho = (path: string, status: number, location: string) =>
        rx.behave((req) => (req.path === path ? { status, location } : { status: 200, body: req.method }));
      redirectThenEcho('/see-other', 303, '/result');
      const out = await call({ method: 'POST', url: api('/see-other'), json: { x: 1 }, followRedirects: true });
      assert.ok(out.ok);
      assert.equal(out.body, 'GET');
      assert.equal(rx.requests[1]!.body, '');
      assert.equal(rx.requests[1]!.headers['content-type'], undefined);
      rx.requests.length = 0;
      redirectThenEcho('/temp', 307, '/kept');
      const kept = await call({ method: 'POST', url: api('/temp'), json: { x: 1 }, followRedirects: true });
      assert.ok(kept.ok);
      assert.equal(kept.body, 'POST');
      assert.equal(rx.requests[1]!.body, '{"x":1}');
    });

    it('stop after the allowed number of hops', async () => {
      rx.behave({ status: 302, location: '/again' });
      const out = failureOf(await call({ method: 'GET', url: api(), followRedirects: 2 }));
      assert.deepEqual([out.code, out.retryable, out.message], ['redirect', false, 'more than 2 redirects']);
      assert.equal(rx.requests.length, 3);
    });
  });

  describe('the egress guard', () => {
    it('refuses SSRF URLs under the default policy without dialling anything', async () => {
      const urls = [
        `https://127.0.0.1:${rx.port}/`,
        `https://[::ffff:7f00:1]:${rx.port}/`,
        `https://[::1]:${rx.port}/`,
        `https://0x7f.1:${rx.port}/`,
        `https://2130706433:${rx.port}/`,
        'https://169.254.169.254/latest/meta-data/',
        'https://10.0.0.1/',
        'https://192.168.1.1/',
        `https://localhost:${rx.port}/`,
        'https://metadata.google.internal/computeMetadata/v1/',
        `https://evil.handoff.test:${rx.port}/`,
        `https://api.handoff.test:${rx.port}/`, // resolves to loopback; the strict policy has no allow list
        `http://api.handoff.test:${plain.port}/`,
        `https://user:pw@api.handoff.test:${rx.port}/`,
      ];
      for (const url of urls) {
        const out = failureOf(await call({ method: 'GET', url }, strict));
        assert.deepEqual([out.code, out.retryable], ['egress_denied', false], url);
      }
      assert.equal(seen(), 0);
    });

    it('lets an allow-listed CIDR reach a loopback https server, but not over plain http', async () => {
      const loopback = createEgressPolicy({ allowCidrs: ['127.0.0.0/8'] });
      assert.equal((await call({ method: 'GET', url: rx.url }, loopback)).ok, true);
      assert.equal((await call({ method: 'GET', url: rx.urlFor('api.handoff.test') }, loopback)).ok, true);
      const http = failureOf(await call({ method: 'GET', url: plain.url }, loopback));
      assert.equal(http.code, 'egress_denied');
      assert.match(http.message, /must use https/);
      assert.equal(plain.requests.length, 0);
    });

    it('lets an allow-listed host be reached over plain http at a private address; userinfo stays refused', async () => {
      plain.behave({ status: 200, body: 'plain' });
      const out = await call({ method: 'GET', url: plain.urlFor('plain.handoff.test', '/x') });
      assert.deepEqual(out, { ok: true, status: 200, headers: {}, body: 'plain' });
      assert.equal(plain.requests[0]!.headers['idempotency-key'], KEY);
      const creds = failureOf(await call({ method: 'GET', url: `http://u:p@plain.handoff.test:${plain.port}/` }));
      assert.equal(creds.code, 'egress_denied');
      const ip = failureOf(await call({ method: 'GET', url: plain.url }));
      assert.equal(ip.code, 'egress_denied', 'the address itself is not allow-listed');
      assert.equal(plain.requests.length, 1);
    });
  });
});
