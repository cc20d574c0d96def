// Progress a subscriber can see: the REAL compiled server (`handoff serve`) streams a multi-step
// workflow over A2A 0.3 (message/stream, tasks/resubscribe) and 1.0 (SendStreamingMessage over
// JSON-RPC and HTTP+JSON through the official @a2a-js/sdk 1.3.0 client, unmodified, and a raw
// HTTP+JSON :subscribe). Each node start is a `working` status update whose agent message names the
// node and its place, "Gather (1 of 3)", in log order; `settings.a2aProgress: false` sends none.
// Pushes stay on the RFC 0100 transitions: the run pushes `completed` once, content-free, the same
// with progress on or off (a loopback HTTPS receiver, allow-listed by the operator).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Message, type Part, Role, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import { getJson, killAllServers, type ServerProcess, startServer } from '../support/server-process.js';
import {
  expectedA2AUpdates,
  type Json,
  openA2AStream,
  openSse,
  progressText,
  resultWord,
  results,
} from '../support/sse-client.js';
import { until } from '../support/until.js';

const T = { timeout: 180_000 };
const dirs: string[] = [];
const freshDir = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

/** Three nodes; the second has no name, so its id names it. */
function tour(id: string, settings: Record<string, unknown>): Json {
  const node = (nodeId: string, name: string, typeId: string, config: Json, extra: Json = {}) => ({
    id: nodeId,
    typeId,
    name,
    position: { x: 0, y: 0 },
    config,
    inputs: {},
    ...extra,
  });
  return {
    id,
    name: 'A short tour',
    version: '1.0.0',
    nodes: [
      node('gather', 'Gather', 'core.transform', { set: { n: 1 } }),
      node('wait', '', 'core.delay', { ms: 20 }),
      node('report', 'Report', 'core.transform', { output: { n: '{{ vars.n }}' } }, { outputRole: 'artifact' }),
    ],
    edges: [
      { id: 'e1', sourceNodeId: 'gather', targetNodeId: 'wait' },
      { id: 'e2', sourceNodeId: 'wait', targetNodeId: 'report' },
    ],
    triggers: [],
    variables: [],
    metadata: {},
    settings,
  };
}

const PROGRESS = ['▸Gather (1 of 3)', '▸wait (2 of 3)', '▸Report (3 of 3)'];

const v03Message = (skillId: string): Json => ({
  kind: 'message',
  role: 'user',
  messageId: randomUUID(),
  parts: [{ kind: 'text', text: 'go' }],
  metadata: { skillId },
});

