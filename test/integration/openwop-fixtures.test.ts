// The OpenWOP core-standard floor against Handoff with HANDOFF_CONFORMANCE_FIXTURES=1: the
// canonical fixtures seeded verbatim and advertised (RFC 0003), and the legs of the suite's floor
// scenarios (runs-lifecycle, failure-path, eventOrdering, idempotency, interrupt-quorum-resolution,
// interrupt-parent-child-cascade)
// as they send and expect them (docs/protocol/openwop.md#conformance). SQLite always, PostgreSQL
// too when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hmacInterruptTokens } from '../../src/engine/interrupt-tokens.js';
import { loadHostKey } from '../../src/push/vault.js';
import { DIALECTS, REPO_ROOT, type TestHost, bearer, startTestHost } from '../support/host.js';
import { type SdkSampleServer, startSdkSampleServer } from '../support/sdk-sample-server.js';

/** The host key the test host made in its data directory (the token signer's key). */
const hostKeyOf = (t: TestHost) => loadHostKey(undefined, join(t.config.dataDir, 'secret.key'));

const FIXTURES_DIR = join(REPO_ROOT, 'fixtures', 'conformance');
const FIXTURE_FILES = readdirSync(FIXTURES_DIR).filter((f) => f.endsWith('.json'));
const KEYS = ['key-voter-0001', 'key-voter-0002', 'key-voter-0003'] as const;
const as = (i: number) => bearer(KEYS[i] as string);
/** The fixture of a2a-task-roundtrip's drift points #3 and #4: it calls the agent `openwop-conformance-peer`. */
const DRIFT_FIXTURE = 'conformance-a2a-task-roundtrip';
/** A key without `approvals:respond` (OPENWOP_TEST_LOW_SCOPE_KEY in the suite). */
const LOW_SCOPE_KEY = 'key-lowscope-01';

