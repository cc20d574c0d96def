// The run API's refusals (docs/protocol/openwop.md#errors): each bad request gets its precise error
// envelope and writes nothing; authentication and tenancy; discovery, workflows and metrics;
// retention. SQLite always, PostgreSQL too when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type Json, type Reply, type TestHost, bearer, startTestHost } from '../support/host.js';

/** `{error, message, details?}` and nothing else at the top level. */
function assertEnvelope(res: Reply, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error, code, res.text);
  assert.equal(typeof res.body.message, 'string');
  for (const k of Object.keys(res.body))
    assert.ok(['error', 'message', 'details'].includes(k), `extra top-level field ${k}`);
}

const UNKNOWN_RUN = 'run_01a2367c-0000-7000-8000-000000000000';

for (const dialect of DIALECTS) {
  const pg = dialect === 'postgres';

  describe(`bad input writes nothing (${dialect})`, () => {
    let t: TestHost;
    let approvalRun: string;
    before(async () => {
      t = await startTestHost({ pg });
      approvalRun = await t.createRun('approval', { prompt: 'x' });
      await t.waitForStatus(approvalRun, ['waiting-approval']);
    });
    after(async () => {
      await t?.close();
    });

    /** Send a refused create and check that no run was written. */
    async function refusedCreate(send: () => Promise<Reply>, status: number, code: string): Promise<Reply> {
      const runs = await t.host.store.runs.count();
      const res = await send();
      assertEnvelope(res, status, code);
      assert.equal(await t.host.store.runs.count(), runs, 'no run written');
      return res;
    }

    it('malformed JSON → 400 validation_error', async () => {
      await refusedCreate(
        () => t.request('POST', '/v1/runs', '{"workflowId": "echo",', { 'content-type': 'application/json' }),
        400,
        'validation_error',
      );
    });

    it('an empty JSON body → 400 validation_error', async () => {
      await refusedCreate(
        () => t.request('POST', '/v1/runs', '', { 'content-type': 'application/json' }),
        400,
        'validation_error',
      );
    });

    it('a body that is not an object → 400 validation_error', async () => {
      await refusedCreate(
        () => t.request('POST', '/v1/runs', '[1,2]', { 'content-type': 'application/json' }),
        400,
        'validation_error',
      );
    });

    it('wrong content-type → 415', async () => {
      await refusedCreate(
        () => t.request('POST', '/v1/runs', 'workflowId=echo', { 'content-type': 'application/x-www-form-urlencoded' }),
        415,
        'unsupported_media_type',
      );
    });

    it('text/plain content-type → 415', async () => {
      await refusedCreate(
        () => t.request('POST', '/v1/runs', '{"workflowId":"echo"}', { 'content-type': 'text/plain' }),
        415,
        'unsupported_media_type',
      );
    });

    it('unknown workflow → 400 validation_error with details.available', async () => {
      const res = await refusedCreate(
        () => t.post('/v1/runs', { workflowId: 'no-such-flow' }),
        400,
        'validation_error',
      );
      assert.ok(Array.isArray(res.body.details.available));
      for (const id of ['echo', 'approval', 'clarify', 'steps', 'fail'])
        assert.ok(res.body.details.available.includes(id), id);
    });

    it('invalid inputs (steps: "x") → 400 validation_error naming the field', async () => {
      const res = await refusedCreate(
        () => t.post('/v1/runs', { workflowId: 'steps', inputs: { steps: 'x' } }),
        400,
        'validation_error',
      );
      assert.match(JSON.stringify(res.body), /steps/);
      await refusedCreate(
        () => t.post('/v1/runs', { workflowId: 'steps', inputs: { steps: -1 } }),
        400,
        'validation_error',
      );
    });

    it('missing workflowId, inputs not an object, unknown top-level field → 400', async () => {
      await refusedCreate(() => t.post('/v1/runs', { inputs: {} }), 400, 'validation_error');
      await refusedCreate(() => t.post('/v1/runs', { workflowId: 'echo', inputs: 'hi' }), 400, 'validation_error');
      await refusedCreate(() => t.post('/v1/runs', { workflowId: 'echo', surprise: true }), 400, 'validation_error');
      await refusedCreate(
        () => t.post('/v1/runs', { workflowId: 'echo', tags: 'not-a-list' }),
        400,
        'validation_error',
      );
    });

    it('oversized body → 413 payload_too_large', async () => {
      const small = await startTestHost({ pg, env: { HANDOFF_BODY_LIMIT: '2048' } });
      try {
        const runs = await small.host.store.runs.count();
        const res = await small.post('/v1/runs', { workflowId: 'echo', inputs: { prompt: 'x'.repeat(10 * 1024) } });
        assertEnvelope(res, 413, 'payload_too_large');
        assert.equal(await small.host.store.runs.count(), runs);
        // Just under the limit is fine.
        const ok = await small.post('/v1/runs', { workflowId: 'echo', inputs: { prompt: 'x'.repeat(1024) } });
        assert.equal(ok.status, 201, ok.text);
      } finally {
        await small.close();
      }
    });

    it('unknown run on GET, cancel, interrupts, poll → 404 not_found', async () => {
      const runs = await t.host.store.runs.count();
      assertEnvelope(await t.get(`/v1/runs/${UNKNOWN_RUN}`), 404, 'not_found');
      assertEnvelope(await t.post(`/v1/runs/${UNKNOWN_RUN}/cancel`), 404, 'not_found');
      assertEnvelope(
        await t.post(`/v1/runs/${UNKNOWN_RUN}/interrupts/review`, { resumeValue: { action: 'accept' } }),
        404,
        'not_found',
      );
      assertEnvelope(await t.post(`/v1/runs/${UNKNOWN_RUN}/approvals/review`, { action: 'accept' }), 404, 'not_found');
      assertEnvelope(await t.get(`/v1/runs/${UNKNOWN_RUN}/events/poll?lastSequence=-1&timeout=1`), 404, 'not_found');
      assert.equal(await t.host.store.runs.count(), runs);
    });

    it('unknown node id on interrupts → 404 interrupt_not_found, nothing changes', async () => {
      const before = (await t.events(approvalRun)).length;
      assertEnvelope(
        await t.post(`/v1/runs/${approvalRun}/interrupts/nope`, { resumeValue: { action: 'accept' } }),
        404,
        'interrupt_not_found',
      );
      // The draft node exists but never opened an interrupt.
      assertEnvelope(
        await t.post(`/v1/runs/${approvalRun}/interrupts/draft`, { resumeValue: { action: 'accept' } }),
        404,
        'interrupt_not_found',
      );
      assert.equal((await t.events(approvalRun)).length, before);
      assert.equal((await t.get(`/v1/runs/${approvalRun}`)).body.status, 'waiting-approval');
    });

    it('a resolve body without resumeValue, or with extra fields → 400', async () => {
      const before = (await t.events(approvalRun)).length;
      assertEnvelope(
        await t.post(`/v1/runs/${approvalRun}/interrupts/review`, { action: 'accept' }),
        400,
        'validation_error',
      );
      assertEnvelope(
        await t.post(`/v1/runs/${approvalRun}/interrupts/review`, { resumeValue: { action: 'accept' }, extra: 1 }),
        400,
        'validation_error',
      );
      assert.equal((await t.events(approvalRun)).length, before);
    });

    it('poll with lastSequence=abc, timeout out of range, unknown query field → 400', async () => {
      assertEnvelope(await t.get(`/v1/runs/${approvalRun}/events/poll?lastSequence=abc`), 400, 'validation_error');
      assertEnvelope(
        await t.get(`/v1/runs/${approvalRun}/events/poll?lastSequence=0&timeout=61`),
        400,
        'validation_error',
      );
      assertEnvelope(await t.get(`/v1/runs/${approvalRun}/events/poll?cursor=3`), 400, 'validation_error');
    });

    it('cancel with an unknown field → 400, the run is untouched', async () => {
      assertEnvelope(await t.post(`/v1/runs/${approvalRun}/cancel`, { why: 'x' }), 400, 'validation_error');
      assert.equal((await t.get(`/v1/runs/${approvalRun}`)).body.status, 'waiting-approval');
    });

    it('unversioned or unknown routes → 404 envelope', async () => {
      assertEnvelope(await t.get('/runs'), 404, 'not_found');
    });
  });

  describe(`auth and tenancy (${dialect})`, () => {
    const ALICE = 'key-aaaaaaaa';
    const BOB = 'key-bbbbbbbb';
    let t: TestHost;
    let aliceRun: string;
    before(async () => {
      t = await startTestHost({ pg, apiKeys: `${ALICE}=t1:alice,${BOB}=t2:bob` });
      aliceRun = await t.createRun('approval', { prompt: 'secret' }, bearer(ALICE));
      await t.waitForStatus(aliceRun, ['waiting-approval'], bearer(ALICE));
    });
    after(async () => {
      await t?.close();
    });

    it('no Authorization → 401 unauthenticated with WWW-Authenticate; nothing written', async () => {
      const runs = await t.host.store.runs.count();
      const res = await t.post('/v1/runs', { workflowId: 'echo' });
      assertEnvelope(res, 401, 'unauthenticated');
      assert.match(String(res.headers['www-authenticate']), /^Bearer/);
      assertEnvelope(await t.get(`/v1/runs/${aliceRun}`), 401, 'unauthenticated');
      assertEnvelope(await t.get('/v1/workflows/echo'), 401, 'unauthenticated');
      assert.equal(await t.host.store.runs.count(), runs);
    });

    it('a wrong key, a near miss, a non-Bearer scheme → 401', async () => {
      for (const authorization of [
        'Bearer key-cccccccc',
        `Bearer ${ALICE}x`,
        `Bearer ${ALICE.slice(0, -1)}`,
        `Basic ${ALICE}`,
        ALICE,
      ]) {
        const res = await t.get(`/v1/runs/${aliceRun}`, { authorization });
        assertEnvelope(res, 401, 'unauthenticated');
        assert.ok(res.headers['www-authenticate']);
      }
    });

    it('/.well-known/openwop and /healthz stay public', async () => {
      const disc = await t.get('/.well-known/openwop');
      assert.equal(disc.status, 200, disc.text);
      assert.equal(disc.body.protocolVersion, '1.0');
      const health = await t.get('/healthz');
      assert.equal(health.status, 200, health.text);
      assert.equal(health.body.status, 'ok');
      assert.equal(health.body.database, dialect);
    });

    it("another tenant's run looks exactly like an unknown one (read, cancel, resolve, poll)", async () => {
      const before = (await t.events(aliceRun, bearer(ALICE))).length;
      const probes: Array<[string, (id: string) => Promise<Reply>]> = [
        ['GET run', (id) => t.get(`/v1/runs/${id}`, bearer(BOB))],
        ['cancel', (id) => t.post(`/v1/runs/${id}/cancel`, {}, bearer(BOB))],
        [
          'resolve',
          (id) => t.post(`/v1/runs/${id}/interrupts/review`, { resumeValue: { action: 'accept' } }, bearer(BOB)),
        ],
        ['legacy approve', (id) => t.post(`/v1/runs/${id}/approvals/review`, { action: 'reject' }, bearer(BOB))],
        ['poll', (id) => t.get(`/v1/runs/${id}/events/poll?lastSequence=-1&timeout=1`, bearer(BOB))],
      ];
      const strip = (body: Json, id: string): string => JSON.stringify(body).split(id).join('<id>');
      for (const [name, probe] of probes) {
        const theirs = await probe(aliceRun);
        const none = await probe(UNKNOWN_RUN);
        assertEnvelope(theirs, 404, 'not_found');
        assert.equal(theirs.status, none.status, name);
        assert.equal(strip(theirs.body, aliceRun), strip(none.body, UNKNOWN_RUN), name);
        assert.equal(theirs.headers['content-type'], none.headers['content-type'], name);
      }
      // Alice's run did not move.
      const snap = await t.get(`/v1/runs/${aliceRun}`, bearer(ALICE));
      assert.equal(snap.body.status, 'waiting-approval');
      assert.equal((await t.events(aliceRun, bearer(ALICE))).length, before);
    });

    it('the run belongs to the key: owner is tenant t1, principal alice; approvedBy is the resolver', async () => {
      const snap = (await t.get(`/v1/runs/${aliceRun}`, bearer(ALICE))).body;
      assert.deepEqual(snap.owner, { tenant: 't1', principal: 'alice' });
    });

    it('idempotency keys are per tenant: the same key from bob creates his own run', async () => {
      const key = `shared-${Date.now()}`;
      const body = { workflowId: 'echo', inputs: { prompt: 'k' } };
      const a = await t.post('/v1/runs', body, { ...bearer(ALICE), 'idempotency-key': key });
      const b = await t.post('/v1/runs', body, { ...bearer(BOB), 'idempotency-key': key });
      assert.equal(a.status, 201, a.text);
      assert.equal(b.status, 201, b.text);
      assert.notEqual(a.body.runId, b.body.runId);
      assert.equal(b.headers['openwop-idempotent-replay'], undefined);
      assertEnvelope(await t.get(`/v1/runs/${a.body.runId}`, bearer(BOB)), 404, 'not_found');
    });

    it('a body tenantId that is not the key’s tenant → 403 forbidden, no run; \
the matching one is accepted', async () => {
      const runs = await t.host.store.runs.count();
      assertEnvelope(await t.post('/v1/runs', { workflowId: 'echo', tenantId: 't2' }, bearer(ALICE)), 403, 'forbidden');
      assert.equal(await t.host.store.runs.count(), runs);
      const ok = await t.post('/v1/runs', { workflowId: 'echo', tenantId: 't1' }, bearer(ALICE));
      assert.equal(ok.status, 201, ok.text);
    });
  });

  describe(`discovery, workflows, metrics (${dialect})`, () => {
    let t: TestHost;
    before(async () => {
      t = await startTestHost({ pg });
    });
    after(async () => {
      await t?.close();
    });

    it('GET /.well-known/openwop: protocol version, envelopes, schema versions, limits, transports', async () => {
      const res = await t.get('/.well-known/openwop');
      assert.equal(res.status, 200, res.text);
      const d = res.body;
      assert.equal(typeof d.protocolVersion, 'string');
      assert.ok(Array.isArray(d.supportedEnvelopes));
      assert.equal(typeof d.schemaVersions, 'object');
      assert.ok(d.schemaVersions !== null);
      for (const k of ['clarificationRounds', 'schemaRounds', 'envelopesPerTurn']) {
        assert.equal(typeof d.limits[k], 'number', `limits.${k}`);
      }
      assert.ok(Array.isArray(d.supportedTransports));
      assert.ok(d.supportedTransports.includes('rest'));
    });

    it('GET /v1/workflows/approval → 200 with the definition; unknown → 404', async () => {
      const res = await t.get('/v1/workflows/approval');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.id, 'approval');
      assert.ok(res.body.nodes.some((n: Json) => n.typeId === 'core.approvalGate'));
      assertEnvelope(await t.get('/v1/workflows/no-such-flow'), 404, 'not_found');
      const list = await t.get('/v1/workflows');
      assert.equal(list.status, 200);
      assert.ok(list.body.workflows.some((w: Json) => w.id === 'echo'));
    });

    it('/metrics has handoff_runs_started_total after a run', async () => {
      const runId = await t.createRun('echo');
      await t.waitForStatus(runId, ['completed']);
      const res = await t.get('/metrics');
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /text\/plain/);
      assert.match(
        res.text,
        /^handoff_runs_started_total\{(?=[^}]*workflow="echo")(?=[^}]*instance="[^"]+")[^}]*\} \d+/m,
      );
    });

    it('/metrics counts the statements the database ran, by kind', async () => {
      const count = async (op: string) => {
        const m = (await t.get('/metrics')).text.match(
          new RegExp(`^handoff_store_statements_total\\{(?=[^}]*op="${op}")[^}]*\\} (\\d+)`, 'm'),
        );
        return Number(m?.[1] ?? 0);
      };
      const [inserts, commits] = [await count('insert'), await count('commit')];
      const runId = await t.createRun('echo');
      await t.waitForStatus(runId, ['completed']);
      assert.ok((await count('insert')) > inserts, 'the run, its events and its task record were inserted');
      assert.ok((await count('commit')) > commits, 'and committed');
    });

    it('/metrics tells how many transactions each SQLite COMMIT carried', async (c) => {
      if (pg) return c.skip('SQLite only: PostgreSQL commits each transaction alone');
      const read = async () => {
        const text = (await t.get('/metrics')).text;
        const sample = (name: string) => Number(text.match(new RegExp(`^${name}\\{[^}]*\\} (\\d+)`, 'm'))?.[1] ?? NaN);
        return {
          commits: sample('handoff_store_group_commit_transactions_count'),
          transactions: sample('handoff_store_group_commit_transactions_sum'),
          commitStatements: Number(
            text.match(/^handoff_store_statements_total\{(?=[^}]*op="commit")[^}]*\} (\d+)/m)?.[1] ?? 0,
          ),
        };
      };
      const before = await read();
      const runId = await t.createRun('echo');
      await t.waitForStatus(runId, ['completed']);
      const now = await read();
      assert.ok(now.commits > before.commits, 'the run committed');
      assert.ok(now.transactions >= now.commits, 'each COMMIT carried at least one transaction');
      assert.equal(
        now.commits - before.commits,
        now.commitStatements - before.commitStatements,
        'one observation per COMMIT statement',
      );
    });
  });

  describe(`retention (${dialect})`, () => {
    let t: TestHost;
    before(async () => {
      t = await startTestHost({ pg });
    });
    after(async () => {
      await t?.close();
    });

    it('a purged terminal run answers 404 and its events are gone; a waiting run survives', async () => {
      const done = await t.createRun('echo', { prompt: 'old' });
      await t.waitForStatus(done, ['completed']);
      const waiting = await t.createRun('approval');
      await t.waitForStatus(waiting, ['waiting-approval']);
      assert.ok((await t.host.store.events.list(done)).length > 0);

      const purged = await t.host.store.purgeTerminalBefore(new Date(Date.now() + 1000));
      assert.ok(purged >= 1, `purged ${purged}`);

      assertEnvelope(await t.get(`/v1/runs/${done}`), 404, 'not_found');
      assertEnvelope(await t.get(`/v1/runs/${done}/events/poll?lastSequence=-1&timeout=0`), 404, 'not_found');
      assertEnvelope(await t.post(`/v1/runs/${done}/cancel`), 404, 'not_found');
      assert.deepEqual(await t.host.store.events.list(done), []);
      assert.deepEqual(await t.host.store.interrupts.listByRun(done), []);

      const still = await t.get(`/v1/runs/${waiting}`);
      assert.equal(still.status, 200);
      assert.equal(still.body.status, 'waiting-approval');
      const ok = await t.post(`/v1/runs/${waiting}/interrupts/review`, { resumeValue: { action: 'accept' } });
      assert.equal(ok.status, 200, ok.text);
      await t.waitForStatus(waiting, ['completed']);
    });
  });
}