function v1Message(skillId: string): Message {
  const text: Part = { content: { $case: 'text', value: 'go' }, metadata: undefined, filename: '', mediaType: '' };
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [text],
    metadata: { skillId },
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A 1.0 stream event in one word, like resultWord: the progress text, the state, or the kind. */
function v1Word(e: StreamResponse): string {
  const p = e.payload;
  const name = (state: TaskState | undefined) => (state === undefined ? '?' : TaskState[state]);
  if (p?.$case === 'task') return `task(${name(p.value.status?.state)})`;
  if (p?.$case === 'artifactUpdate') return 'artifact';
  if (p?.$case === 'statusUpdate') {
    const part = p.value.status?.message?.parts[0]?.content;
    if (part?.$case === 'text') return `▸${part.value}`;
    return name(p.value.status?.state);
  }
  return String(p?.$case);
}

describe('A2A progress updates (real server)', T, () => {
  let srv: ServerProcess;
  let rx: HttpsReceiver;

  before(async () => {
    const wf = freshDir('handoff-progress-wf-');
    writeFileSync(join(wf, 'tour.json'), JSON.stringify(tour('tour', {})));
    writeFileSync(join(wf, 'tour-quiet.json'), JSON.stringify(tour('tour-quiet', { a2aProgress: false })));
    rx = await startHttpsReceiver();
    const ca = join(freshDir('handoff-progress-ca-'), 'ca.pem');
    writeFileSync(ca, rx.caPem);
    srv = await startServer({
      dataDir: freshDir('handoff-progress-'),
      env: { HANDOFF_WORKFLOWS: wf, HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8', HANDOFF_PUSH_CA_FILE: ca },
    });
  });
  after(async () => {
    await killAllServers();
    await rx?.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const eventLog = async (runId: string): Promise<Json[]> =>
    (await getJson(`${srv.url}/v1/runs/${runId}/events/poll?lastSequence=-1&timeout=0&limit=1000`)).body.events;

  /** 0.3 message/stream with an inline push config: the stream's words, and the one push body. */
  async function streamWithPush(skillId: string, path: string) {
    const s = await openA2AStream(srv.url, 'message/stream', {
      message: v03Message(skillId),
      configuration: { pushNotificationConfig: { url: rx.urlFor('127.0.0.1', path), token: 'tok' } },
    });
    assert.equal((await s.waitForEnd()).reason, 'end', s.describe());
    const taskId = results(s)[0].id as string;
    // The completed push is written in the commit that completed the run: once the stream has seen
    // it, the outbox holds every push of the task; wait for its delivery, then count.
    const delivered = await until('the push delivered', async () => {
      const res = await getJson(`${srv.url}/v1/a2a/deliveries?taskId=${taskId}`);
      const ds = res.body.deliveries as Json[];
      return ds.length > 0 && ds.every((d) => d.state === 'delivered') && ds;
    });
    const hits = rx.requests.filter((r) => r.path === path);
    return { s, taskId, delivered, hits };
  }

  it('0.3 message/stream: a working update naming each node, in log order; the push is only completed', T, async () => {
    const { s, taskId, delivered, hits } = await streamWithPush('tour', '/on');
    const updates = results(s);
    assert.deepEqual(updates.map(resultWord), ['task(submitted)', 'working', ...PROGRESS, 'artifact', 'completed!']);
    const log = await eventLog(taskId);
    assert.deepEqual(
      s.events.slice(1).map((e) => Number(e.id)),
      expectedA2AUpdates(log).map((e) => e.seq),
      'each progress update is its node.started event',
    );
    for (const [i, u] of updates.filter((r: Json) => progressText(r) !== undefined).entries()) {
      const started = log.filter((e: Json) => e.type === 'node.started')[i];
      assert.equal(u.status.state, 'working');
      assert.equal(u.final, false);
      assert.equal(u.status.timestamp, started.timestamp);
      assert.equal(u.metadata.openwop.nodeId, started.nodeId);
      assert.deepEqual(Object.keys(u.status.message).sort(), [
        'contextId',
        'kind',
        'messageId',
        'parts',
        'role',
        'taskId',
      ]);
      assert.equal(u.status.message.role, 'agent');
      assert.equal(u.status.message.taskId, taskId);
    }
    // Pushes: one delivery, `completed`, with no message — progress never reaches a webhook.
    assert.equal(delivered.length, 1, JSON.stringify(delivered));
    assert.equal(hits.length, 1);
    const body = JSON.parse(hits[0]?.body ?? '{}');
    assert.equal(body.kind, 'status-update');
    assert.equal(body.status.state, 'completed');
    assert.equal(body.status.message, undefined);
  });

  it('a2aProgress: false sends no progress; the push body is the same as with progress on', T, async () => {
    const on = await streamWithPush('tour', '/on-again');
    const off = await streamWithPush('tour-quiet', '/off');
    assert.deepEqual(results(off.s).map(resultWord), ['task(submitted)', 'working', 'artifact', 'completed!']);
    assert.deepEqual(
      off.s.events.slice(1).map((e) => Number(e.id)),
      expectedA2AUpdates(await eventLog(off.taskId), 'submitted', false).map((e) => e.seq),
    );
    assert.equal(off.delivered.length, 1);
    const shape = (hit: Json) => {
      const b = JSON.parse(hit.body);
      return { keys: Object.keys(b).sort(), status: Object.keys(b.status).sort(), state: b.status.state };
    };
    assert.deepEqual(shape(off.hits[0]), shape(on.hits[0]));
    assert.deepEqual(Object.keys(off.hits[0]?.headers ?? {}).sort(), Object.keys(on.hits[0]?.headers ?? {}).sort());
  });

  it('0.3 tasks/resubscribe from Last-Event-ID 0 replays the progress of a finished task', T, async () => {
    const { s: first, taskId } = await streamWithPush('tour', '/replay');
    const replay = await openA2AStream(srv.url, 'tasks/resubscribe', { id: taskId }, { lastEventId: 0 });
    assert.equal((await replay.waitForEnd()).reason, 'end');
    // Event 0 is run.created: the replay is the first stream without its Task.
    assert.deepEqual(results(replay), results(first).slice(1));
  });

  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    it(`1.0 ${binding} through @a2a-js/sdk 1.3.0: statusUpdate messages name each node; none when off`, T, async () => {
      const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [binding] });
      const client = await new ClientFactory(options).createFromUrl(srv.url);
      assert.equal(client.protocolVersion, '1.0');
      const stream = async (skill: string) => {
        const out: StreamResponse[] = [];
        const events = client.sendMessageStream({
          tenant: '',
          message: v1Message(skill),
          configuration: undefined,
          metadata: undefined,
        });
        for await (const e of events) out.push(e);
        return out;
      };
      const on = await stream('tour');
      assert.deepEqual(on.map(v1Word), [
        'task(TASK_STATE_SUBMITTED)',
        'TASK_STATE_WORKING',
        ...PROGRESS,
        'artifact',
        'TASK_STATE_COMPLETED',
      ]);
      const progress = on.filter((e) => v1Word(e).startsWith('▸'));
      assert.equal(progress.length, PROGRESS.length);
      for (const e of progress) {
        const u = e.payload?.$case === 'statusUpdate' ? e.payload.value : undefined;
        assert.equal(u?.status?.state, TaskState.TASK_STATE_WORKING);
        assert.equal(u?.status?.message?.role, Role.ROLE_AGENT);
        assert.match(u?.status?.message?.messageId ?? '', /:progress:\d+$/);
        assert.equal(typeof (u?.metadata as Json)?.openwop?.nodeId, 'string');
      }
      const off = await stream('tour-quiet');
      assert.equal(off.filter((e) => v1Word(e).startsWith('▸')).length, 0, off.map(v1Word).join(','));
      assert.deepEqual(off.map(v1Word), [
        'task(TASK_STATE_SUBMITTED)',
        'TASK_STATE_WORKING',
        'artifact',
        'TASK_STATE_COMPLETED',
      ]);
    });
  }

  it('1.0 HTTP+JSON :subscribe with Last-Event-ID replays the progress as statusUpdate members', T, async () => {
    const { s: first, taskId } = await streamWithPush('tour', '/rest');
    const sub = await openSse(`${srv.url}/v1/a2a/rest/tasks/${taskId}:subscribe`, {
      method: 'POST',
      headers: { 'a2a-version': '1.0' },
      lastEventId: 0,
    });
    assert.equal((await sub.waitForEnd()).reason, 'end', sub.describe());
    const v1 = sub.events.map((e) => e.json);
    const texts = v1
      .filter((r: Json) => r.statusUpdate?.status?.message)
      .map((r: Json) => `▸${r.statusUpdate.status.message.parts[0].text}`);
    assert.deepEqual(texts, PROGRESS);
    for (const r of v1.filter((x: Json) => x.statusUpdate?.status?.message)) {
      assert.equal(r.statusUpdate.status.state, 'TASK_STATE_WORKING');
      assert.equal(r.statusUpdate.status.message.role, 'ROLE_AGENT');
      assert.equal('final' in r.statusUpdate, false);
    }
    // The same events, in the same order, as the 0.3 stream (ids are the same log sequences).
    assert.deepEqual(
      sub.events.map((e) => e.id),
      first.events.slice(1).map((e) => e.id),
    );
  });
});
