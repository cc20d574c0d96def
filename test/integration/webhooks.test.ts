// Webhook subscriptions (spec/v1/webhooks.md), the legs of the OpenWOP `webhook-negative`
// scenario and the signed delivery: the SSRF guard at registration (loopback, plain http),
// validation errors, unknown ids, tenancy, and a real loopback HTTPS receiver that checks the
// `v1` signature with the secret the registration answered; event-type and tag filters, no
// delivery after DELETE, and the durable outbox: a failed attempt is retried until delivered.
// SQLite always, PostgreSQL too when HANDOFF_TEST_PG_URL is set. Nothing sleeps: "not delivered"
// is shown by the outbox rows the run's commit wrote (none for a filtered-out subscription).
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestHost, bearer, startTestHost } from '../support/host.js';
import { type HttpsReceiver, type ReceivedRequest, startHttpsReceiver } from '../support/https-receiver.js';
import { until } from '../support/until.js';

const ACME = bearer('key-acme-00001');
const GLOBEX = bearer('key-globex-001');
const KEYS = 'key-acme-00001=acme:alice,key-globex-001=globex:bob';

describe('webhook-negative: the SSRF guard and validation (no allow list)', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost({ apiKeys: KEYS });
  });
  after(async () => t?.close());

  it('discovery advertises the webhooks family', async () => {
    const doc = (await t.get('/.well-known/openwop')).body;
    assert.deepEqual(doc.webhooks, { supported: true, durable: false, signatureAlgorithms: ['v1'] });
    // The v1.x-tolerated `capabilities` mirror older suites read (RFC 0073), without the a2a block.
    assert.deepEqual(doc.capabilities, { webhooks: doc.webhooks });
  });

  it('refuses loopback, private and plain-http destinations with webhook_url_rejected', async () => {
    for (const url of [
      'http://127.0.0.1:65535/',
      'https://127.0.0.1:65535/',
      'https://10.0.0.1/',
      'http://example.com/',
    ]) {
      const res = await t.post('/v1/webhooks', { url, events: ['run.completed'], tenantId: 'acme' }, ACME);
      assert.equal(res.status, 400, url);
      assert.equal(res.body.error, 'webhook_url_rejected', url);
    }
    // The address is judged before the tenant (nothing about any tenant is told).
    const foreign = { url: 'http://127.0.0.1:65535/', events: ['run.completed'], tenantId: 'conformance-tenant' };
    const res = await t.post('/v1/webhooks', foreign, ACME);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error, 'webhook_url_rejected');
  });

  it('answers validation_error for a malformed or missing url', async () => {
    const bad = await t.post('/v1/webhooks', { url: 'not a url', events: ['run.completed'] }, ACME);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'validation_error');
    const bare = await t.post('/v1/webhooks', { url: 'not a url' }, ACME);
    assert.equal(bare.status, 400);
    assert.equal(bare.body.error, 'validation_error');
    const missing = await t.post('/v1/webhooks', { eventTypes: ['run.completed'] }, ACME);
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, 'validation_error');
    const none = await t.post('/v1/webhooks', { url: 'https://example.com/h', events: [] }, ACME);
    assert.equal(none.status, 400);
  });

  it('DELETE of an unknown id is 404 subscription_not_found; another tenant is 403', async () => {
    const del = await t.request('DELETE', '/v1/webhooks/wh-does-not-exist', undefined, ACME);
    assert.equal(del.status, 404);
    assert.equal(del.body.error, 'subscription_not_found');
    const other = await t.post(
      '/v1/webhooks',
      { url: 'https://example.com/h', events: ['run.completed'], tenantId: 'globex' },
      ACME,
    );
    assert.equal(other.status, 403);
    assert.equal((await t.post('/v1/webhooks', { url: 'https://example.com/h', events: ['x'] })).status, 401);
  });
});

