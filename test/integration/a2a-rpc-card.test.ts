// A2A discovery and authentication (docs/protocol/a2a.md#v03-agent-card; docs/protocol/openwop.md#discovery "Discovery
// and card"): the Agent Card at /.well-known/agent-card.json and /v1/a2a/agent.json, the root `a2a`
// block of /.well-known/openwop (validated against schemas/capabilities-a2a.schema.json), the
// public URL setting, and the 401 of the JSON-RPC endpoint when API keys are configured. The card
// is built per request from configuration, not from the database, so SQLite alone is enough here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { a2aClient, assertRpcError, assertSchema, rpcRaw, textMessage, validateA2ABlock } from '../support/a2a.js';
import { DEMO_SKILLS, type Headers, type Json, type TestHost, bearer, startTestHost } from '../support/host.js';

const KEY_ALICE = 'key-alice-0001';
const API_KEYS = `${KEY_ALICE}=t1:alice`;
const SKILLS = DEMO_SKILLS;
const CARD_PATHS = ['/.well-known/agent-card.json', '/v1/a2a/agent.json'];

/** Card and discovery document, read without credentials. */
async function discovery(t: TestHost, headers: Headers = {}): Promise<{ cards: Json[]; doc: Json }> {
  const cards: Json[] = [];
  for (const path of CARD_PATHS) {
    const res = await t.get(path, headers);
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    cards.push(res.body);
  }
  const res = await t.get('/.well-known/openwop', headers);
  assert.equal(res.status, 200, res.text);
  return { cards, doc: res.body };
}

/** What every card and `a2a` block of this host must satisfy, whatever the base URL. */
function checkCardAndBlock(card: Json, block: Json, workflowIds: string[]): void {
  assert.equal(card.protocolVersion, '0.3.0');
  assert.equal(card.name, 'Handoff');
  assert.equal(typeof card.description, 'string');
  assert.equal(typeof card.version, 'string');
  const url = new URL(card.url); // absolute, or this throws
  assert.ok(['http:', 'https:'].includes(url.protocol));
  assert.ok(card.url.endsWith('/v1/a2a'), card.url);
  assert.equal(card.preferredTransport, 'JSONRPC');
  assert.ok(card.additionalInterfaces.some((i: Json) => i.url === card.url && i.transport === 'JSONRPC'));
  assert.ok(Array.isArray(card.defaultInputModes) && card.defaultInputModes.length > 0);
  assert.ok(Array.isArray(card.defaultOutputModes) && card.defaultOutputModes.length > 0);
  // One skill per workflow, id = workflowId, each with the required AgentSkill fields.
  assert.deepEqual(card.skills.map((s: Json) => s.id).sort(), [...workflowIds].sort());
  for (const s of card.skills) {
    assert.equal(typeof s.name, 'string');
    assert.ok(s.name.length > 0);
    assert.equal(typeof s.description, 'string');
    assert.ok(s.description.length > 0);
    assert.ok(Array.isArray(s.tags));
  }
  // No extended card is advertised (the endpoint answers -32007).
  assert.ok(card.supportsAuthenticatedExtendedCard !== true);

  assertSchema(validateA2ABlock, block, 'the a2a discovery block');
  assert.equal(block.supported, true);
  assert.equal(block.durableTasks, true);
  const cardUrl = new URL(block.agentCardUrl);
  assert.ok(['http:', 'https:'].includes(cardUrl.protocol));
  assert.equal(cardUrl.pathname.endsWith('/.well-known/agent-card.json'), true, block.agentCardUrl);
  // The card's capabilities equal the block's flags (RFC 0152 §C).
  assert.equal(card.capabilities.streaming, block.streaming);
  assert.equal(card.capabilities.pushNotifications, block.pushNotifications);
  // Advertise only what is wired: streaming and push both work.
  assert.equal(block.streaming, true);
  assert.equal(block.pushNotifications, true);
}

