// Whom a registry entry trusts (issue 33, 5): its own origin and the origins it lists. An agent
// card is the peer's to write; an endpoint it names on another origin must pass the egress guard in
// full, and the entry's token never goes there. And the card itself is read once per TTL per entry
// or URL (issue 33, 6), not at every wake. Real peers on loopback: an @a2a-js/sdk 1.0 agent, a
// plain card host that serves the agent's card from another origin, an https receiver.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createEgressPolicy } from '../../src/egress/address.js';
import { Peers } from '../../src/peers/client.js';
import { PeerError } from '../../src/peers/errors.js';
import type { AgentEntry } from '../../src/peers/registry.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { writeCallWorkflows } from '../support/two-hosts.js';

const RUN = { runId: 'run_trust', callerAgentId: 'https://caller.example/agent' };

interface CardHost {
  url: string;
  /** The headers of every request for the card. */
  seen: IncomingHttpHeaders[];
  /** Answer this many requests with a 500 before serving the card. */
  failNext: number;
  close(): Promise<void>;
}

/** Serves `card` (JSON text) at /.well-known/agent-card.json, from its own loopback origin. */
async function startCardHost(card: () => string): Promise<CardHost> {
  const host: CardHost = { url: '', seen: [], failNext: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    host.seen.push(req.headers);
    if (host.failNext > 0) {
      host.failNext--;
      res.writeHead(500).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(card());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  host.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  host.close = () => new Promise<void>((r) => server.close(() => r()));
  return host;
}

const cardOf = async (agent: SdkV1Agent): Promise<string> =>
  (await fetch(`${agent.url}/.well-known/agent-card.json`)).text();

describe("a registry agent's card naming an endpoint on another origin (the trap)", () => {
  let trap: SdkV1Agent;
  let cards: CardHost;
  let a: TestHost;

  before(async () => {
    trap = await startSdkV1Agent();
    const card = await cardOf(trap);
    cards = await startCardHost(() => card);
    a = await startTestHost({
      workflows: [writeCallWorkflows(60_000)],
      env: {
        HANDOFF_AGENTS: `lured=${cards.url},allowed=${cards.url};origin=${trap.url}`,
        HANDOFF_AGENT_TOKEN_LURED: 'tok-lured-0123456789',
        HANDOFF_AGENT_TOKEN_ALLOWED: 'tok-allowed-0123456789',
        HANDOFF_AGENT_POLL_MIN_MS: '50',
        HANDOFF_AGENT_POLL_MAX_MS: '250',
      },
    });
  });
  after(async () => {
    await a?.close();
    await cards?.close();
    await trap?.close();
  });

  it('is refused: the trap gets no request and no token, and the error names the endpoint and the fix', async () => {
    const before = trap.requests.length;
    const runId = await a.createRun('call_poll_wait', { agent: 'lured', skill: 'echo', prompt: 'hi' });
    const run = await a.waitForStatus(runId, ['failed', 'completed']);
    assert.equal(run.status, 'failed', JSON.stringify(run));
    assert.equal(run.error.code, 'external_call_refused');
    assert.match(run.error.message, new RegExp(`endpoint ${trap.url}/a2a/jsonrpc`));
    assert.match(run.error.message, /does not name/);
    assert.ok(run.error.message.includes(`;origin=${trap.url}`), run.error.message);
    assert.equal(trap.requests.length, before, 'the trap was called');
    assert.ok(!JSON.stringify(run).includes('tok-lured'), 'the token is in the run');
    // The card itself is the entry's to fetch, with its token.
    assert.ok(cards.seen.some((h) => h.authorization === 'Bearer tok-lured-0123456789'));
  });

  it('an entry that lists the origin (;origin=) calls it, with its token', async () => {
    const before = trap.requests.length;
    const runId = await a.createRun('call_poll_wait', { agent: 'allowed', skill: 'echo', prompt: 'let me in' });
    const run = await a.waitForStatus(runId, ['failed', 'completed']);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(run.nodeStates.call.artifacts[0].parts[0].text, 'let me in');
    const calls = trap.requests.slice(before);
    assert.ok(calls.length > 0);
    for (const c of calls) assert.equal(c.headers.authorization, 'Bearer tok-allowed-0123456789');
  });
});

describe('an endpoint on another origin that passes the egress guard', () => {
  let rx: HttpsReceiver;
  let cards: CardHost;
  let peers: Peers;

  before(async () => {
    rx = await startHttpsReceiver();
    rx.behave({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"not":"a2a"}' });
    const endpoint = `${rx.url}a2a`;
    cards = await startCardHost(() =>
      JSON.stringify({
        name: 'elsewhere',
        description: 'its endpoint is on another origin',
        version: '1.0.0',
        supportedInterfaces: [{ url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        capabilities: {},
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [],
      }),
    );
    peers = new Peers({
      registry: new Map([['elsewhere', { name: 'elsewhere', cardUrl: cards.url, token: 'tok-elsewhere-0123' }]]),
      timeoutMs: 5_000,
      // The guard as a host with HANDOFF_PUSH_ALLOW_CIDRS=127.0.0.0/8 has it: https, this address allowed.
      inputPolicy: createEgressPolicy({ allowCidrs: ['127.0.0.0/8'] }),
      ca: rx.caPem,
    });
  });
  after(async () => {
    await peers?.close();
    await cards?.close();
    await rx?.close();
  });

  it('is called on the guarded pool without the token', async () => {
    const peer = await peers.resolve({ agent: 'elsewhere' }, RUN);
    await assert.rejects(peer.send({ messageId: randomUUID(), text: 'x' }), PeerError);
    assert.equal(rx.requests.length, 1);
    assert.equal(rx.requests[0]?.headers.authorization, undefined);
    assert.equal(cards.seen[0]?.authorization, 'Bearer tok-elsewhere-0123');
  });
});

describe('the agent card cache', () => {
  let agent: SdkV1Agent;
  let cards: CardHost;
  let clock = 1_000_000;
  let peers: Peers;

  before(async () => {
    agent = await startSdkV1Agent();
    const card = await cardOf(agent);
    cards = await startCardHost(() => card);
    const entry = (name: string): [string, AgentEntry] => [name, { name, cardUrl: cards.url, origins: [agent.url] }];
    peers = new Peers({ registry: new Map([entry('one'), entry('two')]), timeoutMs: 5_000, now: () => clock });
  });
  after(async () => {
    await peers?.close();
    await cards?.close();
    await agent?.close();
  });

  it('reads a card once per entry and TTL, whatever the number of runs and resolves', async () => {
    const runs = Array.from({ length: 20 }, (_, i) => ({ ...RUN, runId: `run_${i}` }));
    await Promise.all(runs.map((r) => peers.resolve({ agent: 'one' }, r)));
    for (const r of runs) await peers.resolve({ agent: 'one' }, r);
    assert.equal(cards.seen.length, 1);
    // Another entry has a card of its own, even at the same URL.
    await peers.resolve({ agent: 'two' }, RUN);
    assert.equal(cards.seen.length, 2);
    clock += 60_001;
    const peer = await peers.resolve({ agent: 'one' }, RUN);
    assert.equal(cards.seen.length, 3);
    // The client made from a cached card works.
    const sent = await peer.send({ messageId: randomUUID(), text: 'cached' });
    assert.equal(sent.kind, 'task');
  });

  it('does not keep a card that could not be read', async () => {
    clock += 60_001;
    cards.failNext = 1;
    const seen = cards.seen.length;
    await assert.rejects(peers.resolve({ agent: 'one' }, RUN), PeerError);
    await peers.resolve({ agent: 'one' }, RUN);
    assert.equal(cards.seen.length, seen + 2);
  });
});