for (const dialect of DIALECTS) {
  describe(`OpenWOP conformance fixtures (${dialect})`, () => {
    let t: TestHost;
    before(async () => {
      t = await startTestHost({
        pg: dialect === 'postgres',
        // The JSON form, for the low-scope key the auth-required scenario's 403 leg uses.
        apiKeys: JSON.stringify({
          ...Object.fromEntries(KEYS.map((k, i) => [k, { tenant: 'acme', principal: `voter-${i + 1}` }])),
          [LOW_SCOPE_KEY]: { tenant: 'acme', principal: 'reader', scopes: ['runs:create', 'runs:read'] },
        }),
        env: { HANDOFF_CONFORMANCE_FIXTURES: '1' },
      });
    });
    after(async () => t?.close());

    it('discovery advertises every shipped fixture, with an ETag a revalidation answers 304', async () => {
      const res = await t.get('/.well-known/openwop');
      assert.equal(res.status, 200);
      // All but the one that calls the suite's A2A peer, which no agent registry entry names here.
      const ids = FIXTURE_FILES.map((f) => JSON.parse(readFileSync(join(FIXTURES_DIR, f), 'utf8')).id)
        .filter((id: string) => id !== DRIFT_FIXTURE)
        .sort();
      assert.deepEqual(res.body.fixtures, ids);
      assert.ok(ids.includes('conformance-noop') && ids.includes('conformance-interrupt-quorum'));
      assert.match(String(res.headers.etag), /^".+"$/);
      assert.equal(res.headers['capabilities-etag'], res.headers.etag);
      const again = await t.request('GET', '/.well-known/openwop', undefined, {
        'if-none-match': String(res.headers.etag),
      });
      assert.equal(again.status, 304);
    });

    it('each fixture is served as its canonical JSON, verbatim', async () => {
      for (const file of FIXTURE_FILES) {
        const canonical = JSON.parse(readFileSync(join(FIXTURES_DIR, file), 'utf8'));
        const res = await t.get(`/v1/workflows/${canonical.id}`, as(0));
        assert.equal(res.status, 200, file);
        assert.deepEqual(res.body, canonical, file);
      }
    });

    it('runs-lifecycle: conformance-noop answers 201 {runId, status} and completes', async () => {
      const res = await t.post('/v1/runs', { workflowId: 'conformance-noop' }, as(0));
      assert.equal(res.status, 201);
      assert.equal(typeof res.body.runId, 'string');
      assert.equal(typeof res.body.status, 'string');
      const done = await t.waitForStatus(res.body.runId, ['completed', 'failed'], as(0));
      assert.equal(done.status, 'completed');
      assert.equal(done.runId, res.body.runId);
    });

    it('eventOrdering: one terminal event, last, sequences non-decreasing and stable', async () => {
      const runId = await t.createRun('conformance-multi-node', {}, as(0));
      await t.waitForStatus(runId, ['completed'], as(0));
      const a = await t.get(`/v1/runs/${runId}/events/poll`, as(0));
      const b = await t.get(`/v1/runs/${runId}/events/poll`, as(0));
      const seqs = a.body.events.map((e: { sequence: number }) => e.sequence);
      assert.deepEqual(
        seqs,
        [...seqs].sort((x, y) => x - y),
      );
      assert.deepEqual(
        seqs,
        b.body.events.map((e: { sequence: number }) => e.sequence),
      );
      const terminal = a.body.events.filter((e: { type: string }) =>
        /^run\.(completed|failed|cancelled)$/.test(e.type),
      );
      assert.equal(terminal.length, 1);
      assert.equal(a.body.events.at(-1).type, 'run.completed');
      const nodes = a.body.events
        .filter((e: { type: string }) => e.type === 'node.completed')
        .map((e: { nodeId: string }) => e.nodeId);
      assert.deepEqual(nodes, ['a', 'b', 'c']);
    });

    it('failure-path: conformance-failure ends failed with a structured error', async () => {
      const runId = await t.createRun('conformance-failure', {}, as(0));
      const done = await t.waitForStatus(runId, ['completed', 'failed'], as(0));
      assert.equal(done.status, 'failed');
      assert.equal(typeof done.error.code, 'string');
      assert.equal(typeof done.error.message, 'string');
    });

    it('idempotency: conformance-idempotent replays the same run and refuses another body', async () => {
      const key = { ...as(0), 'idempotency-key': `fixture-${dialect}-replay` };
      const body = { workflowId: 'conformance-idempotent', inputs: { nonce: 'abc-123' } };
      const first = await t.post('/v1/runs', body, key);
      assert.equal(first.status, 201);
      const replay = await t.post('/v1/runs', body, key);
      assert.equal(replay.body.runId, first.body.runId);
      assert.ok(replay.headers['openwop-idempotent-replay']);
      const other = await t.post('/v1/runs', { ...body, inputs: { nonce: 'DIFFERENT' } }, key);
      assert.equal(other.status, 409);
      assert.equal(other.body.error, 'idempotency_key_mismatch');
      assert.equal(other.body.runId, undefined);
    });

    it('conformance-delay sleeps for inputs.delayMs, the variable default otherwise', async () => {
      const runId = await t.createRun('conformance-delay', { delayMs: 0 }, as(0));
      assert.equal((await t.waitForStatus(runId, ['completed', 'failed'], as(0))).status, 'completed');
      const slow = await t.createRun('conformance-cancellable', {}, as(0));
      const waiting = await t.get(`/v1/runs/${slow}`, as(0));
      assert.notEqual(waiting.body.status, 'completed', 'the 30 s default holds the run');
      const cancel = await t.post(`/v1/runs/${slow}/cancel`, { reason: 'conformance' }, as(0));
      assert.equal(cancel.status, 200);
      assert.equal((await t.waitForStatus(slow, ['cancelled'], as(0))).status, 'cancelled');
    });

    it('interrupt-approval: suspends at gate, a bad action is 400, an unknown node 404, accept completes', async () => {
      const runId = await t.createRun('conformance-approval', {}, as(0));
      const suspended = await t.waitForStatus(runId, ['waiting-approval'], as(0));
      assert.equal(suspended.currentNodeId, 'gate');
      const bad = await t.post(`/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: 'maybe' } }, as(0));
      assert.equal(bad.status, 400);
      const unknown = await t.post(
        `/v1/runs/${runId}/interrupts/no-such-node`,
        { resumeValue: { action: 'accept' } },
        as(0),
      );
      assert.equal(unknown.status, 404);
      const ok = await t.post(`/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: 'accept' } }, as(0));
      assert.equal(ok.status, 200);
      assert.equal((await t.waitForStatus(runId, ['completed', 'failed'], as(0))).status, 'completed');
    });

    it('interrupt-clarification: suspends at ask, {answers: {q1}} completes', async () => {
      const runId = await t.createRun('conformance-clarification', {}, as(0));
      assert.equal((await t.waitForStatus(runId, ['waiting-input'], as(0))).currentNodeId, 'ask');
      const ok = await t.post(`/v1/runs/${runId}/interrupts/ask`, { resumeValue: { answers: { q1: 'blue' } } }, as(0));
      assert.equal(ok.status, 200);
      assert.equal((await t.waitForStatus(runId, ['completed', 'failed'], as(0))).status, 'completed');
    });

    it('interrupt-auth-required: a bearer resolves, no key is 401', async () => {
      const runId = await t.createRun('conformance-interrupt-auth-required', {}, as(0));
      await t.waitForStatus(runId, ['waiting-approval'], as(0));
      const anonymous = await t.post(`/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: 'accept' } });
      assert.equal(anonymous.status, 401);
      const ok = await t.post(`/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: 'accept' } }, as(1));
      assert.ok(ok.status >= 200 && ok.status < 300, ok.text);
      assert.equal((await t.waitForStatus(runId, ['completed', 'failed'], as(0))).status, 'completed');
    });

    it('interrupt-approval (RFC 0183): conformance-approval-refine records a refine with its refineFeedback; a refine without it is 400', async () => {
      const runId = await t.createRun('conformance-approval-refine', {}, as(0));
      assert.equal((await t.waitForStatus(runId, ['waiting-approval'], as(0))).currentNodeId, 'gate');
      const bare = await t.post(`/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: 'refine' } }, as(0));
      assert.equal(bare.status, 400, bare.text);
      const refineFeedback = { scope: 'whole', text: 'conformance: please tighten the summary' };
      const res = await t.post(
        `/v1/runs/${runId}/interrupts/gate`,
        { resumeValue: { action: 'refine', refineFeedback } },
        as(0),
      );
      assert.equal(res.status, 200, res.text);
      // The suite reads the first approval.received or interrupt.resolved of GET …/events, as JSON
      // (Accept: application/json): the log so far, at once, though the run has not ended.
      const events = await t.get(`/v1/runs/${runId}/events`, { ...as(0), accept: 'application/json' });
      assert.equal(events.status, 200);
      assert.match(String(events.headers['content-type']), /^application\/json/);
      assert.equal(events.body.isTerminal, false);
      const first = events.body.events.find((e: { type: string }) =>
        ['approval.received', 'interrupt.resolved'].includes(e.type),
      );
      assert.equal(first.payload.action, 'refine');
      assert.deepEqual(first.payload.refineFeedback, refineFeedback);
      // The draft runs again with the feedback, and the gate asks anew.
      assert.equal((await t.waitForStatus(runId, ['waiting-approval'], as(0))).currentNodeId, 'gate');
    });

    it('interrupt-token-matrix: an unknown token is 404 whatever the body; a known one with a bad body is 400', async () => {
      const unknown = await t.post('/v1/interrupts/tok_c29tZXRoaW5nLXVua25vd24', {
        correlation: { orderId: 'noop', status: 'whatever' },
      });
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(unknown.body.error, 'link_not_found');
      const runId = await t.createRun('conformance-interrupt-external-event', {}, as(0));
      const waiting = await t.waitForStatus(runId, ['waiting-external'], as(0));
      const known = await t.post(`/v1/interrupts/${waiting.interrupt.interruptToken}`, { correlation: {} });
      assert.equal(known.status, 400, known.text);
      assert.equal(known.body.error, 'validation_error');
      assert.equal((await t.get(`/v1/runs/${runId}`, as(0))).body.status, 'waiting-external');
    });

    it('the conformance mode mounts the RFC 0100 seams', async () => {
      const start = await t.post('/v1/host/sample/a2a/tasks/start', { scenario: 'paused-at-approval' }, as(0));
      assert.equal(start.status, 201, start.text);
      const read = await t.get(`/v1/host/sample/a2a/tasks/${start.body.taskId}`, as(0));
      assert.equal(read.body.state, 'input-required');
    });

    it('interrupt-auth-required: a key limited to other scopes is 403 naming approvals:respond, and changes nothing', async () => {
      const runId = await t.createRun('conformance-interrupt-auth-required', {}, bearer(LOW_SCOPE_KEY));
      const before = await t.waitForStatus(runId, ['waiting-approval'], bearer(LOW_SCOPE_KEY));
      const res = await t.post(
        `/v1/runs/${runId}/interrupts/gate`,
        { resumeValue: { action: 'accept' } },
        bearer(LOW_SCOPE_KEY),
      );
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error, 'forbidden');
      assert.equal(res.body.details.scopeRequired, 'approvals:respond');
      assert.match(String(res.headers['www-authenticate']), /insufficient_scope/);
      assert.deepEqual((await t.get(`/v1/runs/${runId}`, as(0))).body, before);
      assert.equal((await t.post(`/v1/runs/${runId}/cancel`, {}, bearer(LOW_SCOPE_KEY))).status, 403);
    });

    it('interrupt-external-event: waits waiting-external with a signed token; a mismatch is 422, a match completes', async () => {
      const runId = await t.createRun('conformance-interrupt-external-event', {}, as(0));
      const waiting = await t.waitForStatus(runId, ['waiting-external'], as(0));
      const token = waiting.interrupt.interruptToken as string;
      assert.equal(waiting.interrupt.kind, 'external-event');
      assert.equal(waiting.interrupt.callbackUrl, `/v1/interrupts/${token}`);
      const ref = hmacInterruptTokens(hostKeyOf(t)).verify(token);
      assert.deepEqual(ref, {
        runId,
        nodeId: 'wait-for-order',
        correlationId: waiting.interrupt.payload.correlationId,
      });
      const url = `/v1/runs/${runId}/interrupts/wait-for-order`;
      const wrong = await t.post(url, { resumeValue: { orderId: 'different-order', status: 'completed' } }, as(0));
      assert.equal(wrong.status, 422, wrong.text);
      assert.equal(wrong.body.error, 'correlation_mismatch');
      assert.equal((await t.get(`/v1/runs/${runId}`, as(0))).body.status, 'waiting-external');
      const event = { orderId: 'fixture-order-1', status: 'completed', externalReference: 'conformance-test-123' };
      const ok = await t.post(url, { resumeValue: event }, as(0));
      assert.equal(ok.status, 200, ok.text);
      const done = await t.waitForStatus(runId, ['completed', 'failed'], as(0));
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.nodeStates['wait-for-order'].event, event);
      const received = (await t.events(runId, as(0))).find((e) => e.type === 'external-event.received');
      assert.equal(received.payload.correlationId, waiting.interrupt.payload.correlationId);
    });

    it('interrupt-external-event by its signed token (no API key): 422 on a mismatch, a match completes, then 410', async () => {
      const runId = await t.createRun('conformance-interrupt-external-event', {}, as(0));
      const waiting = await t.waitForStatus(runId, ['waiting-external'], as(0));
      const url = waiting.interrupt.callbackUrl as string;
      const forged = await t.post(`${url.slice(0, -2)}xx`, { resumeValue: { orderId: 'fixture-order-1' } });
      assert.equal(forged.status, 404, forged.text);
      const wrong = await t.post(url, { resumeValue: { orderId: 'different-order', status: 'completed' } });
      assert.equal(wrong.status, 422, wrong.text);
      assert.equal((await t.get(`/v1/runs/${runId}`, as(0))).body.status, 'waiting-external');
      const event = { orderId: 'fixture-order-1', status: 'completed', externalReference: 'by-token' };
      const ok = await t.post(url, { resumeValue: event });
      assert.equal(ok.status, 200, ok.text);
      const done = await t.waitForStatus(runId, ['completed', 'failed'], as(0));
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.nodeStates['wait-for-order'].event, event);
      const again = await t.post(url, { resumeValue: event });
      assert.equal(again.status, 410, again.text);
      assert.equal(again.body.error, 'interrupt_gone');
    });

    // As the suite votes: every vote with one key, the voter named in the resume value (the
    // fixture's gate counts declared voters: voterIdentity "declared").
    const vote = (runId: string, i: number, action: string) =>
      t.post(`/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action, voter: `approver-${i + 1}` } }, as(0));

    it('interrupt-quorum: partial accepts keep the run waiting; the third completes it', async () => {
      const runId = await t.createRun('conformance-interrupt-quorum', {}, as(0));
      await t.waitForStatus(runId, ['waiting-approval'], as(0));
      for (const i of [0, 1]) {
        const partial = await vote(runId, i, 'accept');
        assert.ok(partial.status >= 200 && partial.status < 300, partial.text);
        assert.equal((await t.get(`/v1/runs/${runId}`, as(0))).body.status, 'waiting-approval');
      }
      // One vote per voter: the same voter again changes nothing.
      const repeat = await vote(runId, 1, 'accept');
      assert.ok(repeat.status >= 200 && repeat.status < 300, repeat.text);
      const waiting = (await t.get(`/v1/runs/${runId}`, as(0))).body;
      assert.equal(waiting.status, 'waiting-approval');
      assert.deepEqual(
        waiting.interrupt.votes.map((v: { principal: string; castBy: string }) => [v.principal, v.castBy]),
        [
          ['approver-1', 'voter-1'],
          ['approver-2', 'voter-1'],
        ],
      );
      assert.ok((await vote(runId, 2, 'accept')).status < 300);
      const done = await t.waitForStatus(runId, ['completed', 'failed'], as(0));
      assert.equal(done.status, 'completed');
      assert.deepEqual([...done.nodeStates.gate.approvers].sort(), ['approver-1', 'approver-2', 'approver-3']);
    });

    it('interrupt-quorum: under majority one reject waits, the second fails the run', async () => {
      const runId = await t.createRun('conformance-interrupt-quorum', {}, as(0));
      await t.waitForStatus(runId, ['waiting-approval'], as(0));
      assert.ok((await vote(runId, 0, 'reject')).status < 300);
      assert.equal((await t.get(`/v1/runs/${runId}`, as(0))).body.status, 'waiting-approval');
      assert.ok((await vote(runId, 1, 'reject')).status < 300);
      const done = await t.waitForStatus(runId, ['completed', 'failed'], as(0));
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'interrupt_rejected');
    });

    it("interrupt-parent-child-cascade: the parent shows its child's gate, and its cancel cascades (reason parent-cancelled, late resolve 410)", async () => {
      const parent = await t.createRun('conformance-interrupt-parent-child-cancel', {}, as(0));
      const waiting = await t.waitForStatus(parent, ['waiting-approval'], as(0));
      assert.equal(waiting.activity.kind, 'waiting-child');
      const child = waiting.childRuns[0].runId as string;
      assert.equal(waiting.childRuns[0].status, 'waiting-approval');
      assert.equal(waiting.childRuns[0].workflowId, 'conformance-interrupt-parent-child-cancel-child');
      assert.equal(waiting.interrupt, undefined, "the gate is the child's, not the parent's");
      // The list filters on the run's own status: the parent itself is running.
      const listed = await t.get('/v1/runs?status=waiting-approval', as(0));
      const ids = listed.body.runs.map((r: { runId: string }) => r.runId);
      assert.ok(ids.includes(child) && !ids.includes(parent), JSON.stringify(ids));

      const cancel = await t.post(`/v1/runs/${parent}/cancel`, { reason: 'conformance-test-cascade' }, as(0));
      assert.ok(cancel.status >= 200 && cancel.status < 300, cancel.text);
      assert.equal((await t.waitForStatus(parent, ['cancelled', 'completed', 'failed'], as(0))).status, 'cancelled');
      assert.equal((await t.waitForStatus(child, ['cancelled', 'completed', 'failed'], as(0))).status, 'cancelled');
      const cancelled = (await t.events(child, as(0))).find((e) => e.type === 'run.cancelled');
      assert.equal(cancelled?.payload.reason, 'parent-cancelled');
      assert.equal(cancelled?.payload.parentRunId, parent);
      const late = await t.post(
        `/v1/runs/${child}/interrupts/child-gate`,
        { resumeValue: { action: 'accept' } },
        as(0),
      );
      assert.equal(late.status, 410, late.text);
      assert.equal(late.body.error, 'interrupt_gone');
    });

    it("the parent shows running again once its child's gate is decided, and completes with it", async () => {
      const parent = await t.createRun('conformance-interrupt-parent-child-cancel', {}, as(0));
      const child = (await t.waitForStatus(parent, ['waiting-approval'], as(0))).childRuns[0].runId as string;
      const res = await t.post(`/v1/runs/${child}/interrupts/child-gate`, { resumeValue: { action: 'accept' } }, as(0));
      assert.equal(res.status, 200, res.text);
      // Decided: the child runs on, so the parent no longer shows a wait.
      assert.notEqual((await t.get(`/v1/runs/${parent}`, as(0))).body.status, 'waiting-approval');
      assert.equal((await t.waitForStatus(parent, ['completed', 'failed', 'cancelled'], as(0))).status, 'completed');
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`a2a-task-roundtrip drift points against an A2A peer registered as openwop-conformance-peer (${dialect})`, () => {
    let t: TestHost;
    let peer: SdkSampleServer;
    before(async () => {
      peer = await startSdkSampleServer();
      t = await startTestHost({
        pg: dialect === 'postgres',
        apiKeys: `${KEYS[0]}=acme:voter-1`,
        env: { HANDOFF_CONFORMANCE_FIXTURES: '1', HANDOFF_AGENTS: `openwop-conformance-peer=${peer.url}` },
      });
    });
    after(async () => {
      await t?.close();
      await peer?.close();
    });

    it('the fixture is advertised once the registry names the peer', async () => {
      assert.ok((await t.get('/.well-known/openwop')).body.fixtures.includes(DRIFT_FIXTURE));
    });

    it('drift point #3: a peer at auth-required projects to waiting-input (subkind auth)', async () => {
      const runId = await t.createRun(DRIFT_FIXTURE, { driftScenario: 'auth-required' }, as(0));
      const waiting = await t.waitForStatus(runId, ['waiting-input', 'failed', 'completed'], as(0));
      assert.equal(waiting.status, 'waiting-input', JSON.stringify(waiting.error));
      assert.equal(waiting.interrupt.payload.metadata.subkind, 'auth');
      assert.ok((await t.post(`/v1/runs/${runId}/cancel`, {}, as(0))).status < 300);
    });

    it('drift point #4: a peer that rejects fails the run, naming rejected_by_remote', async () => {
      const runId = await t.createRun(DRIFT_FIXTURE, { driftScenario: 'rejected' }, as(0));
      const done = await t.waitForStatus(runId, ['failed', 'completed', 'cancelled'], as(0));
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'rejected_by_remote');
    });
  });
}

describe('HANDOFF_CONFORMANCE_FIXTURES off (the default)', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost();
  });
  after(async () => t?.close());

  it('seeds and advertises no fixture', async () => {
    const res = await t.get('/.well-known/openwop');
    assert.deepEqual(res.body.fixtures, []);
    assert.equal((await t.get('/v1/workflows/conformance-noop')).status, 404);
  });
});