describe('A2A card, discovery and auth (API keys configured)', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost({ apiKeys: API_KEYS });
  });
  after(async () => {
    await t?.close();
  });

  it('POST /v1/a2a without or with a wrong Authorization → HTTP 401 + WWW-Authenticate, nothing started', async () => {
    const before = await t.host.store.runs.count();
    const body = { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: textMessage('x') } };
    for (const headers of [
      {},
      bearer('key-not-configured'),
      { authorization: 'Basic a2V5LWFsaWNlLTAwMDE6' },
      bearer(`${KEY_ALICE}x`),
    ]) {
      const res = await rpcRaw(t, body, headers);
      assert.equal(res.status, 401, res.text);
      assert.match(String(res.headers['www-authenticate']), /^Bearer/);
      assert.equal(res.body.result, undefined);
    }
    // Even a malformed body is refused before it is read.
    const bad = await rpcRaw(t, '{not json', {});
    assert.equal(bad.status, 401);
    assert.equal(await t.host.store.runs.count(), before);
  });

  it('the host read /v1/a2a/tasks/{id} is authenticated too', async () => {
    const res = await t.get('/v1/a2a/tasks/run_whatever');
    assert.equal(res.status, 401);
    assert.match(String(res.headers['www-authenticate']), /^Bearer/);
  });

  it('with the key, the same request is answered', async () => {
    const task = await a2aClient(t, bearer(KEY_ALICE)).sendOk(textMessage('authorized'));
    assert.equal(task.status.state, 'completed');
  });

  it('the card stays public at both paths, identical, and declares the bearer scheme', async () => {
    const { cards, doc } = await discovery(t);
    const [card, alias] = cards;
    assert.deepEqual(alias, card);
    checkCardAndBlock(card, doc.a2a, SKILLS);
    assert.deepEqual(card.securitySchemes, { bearer: { type: 'http', scheme: 'bearer' } });
    assert.deepEqual(card.security, [{ bearer: [] }]);
    for (const [name] of Object.entries(card.securitySchemes)) {
      assert.ok(
        card.security.some((s: Json) => name in s),
        `security does not use ${name}`,
      );
    }
    // No secret in the public card.
    assert.ok(!JSON.stringify(card).includes(KEY_ALICE));
    assert.ok(!JSON.stringify(doc).includes(KEY_ALICE));
  });

  it('the card is cacheable: public max-age, an ETag per version, If-None-Match answered 304 without a body', async () => {
    const tags = new Set<string>();
    for (const path of CARD_PATHS) {
      for (const version of [{}, { 'a2a-version': '1.0' }]) {
        const res = await t.get(path, version);
        assert.equal(res.status, 200, res.text);
        assert.match(String(res.headers['cache-control']), /^public, max-age=[1-9]\d*$/);
        const etag = String(res.headers.etag);
        assert.match(etag, /^"[\w-]+"$/, 'a strong ETag');
        assert.equal((await t.get(path, version)).headers.etag, etag, 'the same bytes, the same tag');
        tags.add(etag);
        for (const asked of [etag, `"stale", W/${etag}`, '*']) {
          const cached = await t.get(path, { ...version, 'if-none-match': asked });
          assert.equal(cached.status, 304, `${path} If-None-Match: ${asked}`);
          assert.equal(cached.text, '');
          assert.equal(cached.headers.etag, etag);
          assert.equal(cached.headers.vary, 'A2A-Version');
          assert.match(String(cached.headers['cache-control']), /^public, max-age=/);
        }
        const stale = await t.get(path, { ...version, 'if-none-match': '"stale"' });
        assert.equal(stale.status, 200);
        assert.deepEqual(stale.body, res.body);
      }
    }
    // Both paths serve the same bytes; each version has its own tag.
    assert.equal(tags.size, 2, [...tags].join());
  });

  it('a wrong or malformed Authorization header does not turn the public card into a 401', async () => {
    for (const headers of [bearer('key-not-configured'), { authorization: 'garbage' }]) {
      const { cards } = await discovery(t, headers);
      assert.equal(cards[0].protocolVersion, '0.3.0');
    }
  });

  it('the discovery document lists a2a as a transport and the same workflows as the card', async () => {
    const { cards, doc } = await discovery(t);
    assert.ok(doc.supportedTransports.includes('a2a'));
    assert.deepEqual([...doc.workflows].sort(), cards[0].skills.map((s: Json) => s.id).sort());
    const wf = await t.get('/v1/workflows', bearer(KEY_ALICE));
    assert.equal(wf.status, 200);
    assert.deepEqual(wf.body.workflows.map((w: Json) => w.id).sort(), SKILLS);
  });

  it('an authenticated -32007 for agent/getAuthenticatedExtendedCard matches the card (no extended card)', async () => {
    const res = await a2aClient(t, bearer(KEY_ALICE)).rpc('agent/getAuthenticatedExtendedCard', undefined, 'ext');
    assertRpcError(res, -32007, 'ext');
  });
});

