// The peer client (src/peers/) against real foreign agents: the official SDK's own servers, on
// A2A 0.3 (@a2a-js/sdk 0.3.14) and on A2A 1.0 (@a2a-js/sdk 1.3.0, over JSON-RPC and over
// HTTP+JSON), and a real Handoff host (A2A 1.0 and 0.3) on a loopback port with API keys — each reached
// through the operator's registry. Nothing here sleeps: waits poll the peer with `until`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PeerError } from '../../src/peers/errors.js';
import { Peers, type PeerClient } from '../../src/peers/client.js';
import { messageIdFor, traceIdFor } from '../../src/peers/identity.js';
import type { TaskView } from '../../src/a2a/model.js';
import { textOf } from '../../src/peers/normalize.js';
import type { AgentEntry } from '../../src/peers/registry.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.js';
import { APPROVAL_QUESTION, type Ending, SAMPLE_QUESTION, type SeenRequest } from '../support/peer-skills.js';
import { type SdkSampleServer, startSdkSampleServer } from '../support/sdk-sample-server.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { until } from '../support/until.js';

const RUN = { runId: `run_peers_${randomUUID()}`, callerAgentId: 'https://caller.example/agent' };
const HANDOFF_KEY = 'key-peer-caller-1';
/** A fresh idempotency key per send: the agents outlive single tests. */
const freshId = (label: string): string => messageIdFor(`${RUN.runId}:${label}:${randomUUID()}`);

let sdk03: SdkSampleServer;
let sdk1: SdkV1Agent;
let handoff: TestHost;
let handoffUrl: string;
let hooks: HookReceiver;
let rx: HttpsReceiver;
let peers: Peers;

interface HookReceiver {
  url: string;
  seen: Array<{ path: string; headers: IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}

/** A plain-http webhook receiver for the SDK agents' pushes (they post wherever they are told). */
async function startHookReceiver(): Promise<HookReceiver> {
  const seen: HookReceiver['seen'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const entry = (name: string, cardUrl: string, token?: string): [string, AgentEntry] => [
  name,
  { name, cardUrl, ...(token ? { token } : {}) },
];

before(async () => {
  rx = await startHttpsReceiver();
  [sdk03, sdk1, hooks] = await Promise.all([startSdkSampleServer(), startSdkV1Agent(), startHookReceiver()]);
  handoff = await startTestHost({
    startRunner: false,
    apiKeys: `${HANDOFF_KEY}=acme:caller`,
    // Pushes from this host may reach the loopback receiver, which the test CA signs.
    env: { HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8', HANDOFF_PUSH_CA_FILE: await caFile(rx.caPem) },
  });
  handoffUrl = await handoff.host.listen();
  peers = new Peers({
    registry: new Map([
      entry('v03', `${sdk03.url}/.well-known/agent-card.json`),
      entry('v1', `${sdk1.url}/.well-known/agent-card.json`),
      entry('v1rest', sdk1.restFirstCardUrl),
      entry('handoff', `${handoffUrl}/.well-known/agent-card.json`, HANDOFF_KEY),
      entry('handoff-anonymous', `${handoffUrl}/.well-known/agent-card.json`),
    ]),
    timeoutMs: 10_000,
  });
});

after(async () => {
  await peers?.close();
  await Promise.all([sdk03?.close(), sdk1?.close(), hooks?.close(), rx?.close()]);
  await handoff?.close();
});

async function caFile(pem: string): Promise<string> {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const file = join(mkdtempSync(join(tmpdir(), 'handoff-peers-ca-')), 'ca.pem');
  writeFileSync(file, pem);
  return file;
}

/** Read the task until it is in one of `states`. */
const reaches = (peer: PeerClient, taskId: string, ...states: string[]): Promise<TaskView> =>
  until(`task ${taskId} ${states.join('|')}`, async () => {
    const t = await peer.getTask(taskId);
    return states.includes(t.status.state) && t;
  });

async function sendTask(peer: PeerClient, req: Parameters<PeerClient['send']>[0]): Promise<TaskView> {
  const sent = await peer.send(req);
  assert.equal(sent.kind, 'task', JSON.stringify(sent));
  return (sent as { task: TaskView }).task;
}

/** The words a task's status carries. */
const said = (t: TaskView): string => textOf(t.status.message);

const textsOf = (t: TaskView): string[] =>
  (t.artifacts ?? []).flatMap((a) => a.parts.flatMap((p) => (p.kind === 'text' ? [p.text] : [])));

async function rejectsWith(p: Promise<unknown>, check: (e: PeerError) => boolean): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof PeerError, String(err));
    assert.ok(check(err), JSON.stringify(err.failure));
    return true;
  });
}

