// Delivery arm over real sockets, loopback only. No test here reaches a public host: public
// answers are either never dialled (a mixed answer is refused first) or stood in for by
// 127.0.0.2, allowlisted, where nothing listens.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Agent, request } from 'undici';
import { CALL_EGRESS_SETTINGS, createEgressPolicy, type EgressPolicy } from '../../src/egress/address.js';
import { createGuardedDispatcher, type ResolvedAddress } from '../../src/egress/dispatcher.js';
import { parseRetryAfter, retryWaitMs } from '../../src/egress/retry-after.js';
import { deliver } from '../../src/push/deliver.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.js';

const post = {
  headers: { 'content-type': 'application/json' },
  body: '{"kind":"status-update"}',
  timeoutMs: 3000,
  maxResponseBytes: 64 * 1024,
};
const loopbackOnly = createEgressPolicy({ allowCidrs: ['127.0.0.0/8'] });
const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });

describe('guarded delivery', () => {
  let rx: HttpsReceiver;
  const dispatchers: Agent[] = [];
  const make = (
    policy: EgressPolicy,
    lookup?: (h: string) => Promise<ResolvedAddress[]>,
    extra: { connectTimeoutMs?: number } = {},
  ) => {
    const d = createGuardedDispatcher({ policy, ca: rx.caPem, ...(lookup ? { lookup } : {}), ...extra });
    dispatchers.push(d);
    return d;
  };
  const toReceiver = async (_h: string) => [v4('127.0.0.1')];

  before(async () => {
    rx = await startHttpsReceiver();
  });
  afterEach(async () => {
    rx.requests.length = 0;
    rx.responses.length = 0;
    rx.behave({ status: 200 });
    await Promise.all(dispatchers.splice(0).map((d) => d.destroy()));
  });
  after(() => rx.close());

  it('delivers over real TLS with SNI and Host of the original name when the allowlist covers it', async () => {
    const r = await deliver(make(loopbackOnly, toReceiver), rx.urlFor('receiver.test', '/push'), post);
    assert.deepEqual(r, { ok: true, status: 200, permanent: false });
    assert.equal(rx.requests.length, 1);
    assert.equal(rx.requests[0]!.servername, 'receiver.test');
    assert.equal(rx.requests[0]!.headers.host, `receiver.test:${rx.port}`);
    assert.equal(rx.requests[0]!.body, post.body);
  });

  it('refuses the same delivery without the allowlist, and the receiver sees nothing', async () => {
    const r = await deliver(make(createEgressPolicy(), toReceiver), rx.urlFor('receiver.test'), post);
    assert.equal(r.ok, false);
    assert.equal(r.error, 'egress_denied');
    assert.equal(r.permanent, true);
    assert.equal(rx.requests.length, 0);
  });

  it('refuses an IP-literal host itself (net.connect would skip lookup)', async () => {
    let asked = 0;
    const r = await deliver(
      make(createEgressPolicy(), async () => {
        asked++;
        return [];
      }),
      rx.url,
      post,
    );
    assert.equal(r.error, 'egress_denied');
    assert.equal(asked, 0);
    assert.equal(rx.requests.length, 0);
    const ok = await deliver(make(loopbackOnly), rx.url, post);
    assert.equal(ok.ok, true);
    assert.equal(rx.requests[0]!.servername, undefined);
  });

  it('refuses a name that resolves to [public, private]', async () => {
    const r = await deliver(
      make(createEgressPolicy(), async () => [v4('8.8.8.8'), v4('127.0.0.1')]),
      rx.urlFor('mixed.example'),
      post,
    );
    assert.equal(r.error, 'egress_denied');
    assert.equal(r.permanent, true);
    assert.equal(rx.requests.length, 0);
  });

  it('resolves once per connection and dials only that answer (DNS rebinding)', async () => {
    // 127.0.0.2 stands in for "public" (allowlisted, nothing listening); later answers rebind
    // to the receiver. A guard that re-resolved at connect time would reach the receiver.
    const answers = [[v4('127.0.0.2')], [v4('127.0.0.1')]];
    let calls = 0;
    const lookup = async () => answers[Math.min(calls++, 1)]!;
    const policy = createEgressPolicy({ allowCidrs: ['127.0.0.2/32'] });
    const d = make(policy, lookup, { connectTimeoutMs: 1000 });
    const first = await deliver(d, rx.urlFor('rebind.example'), post);
    assert.equal(first.ok, false);
    assert.equal(first.error, 'network'); // ECONNREFUSED at 127.0.0.2: the pinned address was dialled
    assert.equal(calls, 1);
    const second = await deliver(d, rx.urlFor('rebind.example'), post);
    assert.equal(second.error, 'egress_denied');
    assert.equal(rx.requests.length, 0);
  });

  it('destroys the socket when the connected peer is not allowed (backstop)', async () => {
    let checks = 0;
    // Allows the resolve-time check, then refuses everything: only the peer check can catch it.
    const flaky: EgressPolicy = { isAllowedAddress: () => checks++ === 0, isAllowedHost: () => false };
    const r = await deliver(make(flaky, toReceiver), rx.urlFor('receiver.test'), post);
    assert.equal(r.error, 'egress_denied');
    assert.equal(rx.requests.length, 0);
  });

  it('never follows a redirect; a 3xx is a failed, retryable attempt', async () => {
    const other = await startHttpsReceiver();
    try {
      rx.behave({ status: 302, location: other.url });
      const r = await deliver(make(loopbackOnly), rx.url, post);
      assert.deepEqual(r, { ok: false, status: 302, error: 'redirect', permanent: false });
      assert.equal(rx.requests.length, 1);
      assert.equal(other.requests.length, 0);
    } finally {
      await other.close();
    }
  });

  it('reports a timeout as retryable', async () => {
    rx.behave({ status: 200, delayMs: 2000 });
    const started = Date.now();
    const r = await deliver(make(loopbackOnly), rx.url, { ...post, timeoutMs: 300 });
    assert.equal(r.ok, false);
    assert.equal(r.error, 'timeout');
    assert.equal(r.permanent, false);
    assert.ok(Date.now() - started < 1500);
  });

  it('reports a reset connection as a retryable network error', async () => {
    rx.behave({ reset: true });
    const r = await deliver(make(loopbackOnly), rx.url, post);
    assert.equal(r.error, 'network');
    assert.equal(r.permanent, false);
  });

  it('classifies statuses and parses Retry-After', async () => {
    const d = make(loopbackOnly);
    const cases: Array<[number, Record<string, string>, boolean, number | undefined]> = [
      [503, { 'retry-after': '7' }, false, 7000],
      [429, { 'retry-after': new Date(Date.now() + 60_000).toUTCString() }, false, undefined],
      [408, {}, false, undefined],
      [500, {}, false, undefined],
      [404, {}, true, undefined],
      [410, {}, true, undefined],
      [204, {}, false, undefined],
    ];
    for (const [status, headers, permanent, retryAfterMs] of cases) {
      rx.behave({ status, headers });
      const r = await deliver(d, rx.url, post);
      assert.equal(r.status, status);
      assert.equal(r.ok, status < 300, `ok for ${status}`);
      assert.equal(r.permanent, permanent, `permanent for ${status}`);
      if (retryAfterMs !== undefined) assert.equal(r.retryAfterMs, retryAfterMs);
      if (status === 429) assert.ok(r.retryAfterMs! > 55_000 && r.retryAfterMs! <= 60_000);
    }
  });

  it('reads at most the response cap, then drops the connection', async () => {
    rx.behave({ status: 200, bodyBytes: 10 * 1024 * 1024 });
    const r = await deliver(make(loopbackOnly), rx.url, { ...post, maxResponseBytes: 16 * 1024 });
    assert.equal(r.ok, true);
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(rx.responses[0]!.finished, false, 'the 10 MB body was not consumed');
    assert.ok(rx.responses[0]!.bytesWritten < 10 * 1024 * 1024);
  });

  it('refuses http:// and credentials at delivery too', async () => {
    const d = make(loopbackOnly);
    assert.equal((await deliver(d, `http://127.0.0.1:${rx.port}/`, post)).error, 'insecure_scheme');
    assert.equal((await deliver(d, `https://u:p@127.0.0.1:${rx.port}/`, post)).error, 'insecure_scheme');
    assert.equal(rx.requests.length, 0);
  });
});