describe('A2A card and discovery without API keys (loopback mode)', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost();
  });
  after(async () => {
    await t?.close();
  });

  it('the card declares no security scheme', async () => {
    const { cards, doc } = await discovery(t);
    for (const card of cards) {
      checkCardAndBlock(card, doc.a2a, SKILLS);
      assert.ok(!('securitySchemes' in card), JSON.stringify(card.securitySchemes));
      assert.ok(!('security' in card));
    }
  });

  it('without a public URL the URLs are derived from the request, absolute, on one origin', async () => {
    const { cards, doc } = await discovery(t);
    const card = cards[0];
    assert.equal(new URL(card.url).origin, new URL(doc.a2a.agentCardUrl).origin);
    assert.equal(new URL(doc.a2a.agentCardUrl).pathname, '/.well-known/agent-card.json');
    assert.equal(new URL(card.url).pathname, '/v1/a2a');
  });
});

describe('A2A card and discovery with a public URL', () => {
  const PUBLIC = 'https://handoff.example.com';
  let t: TestHost;
  before(async () => {
    // evil.example.net is allowed as a Host (else 421: test/integration/csrf-rebinding.test.ts), to
    // show that even an allowed foreign Host never reaches the card.
    t = await startTestHost({
      apiKeys: API_KEYS,
      env: { HANDOFF_PUBLIC_URL: `${PUBLIC}/`, HANDOFF_ALLOWED_HOSTS: 'evil.example.net' },
    });
  });
  after(async () => {
    await t?.close();
  });

  it('--public-url (flags.publicUrl) becomes config.publicUrl, trailing slash trimmed, \
and wins over the environment', () => {
    const env = { HANDOFF_PUBLIC_URL: 'https://env.example.com' };
    assert.equal(
      loadConfig({ port: '0', publicUrl: 'https://flag.example.com/' }, env).publicUrl,
      'https://flag.example.com',
    );
    assert.equal(loadConfig({ port: '0' }, env).publicUrl, 'https://env.example.com');
    assert.equal(loadConfig({ port: '0' }, {}).publicUrl, undefined);
    assert.equal(t.config.publicUrl, PUBLIC);
  });

  it('the card url and the block agentCardUrl are built on it, whatever the Host header says', async () => {
    const variants: Headers[] = [
      {},
      { host: 'evil.example.net' },
      { host: 'evil.example.net', 'x-forwarded-host': 'evil.example.org', 'x-forwarded-proto': 'http' },
    ];
    for (const headers of variants) {
      const { cards, doc } = await discovery(t, headers);
      for (const card of cards) {
        checkCardAndBlock(card, doc.a2a, SKILLS);
        assert.equal(card.url, `${PUBLIC}/v1/a2a`);
        assert.deepEqual(card.additionalInterfaces, [{ url: `${PUBLIC}/v1/a2a`, transport: 'JSONRPC' }]);
      }
      assert.equal(doc.a2a.agentCardUrl, `${PUBLIC}/.well-known/agent-card.json?A2A-Version=1.0`);
    }
  });
});
