// The discovery document as the OpenWOP suite's discovery and a2a-card-runtime-consistency legs
// read it: the `a2a` block's RFC 0152 fields and the card at its agentCardUrl (1.0-shaped, its
// interfaces' versions the block's protocolVersions, the preferred first, flags equal), while the
// header-less well-known card stays the 0.3 card the 0.3 SDK clients read; auth-scoped discovery
// (RFC 0011, same endpoint); ETag / Capabilities-Etag (RFC 0165 §C.2); the interrupt family (RFC 0104).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestHost, bearer, startTestHost } from '../support/host.js';

describe('OpenWOP discovery: the a2a block and its card, auth-scoped view, validators', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost({ apiKeys: 'key-acme-00001=acme:alice' });
  });
  after(async () => t?.close());

  it('the a2a block advertises RFC 0152 versions, preferring 1.0', async () => {
    const { a2a } = (await t.get('/.well-known/openwop')).body;
    assert.deepEqual(a2a.protocolVersions, ['1.0', '0.3']);
    assert.equal(a2a.preferredVersion, '1.0');
    assert.ok(a2a.profiles.includes('a2a-1.0'));
    assert.ok(a2a.protocolVersions.includes(a2a.preferredVersion));
  });

  it('the interrupt family advertises approver routing by group and role, without audience (RFC 0104)', async () => {
    const doc = (await t.get('/.well-known/openwop')).body;
    assert.deepEqual(doc.interrupt, {
      approverRouting: { supported: true, refKinds: ['group', 'role'], audience: false },
    });
    // A root family only: the capabilities mirror carries webhooks alone.
    assert.deepEqual(Object.keys(doc.capabilities), ['webhooks']);
  });

  it('the card at agentCardUrl, fetched without A2A-Version, is the 1.0 card consistent with the block', async () => {
    const { a2a } = (await t.get('/.well-known/openwop')).body;
    const url = new URL(a2a.agentCardUrl);
    const card = (await t.get(url.pathname + url.search, { accept: 'application/json' })).body;
    assert.equal(card.url, undefined, 'a card with both shapes is neither');
    assert.equal(card.protocolVersion, undefined);
    const versions = [...new Set(card.supportedInterfaces.map((i: { protocolVersion: string }) => i.protocolVersion))];
    assert.deepEqual(versions.sort(), [...a2a.protocolVersions].sort());
    assert.equal(card.supportedInterfaces[0].protocolVersion, a2a.preferredVersion);
    assert.ok(
      card.supportedInterfaces.some(
        (i: { protocolBinding: string; protocolVersion: string }) =>
          i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0',
      ),
    );
    assert.equal(card.capabilities.streaming, a2a.streaming);
    assert.equal(card.capabilities.pushNotifications, a2a.pushNotifications);
    assert.ok(card.skills.length > 0);
  });

  it('the well-known card without A2A-Version stays the 0.3 card (url, protocolVersion)', async () => {
    const card = (await t.get('/.well-known/agent-card.json')).body;
    assert.equal(typeof card.url, 'string');
    assert.equal(card.protocolVersion, '0.3.0');
  });

  it('auth-scoped discovery: the same endpoint with a key adds the caller, privately cached', async () => {
    const anon = await t.get('/.well-known/openwop');
    assert.deepEqual(anon.body.discovery, { authScoped: { supported: true, mode: 'same-endpoint' } });
    assert.equal(anon.body.caller, undefined);
    assert.match(String(anon.headers['cache-control']), /^public/);
    const authed = await t.get('/.well-known/openwop', bearer('key-acme-00001'));
    assert.equal(authed.status, 200);
    for (const k of ['protocolVersion', 'supportedEnvelopes', 'schemaVersions', 'limits'])
      assert.ok(k in authed.body, k);
    assert.deepEqual(authed.body.caller, { tenantId: 'acme', principalId: 'alice' });
    assert.match(String(authed.headers['cache-control']), /^private/);
    assert.notEqual(authed.headers.etag, anon.headers.etag);
    assert.equal(authed.headers.vary, 'Authorization');
  });

  it('ETag and Capabilities-Etag are stable and If-None-Match answers 304', async () => {
    const a = await t.get('/.well-known/openwop');
    const b = await t.get('/.well-known/openwop');
    assert.equal(a.headers['capabilities-etag'], b.headers['capabilities-etag']);
    const again = await t.get('/.well-known/openwop', { 'if-none-match': String(a.headers.etag) });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
  });
});