for (const dialect of DIALECTS) {
  describe(`webhook deliveries (${dialect})`, () => {
    let t: TestHost;
    let rx: HttpsReceiver;
    let caDir: string;
    const hits = new Map<string, ReceivedRequest[]>();
    before(async () => {
      rx = await startHttpsReceiver();
      rx.behave((req) => {
        const seen = [...(hits.get(req.path) ?? []), req];
        hits.set(req.path, seen);
        // The flaky endpoint fails its first attempt: the outbox must try again.
        return { status: req.path === '/flaky' && seen.length === 1 ? 503 : 204 };
      });
      caDir = mkdtempSync(join(tmpdir(), 'handoff-wh-ca-'));
      writeFileSync(join(caDir, 'ca.pem'), rx.caPem);
      t = await startTestHost({
        pg: dialect === 'postgres',
        apiKeys: KEYS,
        env: {
          HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8',
          HANDOFF_PUSH_CA_FILE: join(caDir, 'ca.pem'),
          HANDOFF_PUSH_RETRY_SCHEDULE: '100ms,100ms',
        },
      });
      t.host.webhooks.start();
    });
    after(async () => {
      await t?.close();
      await rx?.close();
      if (caDir) rmSync(caDir, { recursive: true, force: true });
    });

    const register = async (path: string, body: Record<string, unknown>, who = ACME) => {
      const res = await t.post('/v1/webhooks', { url: rx.urlFor('127.0.0.1', path), ...body }, who);
      assert.equal(res.status, 201, res.text);
      return res.body as { webhookId: string; secret: string; secretFingerprint: string; subscriptionId: string };
    };
    const outbox = (runId: string) =>
      t.host.store.db.selectFrom('webhook_deliveries').selectAll().where('run_id', '=', runId).execute();
    const arrived = (path: string, n = 1) =>
      until(`${n} deliveries at ${path}`, async () =>
        (hits.get(path)?.length ?? 0) >= n ? hits.get(path) : undefined,
      );

    it('registers with a one-time secret and delivers matching events signed v1', async () => {
      // Registered first, so its deliveries would come before the matching hook's.
      await register('/other-tag', { events: ['run.completed'], tags: ['staging'] });
      await register('/other-type', { events: ['run.failed'] });
      const hook = await register('/match', { events: ['run.completed'], tags: ['prod'] });
      assert.match(hook.secret, /^[0-9a-f]{64}$/);
      assert.equal(hook.subscriptionId, hook.webhookId);
      const run = await t.post('/v1/runs', { workflowId: 'echo', inputs: { prompt: 'hi' }, tags: ['prod'] }, ACME);
      assert.equal(run.status, 201);
      const [req] = (await arrived('/match')) as ReceivedRequest[];
      const h = req?.headers as Record<string, string>;
      assert.equal(h['x-openwop-webhook-id'], hook.webhookId);
      assert.equal(h['x-openwop-event-type'], 'run.completed');
      assert.equal(h['x-openwop-signature-algorithm'], 'v1');
      const expected = createHmac('sha256', hook.secret)
        .update(`${h['x-openwop-timestamp']}.${req?.body}`)
        .digest('hex');
      assert.equal(h['x-openwop-signature'], `sha256=${expected}`);
      const body = JSON.parse(String(req?.body));
      assert.equal(body.runId, run.body.runId);
      assert.equal(body.workspaceId, 'acme');
      assert.equal(body.event.type, 'run.completed');
      assert.equal(typeof body.event.sequence, 'number');
      const rows = await outbox(run.body.runId);
      assert.deepEqual(
        rows.map((r) => [r.webhook_id, r.event_type]),
        [[hook.webhookId, 'run.completed']],
        'a run without the tag, or an event type not asked for, is not enqueued',
      );
      // The secret is stored sealed, never as given.
      const row = await t.host.store.db
        .selectFrom('webhooks')
        .selectAll()
        .where('webhook_id', '=', hook.webhookId)
        .executeTakeFirstOrThrow();
      assert.notEqual(row.secret, hook.secret);
      assert.equal(row.secret_fingerprint, hook.secretFingerprint);
    });

    it('retries a failed delivery from the outbox until the receiver takes it', async () => {
      const hook = await register('/flaky', { events: ['run.completed'], tags: ['flaky'] });
      const run = await t.post('/v1/runs', { workflowId: 'echo', inputs: { prompt: 'x' }, tags: ['flaky'] }, ACME);
      const [first, second] = (await arrived('/flaky', 2)) as ReceivedRequest[];
      assert.equal(first?.body, second?.body, 'the same delivery, sent again');
      assert.equal(second?.headers['x-openwop-webhook-id'], hook.webhookId);
      const row = await until('the delivery settled', async () => {
        const [r] = await outbox(run.body.runId);
        return r?.state === 'delivered' ? r : undefined;
      });
      assert.equal(row.attempts, 2);
      assert.equal(row.last_status, 204);
    });

    it('delivers nothing after DELETE, and nothing of another tenant', async () => {
      const gone = await register('/deleted', { events: ['run.completed'] });
      await register('/globex', { events: ['run.completed'] }, GLOBEX);
      assert.equal(
        (await t.request('DELETE', `/v1/webhooks/${gone.webhookId}?tenantId=acme`, undefined, ACME)).status,
        204,
      );
      assert.equal((await t.request('DELETE', `/v1/webhooks/${gone.webhookId}`, undefined, ACME)).status, 404);
      const later = await register('/later', { events: ['run.completed'] });
      assert.ok(later.webhookId);
      const run = await t.post('/v1/runs', { workflowId: 'echo', inputs: { prompt: 'again' } }, ACME);
      await arrived('/later');
      const rows = await outbox(run.body.runId);
      assert.deepEqual(
        rows.map((r) => r.webhook_id),
        [later.webhookId],
        'only the live subscription of the run tenant',
      );
      assert.equal(hits.get('/deleted'), undefined);
      assert.equal(hits.get('/globex'), undefined);
    });
  });
}