describe('guarded dispatcher: the host allow list of outbound calls', () => {
  let plain: HttpsReceiver;
  const dispatchers: Agent[] = [];
  const get = (policy: EgressPolicy, url: string, lookup = async () => [v4('127.0.0.1')]) => {
    const dispatcher = createGuardedDispatcher({ policy, lookup });
    dispatchers.push(dispatcher);
    return request(url, { dispatcher }).then((r) => r.body.text().then(() => r.statusCode));
  };

  before(async () => {
    plain = await startHttpsReceiver({ tls: false });
  });
  afterEach(async () => {
    plain.requests.length = 0;
    await Promise.all(dispatchers.splice(0).map((d) => d.destroy()));
  });
  after(() => plain.close());

  it('dials plain http only to an allow-listed host, which may be at a private address', async () => {
    const calls = createEgressPolicy({ allowHosts: ['llm.handoff.test'] });
    assert.equal(await get(calls, plain.urlFor('llm.handoff.test')), 200);
    assert.equal(await get(calls, plain.urlFor('LLM.handoff.test.')), 200);
    assert.equal(plain.requests.length, 2);
  });

  it('refuses plain http at dial time to any other host, even at an allow-listed address', async () => {
    const cidr = createEgressPolicy({ allowCidrs: ['127.0.0.0/8'], allowHosts: ['llm.handoff.test'] });
    await assert.rejects(get(cidr, plain.url), { code: 'EGRESS_DENIED', message: /plain http/ });
    await assert.rejects(get(cidr, plain.urlFor('other.handoff.test')), { code: 'EGRESS_DENIED' });
    assert.equal(plain.requests.length, 0);
  });

  it('still refuses a private answer for a host that is not allow-listed, naming the variable to set', async () => {
    const calls = createEgressPolicy({ allowHosts: ['llm.handoff.test'], settings: CALL_EGRESS_SETTINGS });
    const denied = createGuardedDispatcher({ policy: calls, lookup: async () => [v4('10.0.0.1')] });
    dispatchers.push(denied);
    await assert.rejects(request('https://api.handoff.test/', { dispatcher: denied }), {
      code: 'EGRESS_DENIED',
      message:
        'host api.handoff.test resolves to disallowed address 10.0.0.1 (to allow it, set ' +
        'HANDOFF_EGRESS_ALLOW_HOSTS=api.handoff.test or HANDOFF_EGRESS_ALLOW_CIDRS (its address range))',
    });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads delta-seconds and HTTP dates, ignores garbage', () => {
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter('0', now), 0);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter(['5', '9'], now), 5000);
    assert.equal(parseRetryAfter('-1', now), undefined);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });
});

describe('retryWaitMs', () => {
  it('a longer Retry-After wins, only up to the longest wait; a shorter one or none keeps the own backoff', () => {
    const longest = 8 * 3_600_000;
    assert.equal(retryWaitMs(5_000, 999_999_999_000, longest), longest);
    assert.equal(retryWaitMs(5_000, 60_000, longest), 60_000);
    assert.equal(retryWaitMs(5_000, 1_000, longest), 5_000);
    assert.equal(retryWaitMs(5_000, undefined, longest), 5_000);
    // The caller's own backoff (with its jitter) is its business, even past `longest`.
    assert.equal(retryWaitMs(300, 999_999_999_000, 250), 300);
  });
});
