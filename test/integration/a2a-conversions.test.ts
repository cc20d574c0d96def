// The shape-conversion budget of docs/architecture.md ("One A2A core, two versions"): a request
// crosses from its wire into the neutral model once and its answer back once — a 1.0 send at most
// two shape conversions, a 0.3 send at most three (a2a-go's budget for its a2av0 adapter). Counted
// by the codecs themselves (`shapeConversions`: every WireCodec call); the structural half checks
// that nothing converts outside them: only the 0.3 adapter, the codec registry, the 1.0 card and
// the CLI's 0.3 printing import the 0.3 wire types or the 0.3 codec.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { shapeConversions } from '../../src/a2a/codec/codec.js';
import { dataMessage, skillMessage, textMessage } from '../support/a2a.js';
import { type Json, type TestHost, startTestHost } from '../support/host.js';

const V1 = { 'a2a-version': '1.0' };
const ROOT = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url));

/** A 0.3 message as its 1.0 form (roles and parts by member name). */
function v1Message(m: Json): Json {
  const parts = (m.parts as Json[]).map((p) => (p.kind === 'text' ? { text: p.text } : { data: p.data }));
  const { kind: _kind, role: _role, ...rest } = m;
  return { ...rest, role: 'ROLE_USER', parts };
}

describe('shape conversions per request', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost();
  });
  after(async () => {
    await t?.close();
  });

  /** The conversions `call` made, with its reply. */
  async function counted(call: () => Promise<{ status: number; text: string; body: Json }>) {
    const before = shapeConversions.count;
    const res = await call();
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.error, undefined, res.text);
    return { conversions: shapeConversions.count - before, body: res.body };
  }
  const rpc = (method: string, params: Json, headers = {}) =>
    t.post('/v1/a2a', { jsonrpc: '2.0', id: 1, method, params }, headers);

  it('a 1.0 send (JSON-RPC and HTTP+JSON) crosses at most two; a reply and a get too', async () => {
    const viaRpc = await counted(() => rpc('SendMessage', { message: v1Message(textMessage('one')) }, V1));
    assert.equal(viaRpc.body.result.task.status.state, 'TASK_STATE_COMPLETED');
    assert.ok(viaRpc.conversions <= 2, `JSON-RPC SendMessage: ${viaRpc.conversions} conversions`);

    const viaRest = await counted(() =>
      t.post('/v1/a2a/rest/message:send', { message: v1Message(textMessage('two')) }, V1),
    );
    assert.ok(viaRest.conversions <= 2, `HTTP+JSON message:send: ${viaRest.conversions} conversions`);

    const gate = await counted(() => rpc('SendMessage', { message: v1Message(skillMessage('approval', 'draft')) }, V1));
    const taskId = gate.body.result.task.id as string;
    assert.equal(gate.body.result.task.status.state, 'TASK_STATE_INPUT_REQUIRED');
    const reply = await counted(() =>
      rpc('SendMessage', { message: v1Message(dataMessage({ action: 'accept' }, { taskId })) }, V1),
    );
    assert.equal(reply.body.result.task.status.state, 'TASK_STATE_COMPLETED');
    assert.ok(reply.conversions <= 2, `a 1.0 reply: ${reply.conversions} conversions`);

    const got = await counted(() => rpc('GetTask', { id: taskId }, V1));
    assert.ok(got.conversions <= 2, `GetTask: ${got.conversions} conversions`);
  });

  it('the history keeps a 1.0 message as sent; a 0.3 reader sees its own form of it', async () => {
    const message = {
      messageId: `msg-bare-${Date.now()}`,
      role: 'ROLE_USER',
      parts: [{ text: 'count', mediaType: 'text/plain' }, { data: 5 }],
    };
    const sent = await counted(() => rpc('SendMessage', { message }, V1));
    const id = sent.body.result.task.id as string;
    const v1 = await counted(() => rpc('GetTask', { id }, V1));
    assert.deepEqual(v1.body.result.history[0].parts, message.parts);
    const v03 = await counted(() => rpc('tasks/get', { id }));
    assert.deepEqual(v03.body.result.history[0].parts, [
      { kind: 'text', text: 'count' },
      { kind: 'data', data: { value: 5 } },
    ]);
  });

  it('a 0.3 send crosses at most three', async () => {
    const sent = await counted(() => rpc('message/send', { message: textMessage('three') }));
    assert.equal(sent.body.result.status.state, 'completed');
    assert.ok(sent.conversions <= 3, `message/send: ${sent.conversions} conversions`);
    const gate = await counted(() => rpc('message/send', { message: skillMessage('approval', 'draft') }));
    const reply = await counted(() =>
      rpc('message/send', { message: dataMessage({ action: 'accept' }, { taskId: gate.body.result.id }) }),
    );
    assert.equal(reply.body.result.status.state, 'completed');
    assert.ok(reply.conversions <= 3, `a 0.3 reply: ${reply.conversions} conversions`);
  });
});

describe('the 0.3 wire stays at the edge', () => {
  /** Files that may import the 0.3 wire types or the 0.3 codec. */
  const ALLOWED = [
    /^src\/a2a\/v0_3\//, // the adapter itself
    /^src\/a2a\/codec\/index\.ts$/, // the codec registry
    /^src\/a2a\/card-v1\.ts$/, // the 1.0 card, built from the 0.3 card
    /^src\/cli\//, // the CLI's 0.3 printing
  ];
  const files = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((d) =>
      d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
    );

  it('only the adapter, the codec registry, the 1.0 card and the CLI import them', () => {
    const offenders = files('src').filter((f) => {
      const rel = relative(ROOT, join(ROOT, f));
      if (ALLOWED.some((a) => a.test(rel))) return false;
      return /from '[./]*(?:a2a\/)?v0_3\/(?:types|codec)\.js'/.test(readFileSync(join(ROOT, f), 'utf8'));
    });
    assert.deepEqual(offenders, []);
  });

  it('the names the inversion removed are gone', () => {
    const src = files('src').map((f) => readFileSync(join(ROOT, f), 'utf8'));
    for (const name of ['toStoredSend', 'encodeStoredMessage', 'StoredTaskState', 'StoredSendParams', 'PeerTask']) {
      assert.ok(!src.some((text) => text.includes(name)), `${name} is still in src/`);
    }
  });
});
