// A peer's Retry-After is honoured only up to the poll ceiling (issue 34, 3): a peer answering every
// call 503 with `Retry-After: 999999999` (31 years) has an a2a.invoke node try again within
// HANDOFF_AGENT_POLL_MAX_MS, and the cancel of the run's peer task too. Read from the run's timer
// and the peer_waits row, not by waiting. The peer is a real loopback server that answers its card
// and refuses every call.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestHost, type TestHost } from '../support/host.js';
import { type Behaviour, type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import { writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

const POLL_MAX_MS = 250;
/** Far longer than the ceiling: the clamp, not the node's deadline, must bound each wait. */
const TIMEOUT_MS = 600_000;

/** A card naming `base` itself as the JSON-RPC 1.0 endpoint. */
const cardAt = (base: string): string =>
  JSON.stringify({
    name: 'busy',
    description: 'answers its card, and 503 with Retry-After: 999999999 to every call',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${base}a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: {},
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  });

describe('a peer’s Retry-After is clamped to the poll ceiling', () => {
  let busy: HttpsReceiver;
  let a: TestHost;

  before(async () => {
    busy = await startHttpsReceiver({ tls: false });
    busy.behave(
      (req): Behaviour =>
        req.method === 'GET'
          ? { headers: { 'content-type': 'application/json' }, body: cardAt(busy.url) }
          : { status: 503, headers: { 'retry-after': '999999999' } },
    );
    a = await startTestHost({
      startRunner: false,
      workflows: [writeCallWorkflows(TIMEOUT_MS)],
      env: {
        HANDOFF_AGENTS: `busy=${busy.url}`,
        HANDOFF_AGENT_POLL_MIN_MS: '50',
        HANDOFF_AGENT_POLL_MAX_MS: String(POLL_MAX_MS),
      },
    });
    // Listening starts the worker and the peer cancel pass.
    await a.host.listen();
  });
  after(async () => {
    await a?.close();
    await busy?.close();
  });

  it('a2a.invoke sleeps at most the poll ceiling after the send; its peer cancel retries as soon', async () => {
    const started = Date.now();
    const runId = await a.createRun('call_poll_wait', { agent: 'busy', skill: 'echo', prompt: 'hello?' });
    const asleep = await until('the refused send puts the node to sleep', async () => {
      const run = await a.host.store.runs.get(runId);
      return busy.requests.some((r) => r.method === 'POST') && run?.wakeAt !== undefined ? run : undefined;
    });
    const wakeAt = asleep.wakeAt as number;
    // Set at or before now, by a step that began after `started`: the Retry-After, cut to the ceiling.
    assert.ok(wakeAt <= Date.now() + POLL_MAX_MS, `wakes ${wakeAt - Date.now()} ms from now`);
    assert.ok(wakeAt >= started + POLL_MAX_MS, 'the Retry-After was honoured up to the ceiling');

    assert.equal((await a.post(`/v1/runs/${runId}/cancel`, {})).status, 200);
    await a.waitForStatus(runId, ['cancelled']);
    const cancelling = Date.now();
    const wait = await until('the peer refuses the cancel once', async () => {
      const [w] = await a.host.store.peerWaits.forRun(runId);
      return w && w.attempts >= 1 ? w : undefined;
    });
    assert.equal(wait.state, 'cancel');
    assert.ok(wait.nextAttemptAt <= Date.now() + POLL_MAX_MS, `retries ${wait.nextAttemptAt - cancelling} ms on`);
  });
});