interface ForeignAgent {
  agent: string;
  binding: 'JSONRPC' | 'HTTP+JSON';
  protocolVersion: '0.3' | '1.0';
  finish(taskId: string, ending: Ending): Promise<void>;
  requests(): SeenRequest[];
}

const FOREIGN: ForeignAgent[] = [
  {
    agent: 'v03',
    binding: 'JSONRPC',
    protocolVersion: '0.3',
    finish: (id, e) => sdk03.finish(id, e),
    requests: () => sdk03.requests,
  },
  {
    agent: 'v1',
    binding: 'JSONRPC',
    protocolVersion: '1.0',
    finish: (id, e) => sdk1.finish(id, e),
    requests: () => sdk1.requests,
  },
  {
    agent: 'v1rest',
    binding: 'HTTP+JSON',
    protocolVersion: '1.0',
    finish: (id, e) => sdk1.finish(id, e),
    requests: () => sdk1.requests,
  },
];

for (const f of FOREIGN) {
  describe(`an SDK agent over ${f.binding}, A2A ${f.protocolVersion} (registry '${f.agent}')`, () => {
    let peer: PeerClient;
    before(async () => {
      peer = await peers.resolve({ agent: f.agent }, RUN);
    });

    it(`reads the card and speaks ${f.binding} ${f.protocolVersion}, recording the choice`, () => {
      assert.equal(peer.chosen.binding, f.binding);
      assert.equal(peer.chosen.protocolVersion, f.protocolVersion);
      assert.match(peer.chosen.url, f.binding === 'JSONRPC' ? /\/a2a\/jsonrpc$/ : /\/a2a\/rest$/);
      assert.match(peer.card.name, /^sdk-/);
    });

    it('echo: the send answers with the task at once; it completes with the input echoed', async () => {
      const sent = await sendTask(peer, { messageId: freshId('echo'), text: 'hello peer', data: { n: 1 } });
      assert.ok(['submitted', 'working', 'completed'].includes(sent.status.state), sent.status.state);
      const done = await reaches(peer, sent.id, 'completed');
      assert.deepEqual(done.artifacts, [
        {
          artifactId: 'echo',
          name: 'echo',
          parts: [
            { kind: 'text', text: 'hello peer' },
            { kind: 'data', data: { n: 1 } },
          ],
        },
      ]);
      assert.equal(done.contextId, sent.contextId);
    });

    it('approval: input-required with its question; accept completes it, reject rejects it', async () => {
      const [a, b] = await Promise.all([
        sendTask(peer, { messageId: freshId('approve-a'), text: 'ship it?', skillId: 'approval' }),
        sendTask(peer, { messageId: freshId('approve-b'), text: 'ship it?', skillId: 'approval' }),
      ]);
      const parked = await reaches(peer, a.id, 'input-required');
      assert.equal(said(parked), APPROVAL_QUESTION);
      await reaches(peer, b.id, 'input-required');
      await peer.send({
        messageId: freshId('accept'),
        taskId: a.id,
        contextId: a.contextId,
        data: { action: 'accept' },
      });
      await peer.send({ messageId: freshId('reject'), taskId: b.id, data: { action: 'reject' } });
      const accepted = await reaches(peer, a.id, 'completed');
      assert.deepEqual(accepted.artifacts?.[0]?.parts, [{ kind: 'data', data: { approved: true } }]);
      const rejected = await reaches(peer, b.id, 'rejected');
      assert.equal(said(rejected), 'rejected by the reviewer');
    });

    it('clarify: the question, then a text reply completes it with the answer', async () => {
      const sent = await sendTask(peer, { messageId: freshId('clarify'), text: 'start', skillId: 'clarify' });
      assert.equal(said(await reaches(peer, sent.id, 'input-required')), SAMPLE_QUESTION);
      await peer.send({ messageId: freshId('answer'), taskId: sent.id, text: 'Ada' });
      assert.deepEqual(textsOf(await reaches(peer, sent.id, 'completed')), ['Hello, Ada!']);
    });

    it("fail and reject end in failed and rejected, with the agent's words", async () => {
      const failed = await sendTask(peer, { messageId: freshId('fail'), text: 'x', skillId: 'fail' });
      const refused = await sendTask(peer, { messageId: freshId('reject'), text: 'x', skillId: 'reject' });
      assert.equal(said(await reaches(peer, failed.id, 'failed')), 'the fail skill always fails');
      assert.equal(said(await reaches(peer, refused.id, 'rejected')), 'the reject skill refuses every task');
    });

    it('subscribe follows a working task to its end, one folded task per event', async () => {
      const sent = await sendTask(peer, { messageId: freshId('slow'), text: 'x', skillId: 'slow' });
      const seen: TaskView[] = [];
      for await (const t of peer.subscribe(sent.id)) {
        seen.push(t);
        // The task works until the test ends it: end it once the stream has shown it working.
        if (t.status.state === 'working' && seen.filter((s) => s.status.state === 'working').length === 1) {
          await f.finish(sent.id, { state: 'completed', text: 'finished by the test' });
        }
      }
      assert.ok(
        seen.some((t) => t.status.state === 'working'),
        JSON.stringify(seen.map((t) => t.status.state)),
      );
      const last = seen.at(-1)!;
      assert.equal(last.status.state, 'completed');
      assert.equal(said(last), 'finished by the test');
      assert.equal(last.id, sent.id);
    });

    it('subscribe to a parked task yields it and ends (its caller must answer first)', async () => {
      const sent = await sendTask(peer, { messageId: freshId('park'), text: 'x', skillId: 'approval' });
      await reaches(peer, sent.id, 'input-required');
      const seen: string[] = [];
      for await (const t of peer.subscribe(sent.id)) seen.push(t.status.state);
      assert.deepEqual(seen, ['input-required']);
    });

    it('subscribe to a finished task reads it once (SDK agents refuse to stream a terminal task)', async () => {
      const sent = await sendTask(peer, { messageId: freshId('done'), text: 'x' });
      await reaches(peer, sent.id, 'completed');
      const seen: TaskView[] = [];
      for await (const t of peer.subscribe(sent.id)) seen.push(t);
      assert.deepEqual(
        seen.map((t) => t.status.state),
        ['completed'],
      );
      assert.deepEqual(textsOf(seen[0]!), ['x']);
    });

    it('cancel: a working task is canceled', async () => {
      const sent = await sendTask(peer, { messageId: freshId('cancel'), text: 'x', skillId: 'slow' });
      await reaches(peer, sent.id, 'working');
      const canceled = await peer.cancelTask(sent.id);
      assert.equal(canceled.status.state, 'canceled');
      assert.equal((await peer.getTask(sent.id)).status.state, 'canceled');
    });

    it('the test agent can end a task itself: a working one fails, a parked one is canceled', async () => {
      const working = await sendTask(peer, { messageId: freshId('finish-a'), text: 'x', skillId: 'slow' });
      const parked = await sendTask(peer, { messageId: freshId('finish-b'), text: 'x', skillId: 'approval' });
      await reaches(peer, working.id, 'working');
      await reaches(peer, parked.id, 'input-required');
      await f.finish(working.id, { state: 'failed', text: 'broke down' });
      await f.finish(parked.id, { state: 'canceled' });
      assert.equal(said(await reaches(peer, working.id, 'failed')), 'broke down');
      await reaches(peer, parked.id, 'canceled');
    });

    it('push: a webhook given with the send is pushed to with its token; one set later is confirmed', async () => {
      const token = `tok-${randomUUID()}`;
      const path = `/hook/${randomUUID()}`;
      const sent = await sendTask(peer, {
        messageId: freshId('push'),
        text: 'x',
        skillId: 'approval',
        pushConfig: { url: `${hooks.url}${path}`, token },
      });
      await until('a push for the task', () =>
        hooks.seen.find((h) => h.path === path && Object.values(h.headers).some((v) => String(v).includes(token))),
      );
      const set = await peer.setPushConfig(sent.id, { url: `${hooks.url}/other`, token: 'tok-set', id: 'second' });
      assert.deepEqual(set, { id: 'second', taskId: sent.id, url: `${hooks.url}/other` });
    });

    it('does not dedup by messageId (SDK agents make a second task for the same message)', async () => {
      const messageId = freshId('twice');
      const [one, two] = [
        await sendTask(peer, { messageId, text: 'x' }),
        await sendTask(peer, { messageId, text: 'x' }),
      ];
      assert.notEqual(one.id, two.id);
    });

    it("keeps the peer's error code: an unknown task is -32001", async () => {
      await rejectsWith(
        peer.getTask(`no-such-task-${randomUUID()}`),
        (e) => e.failure.kind === 'peer' && e.failure.code === -32001,
      );
    });

    it('sends the A2A version, and a traceparent per request in the run’s one trace', async () => {
      const from = f.requests().length;
      const sent = await sendTask(peer, { messageId: freshId('trace'), text: 'x' });
      await peer.getTask(sent.id);
      const calls = f.requests().slice(from);
      assert.equal(calls.length, 2);
      for (const c of calls) assert.equal(c.headers['a2a-version'], f.protocolVersion);
      const parents = calls.map((c) => String(c.headers.traceparent));
      const trace = traceIdFor(RUN.runId);
      for (const p of parents) assert.match(p, new RegExp(`^00-${trace}-[0-9a-f]{16}-01$`));
      assert.notEqual(parents[0], parents[1]);
    });
  });
}

