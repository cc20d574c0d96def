// Quotas that keep one tenant from starving the others: HANDOFF_TENANT_RATE (requests
// per tenant per window; in memory per instance on SQLite, shared by the instances on PostgreSQL)
// and HANDOFF_TENANT_MAX_ACTIVE_RUNS (runs not yet finished). Over either: 429 + Retry-After, a
// JSON-RPC error -32029 on /v1/a2a, nothing written; other tenants are not affected.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  API_KEYS,
  type A2AClient,
  a2aClient,
  assertRpcResult,
  dataMessage,
  KEY_ALICE,
  KEY_EVE,
  skillMessage,
} from '../support/a2a.js';
import {
  bearer,
  DIALECTS,
  footprint,
  type Json,
  PG_URL,
  type Reply,
  startTestHost,
  type TestHost,
} from '../support/host.js';

/** HTTP `status`, Retry-After, and a JSON-RPC error -32029 saying when to retry. */
function assertRpcTryLater(res: Reply, status: number, id: unknown, setting: RegExp): Json {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers['retry-after']), /^\d+$/);
  assert.equal(res.body.jsonrpc, '2.0');
  assert.deepEqual(res.body.id, id);
  assert.equal(res.body.error.code, -32029, res.text);
  assert.match(res.body.error.message, setting);
  assert.equal(res.body.error.data.retryAfterSeconds, Number(res.headers['retry-after']));
  return res.body.error;
}

function assertTooMany(res: Reply, error: string, setting: RegExp): void {
  assert.equal(res.status, 429, res.text);
  assert.match(String(res.headers['retry-after']), /^\d+$/);
  assert.equal(res.body.error, error);
  assert.match(res.body.message, setting);
}

for (const dialect of DIALECTS) {
  describe(`HANDOFF_TENANT_RATE=5/m (${dialect})`, () => {
    let t: TestHost;
    let alice: A2AClient;
    let eve: A2AClient;
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, env: { HANDOFF_TENANT_RATE: '5/m' } });
      alice = a2aClient(t, bearer(KEY_ALICE));
      eve = a2aClient(t, bearer(KEY_EVE));
    });
    after(async () => {
      await t?.close();
    });

    it('a tenant past its rate gets 429 + Retry-After on both surfaces, writing nothing; another tenant and the probes do not', async () => {
      for (let i = 0; i < 5; i++) assert.equal((await t.get('/v1/workflows', alice.headers)).status, 200);
      const before = await footprint(t);
      assertTooMany(
        await t.post('/v1/runs', { workflowId: 'echo' }, alice.headers),
        'rate_limited',
        /HANDOFF_TENANT_RATE/,
      );
      assertRpcTryLater(
        await alice.rpc('message/send', { message: skillMessage('echo', 'x') }, 4),
        429,
        null,
        /HANDOFF_TENANT_RATE/,
      );
      assert.deepEqual(await footprint(t), before);
      // bob shares alice's tenant: the quota is the tenant's.
      assert.equal((await t.get('/v1/workflows', bearer('key-bob-000001'))).status, 429);
      assertRpcResult(await eve.rpc('message/send', { message: skillMessage('echo', 'eve') }));
      assert.equal((await t.get('/healthz')).status, 200);
      assert.equal((await t.get('/.well-known/agent-card.json')).status, 200);
    });
  });

  describe(`HANDOFF_TENANT_MAX_ACTIVE_RUNS=2 (${dialect})`, () => {
    let t: TestHost;
    let alice: A2AClient;
    let eve: A2AClient;
    before(async () => {
      t = await startTestHost({
        pg: dialect === 'postgres',
        apiKeys: API_KEYS,
        env: { HANDOFF_TENANT_MAX_ACTIVE_RUNS: '2' },
      });
      alice = a2aClient(t, bearer(KEY_ALICE));
      eve = a2aClient(t, bearer(KEY_EVE));
    });
    after(async () => {
      await t?.close();
    });

    it('a third open run is refused on both surfaces (429, -32029), replies still go through, a finished run frees a place', async () => {
      // Finished runs do not count.
      assert.equal((await alice.sendOk(skillMessage('echo', 'done'))).status.state, 'completed');
      const first = await alice.sendOk(skillMessage('approval', 'one'));
      const second = await t.post('/v1/runs', { workflowId: 'approval', inputs: { prompt: 'two' } }, alice.headers);
      assert.equal(second.status, 201, second.text);
      await t.waitForStatus(second.body.runId, ['waiting-approval'], alice.headers);

      const before = await footprint(t);
      const rest = await t.post('/v1/runs', { workflowId: 'echo' }, alice.headers);
      assertTooMany(rest, 'too_many_active_runs', /HANDOFF_TENANT_MAX_ACTIVE_RUNS is 2/);
      assertRpcTryLater(
        await alice.rpc('message/send', { message: skillMessage('echo', 'three') }, 'm3'),
        429,
        'm3',
        /HANDOFF_TENANT_MAX_ACTIVE_RUNS/,
      );
      assertRpcTryLater(
        await alice.rpc('message/stream', { message: skillMessage('echo', 'three') }, 's3'),
        429,
        's3',
        /HANDOFF_TENANT_MAX_ACTIVE_RUNS/,
      );
      assert.deepEqual(await footprint(t), before);

      // Another tenant has its own count.
      assert.equal((await eve.sendOk(skillMessage('approval', 'eve'))).status.state, 'input-required');
      // A reply starts nothing: it is served, and ends a run.
      const accepted = await alice.sendOk(dataMessage({ action: 'accept' }, { taskId: first.id }));
      assert.equal(accepted.status.state, 'completed');
      assert.equal((await t.post('/v1/runs', { workflowId: 'echo' }, alice.headers)).status, 201);
    });
  });
}

describe('HANDOFF_TENANT_RATE on PostgreSQL is one window for all the instances', { skip: !PG_URL }, () => {
  let a: TestHost;
  let b: TestHost;
  before(async () => {
    a = await startTestHost({ pg: true, apiKeys: API_KEYS, env: { HANDOFF_TENANT_RATE: '6/m' } });
    // The second instance on the first one's schema (dropped with the first).
    b = await startTestHost({
      apiKeys: API_KEYS,
      env: {
        HANDOFF_TENANT_RATE: '6/m',
        HANDOFF_DATABASE_URL: PG_URL as string,
        HANDOFF_PG_SCHEMA: a.config.pgSchema as string,
        HANDOFF_PG_POOL_SIZE: '2',
      },
    });
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  it('three requests on each instance use up the tenant’s six; the seventh is 429 on either', async () => {
    const headers = bearer(KEY_ALICE);
    for (let i = 0; i < 3; i++) {
      assert.equal((await a.get('/v1/workflows', headers)).status, 200);
      assert.equal((await b.get('/v1/workflows', headers)).status, 200);
    }
    assertTooMany(await a.get('/v1/workflows', headers), 'rate_limited', /HANDOFF_TENANT_RATE/);
    assertTooMany(await b.get('/v1/workflows', headers), 'rate_limited', /HANDOFF_TENANT_RATE/);
    assert.equal((await b.get('/v1/workflows', bearer(KEY_EVE))).status, 200);
  });
});