describe('a Handoff host (A2A 1.0 JSON-RPC, API keys) as the peer', () => {
  let peer: PeerClient;
  before(async () => {
    peer = await peers.resolve({ agent: 'handoff' }, RUN);
  });

  it('is spoken to in 1.0 over JSON-RPC (the first of its supportedInterfaces)', () => {
    assert.deepEqual(peer.chosen, { url: `${handoffUrl}/v1/a2a`, binding: 'JSONRPC', protocolVersion: '1.0' });
  });

  it('an approval run: the send returns the parked task; the accept completes it', async () => {
    const sent = await sendTask(peer, { messageId: freshId('h-approval'), text: 'launch plan', skillId: 'approval' });
    assert.equal(sent.status.state, 'input-required');
    const reply = await peer.send({ messageId: freshId('h-accept'), taskId: sent.id, data: { action: 'accept' } });
    assert.equal(reply.kind, 'task');
    const done = await reaches(peer, sent.id, 'completed');
    assert.deepEqual(done.artifacts?.[0]?.parts, [
      { kind: 'data', data: { text: 'Draft: launch plan', approvedBy: 'caller' } },
    ]);
  });

  it('dedups by messageId: a re-sent first message, and a re-sent reply, find the same task', async () => {
    const messageId = freshId('h-twice');
    const one = await sendTask(peer, { messageId, text: 'plan', skillId: 'approval' });
    const two = await sendTask(peer, { messageId, text: 'plan', skillId: 'approval' });
    assert.equal(two.id, one.id);
    const replyId = freshId('h-reply-twice');
    await peer.send({ messageId: replyId, taskId: one.id, data: { action: 'accept' } });
    const again = await peer.send({ messageId: replyId, taskId: one.id, data: { action: 'accept' } });
    assert.equal(again.kind === 'task' && again.task.status.state, 'completed');
  });

  it('subscribe follows a run with durable steps to completed; cancel stops another', async () => {
    const steps = await sendTask(peer, {
      messageId: freshId('h-steps'),
      data: { steps: 3, stepMs: 20 },
      skillId: 'steps',
    });
    const states: string[] = [];
    for await (const t of peer.subscribe(steps.id)) states.push(t.status.state);
    assert.equal(states.at(-1), 'completed');
    assert.ok(states.includes('working'), states.join(','));

    const long = await sendTask(peer, {
      messageId: freshId('h-long'),
      data: { steps: 1, stepMs: 3_600_000 },
      skillId: 'steps',
    });
    await peer.cancelTask(long.id);
    await reaches(peer, long.id, 'canceled');
  });

  it('push: a webhook given with the send is pushed the parked state with the token', async () => {
    const token = `tok-${randomUUID()}`;
    const sent = await sendTask(peer, {
      messageId: freshId('h-push'),
      text: 'plan',
      skillId: 'approval',
      pushConfig: { url: rx.urlFor('127.0.0.1', '/handoff-hook'), token },
    });
    const push = await until('a push from the host', () =>
      rx.requests.find((r) => r.headers['x-a2a-notification-token'] === token),
    );
    // Registered over 1.0, so pushed in 1.0: a StreamResponse, with its version.
    assert.equal(JSON.parse(push.body).statusUpdate.taskId, sent.id);
    assert.equal(push.headers['a2a-version'], '1.0');
    const set = await peer.setPushConfig(sent.id, {
      url: rx.urlFor('127.0.0.1', '/second'),
      token: 'tok-2',
      id: 'second',
    });
    assert.deepEqual(set, { id: 'second', taskId: sent.id, url: rx.urlFor('127.0.0.1', '/second') });
  });

  it("keeps the host's error codes: unknown task -32001, a message to a finished task -32004", async () => {
    await rejectsWith(peer.getTask('run_nope'), (e) => e.failure.kind === 'peer' && e.failure.code === -32001);
    const done = await sendTask(peer, { messageId: freshId('h-echo'), text: 'x' });
    await reaches(peer, done.id, 'completed');
    await rejectsWith(
      peer.send({ messageId: freshId('h-late'), taskId: done.id, text: 'more' }),
      (e) => e.failure.kind === 'peer' && e.failure.code === -32004,
    );
  });

  it('without the token the host answers 401: a peer error, not a retry', async () => {
    const anonymous = await peers.resolve({ agent: 'handoff-anonymous' }, RUN);
    await rejectsWith(
      anonymous.send({ messageId: freshId('h-anon'), text: 'x' }),
      (e) => e.failure.kind === 'peer' && e.failure.code === 401 && !e.message.includes(HANDOFF_KEY),
    );
  });
});
