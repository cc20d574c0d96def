// Slow SSE clients have a memory ceiling on a real listening host:
// - the first frame (the whole Task) counts against the per-stream cap: a Task larger than
//   HANDOFF_SSE_MAX_BUFFER is sent without history and artifacts, marked truncated, pointing to
//   tasks/get (it was written whole, whatever its size);
// - HANDOFF_SSE_MAX_STREAMS bounds open streams host-wide: one more is 503 + Retry-After (a
//   JSON-RPC error on /v1/a2a, 503 UNAVAILABLE on the HTTP+JSON binding — it was 500 INTERNAL),
//   and a refused message/stream starts nothing;
// - clients that never read hold at most HANDOFF_SSE_MAX_TOTAL_BUFFER together, and each is
//   destroyed once its buffer makes no progress for HANDOFF_SSE_STALL_MS — also after its stream
//   ended (it was kept forever: ending a response nobody reads never completes).
import assert from 'node:assert/strict';
import http from 'node:http';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { request } from 'undici';
import { sendOk, skillMessage } from '../support/a2a.js';
import { footprint, startTestHost, type TestHost } from '../support/host.js';
import { openA2AStream, openSse, type SseConnection } from '../support/sse-client.js';
import { until } from '../support/until.js';

const KIB = 1024;

/** A request whose response is not read: the server's writes pile up in the socket buffers. */
interface Stalled {
  /**
   * Start reading now and read to the end: `complete` is false when the server cut the stream
   * (a paused socket cannot see the cut before it reads).
   */
  readRest(): Promise<{ complete: boolean }>;
}

function stalledClient(url: string, method: 'GET' | 'POST' = 'GET', body?: unknown): Promise<Stalled> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method,
      agent: false,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      res.on('error', () => {});
      // Not resumed until readRest(): nothing is read before.
      resolve({
        readRest: () =>
          new Promise((r) => {
            res.once('close', () => r({ complete: res.complete }));
            res.resume();
          }),
      });
    });
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Bound a wait: fail naming `what` after `ms`. */
async function within<T>(p: Promise<T>, what: string, ms = 20_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function listen(t: TestHost): Promise<string> {
  return t.app.listen({ port: 0, host: '127.0.0.1' });
}

describe('the first frame fits the per-stream cap (HANDOFF_SSE_MAX_BUFFER 64 KiB)', () => {
  let t: TestHost;
  let url: string;
  before(async () => {
    t = await startTestHost({ env: { HANDOFF_SSE_MAX_BUFFER: String(64 * KIB) } });
    url = await listen(t);
  });
  after(async () => {
    await t?.close();
  });

  const BIG = 'x'.repeat(200 * KIB);

  function assertTrimmed(first: SseConnection['events'][number], taskId?: string): void {
    assert.ok(first.data.length <= 64 * KIB, `first frame of ${first.data.length} bytes`);
    const task = first.json.result;
    assert.equal(task.kind, 'task');
    if (taskId) assert.equal(task.id, taskId);
    assert.equal(task.history, undefined);
    assert.equal(task.artifacts, undefined);
    assert.equal(task.metadata.openwop.truncated, true);
    assert.match(task.metadata.openwop.hint, /tasks\/get/);
  }

  it('tasks/resubscribe on a 200 KiB Task: trimmed first frame, the state kept; tasks/get still gives it whole', async () => {
    const task = await sendOk(t, skillMessage('approval', BIG));
    const s = await openA2AStream(url, 'tasks/resubscribe', { id: task.id });
    try {
      const [first] = await s.waitForCount(1);
      assert.ok(first);
      assertTrimmed(first, task.id);
      assert.equal(first.json.result.status.state, 'input-required');
      assert.equal(first.json.result.metadata.openwop.interrupt.kind, 'approval');
    } finally {
      s.abort();
    }
    const whole = await request(`${url}/v1/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: task.id } }),
    });
    const body = (await whole.body.json()) as { result: { history: Array<{ parts: Array<{ text: string }> }> } };
    assert.equal(body.result.history[0]?.parts[0]?.text, BIG);
  });

  it('message/stream with a 200 KiB message: the first Task is trimmed too, the updates follow', async () => {
    const s = await openA2AStream(url, 'message/stream', { message: skillMessage('echo', BIG) });
    const end = await s.waitForEnd();
    assert.equal(end.reason, 'end');
    assert.ok(s.events[0]);
    assertTrimmed(s.events[0]);
    assert.equal(s.events.at(-1)?.json.result.status?.state, 'completed');
  });

  it('a Task within the cap is sent whole', async () => {
    const task = await sendOk(t, skillMessage('approval', 'small'));
    const s = await openA2AStream(url, 'tasks/resubscribe', { id: task.id });
    try {
      const [first] = await s.waitForCount(1);
      assert.equal(first?.json.result.history.length, 1);
      assert.equal(first?.json.result.metadata.openwop.truncated, undefined);
    } finally {
      s.abort();
    }
  });
});

describe('open streams are capped host-wide (HANDOFF_SSE_MAX_STREAMS 4)', () => {
  let t: TestHost;
  const internalErrors: unknown[] = [];
  let url: string;
  before(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) {
          const entry = JSON.parse(line);
          if (entry.level >= 50) internalErrors.push(entry);
        }
        done();
      },
    });
    t = await startTestHost({ env: { HANDOFF_SSE_MAX_STREAMS: '4' }, logger: pino({ level: 'error' }, sink) });
    url = await listen(t);
  });
  after(async () => {
    await t?.close();
  });

  it('the fifth stream is 503 + Retry-After on both surfaces (JSON-RPC -32029), nothing started; a freed place is reused', async () => {
    const taskId = (await sendOk(t, skillMessage('approval', 'watched'))).id;
    const open: SseConnection[] = [];
    for (let i = 0; i < 4; i++) {
      const s = await openA2AStream(url, 'tasks/resubscribe', { id: taskId });
      await s.waitForCount(1);
      open.push(s);
    }
    assert.equal(t.host.sse.size, 4);

    const before = await footprint(t);
    const refused = await openA2AStream(url, 'message/stream', { message: skillMessage('echo', 'x') }, { rpcId: 5 });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers['retry-after'], '5');
    assert.equal(refused.json.jsonrpc, '2.0');
    assert.equal(refused.json.id, 5);
    assert.equal(refused.json.error.code, -32029);
    assert.match(refused.json.error.message, /HANDOFF_SSE_MAX_STREAMS/);
    assert.deepEqual(refused.json.error.data, { retryAfterSeconds: 5 });
    assert.deepEqual(await footprint(t), before, 'a refused message/stream started a task');

    const resub = await openA2AStream(url, 'tasks/resubscribe', { id: taskId });
    assert.equal(resub.status, 503);
    const rest = await openSse(`${url}/v1/runs/${taskId}/events`);
    assert.equal(rest.status, 503);
    assert.equal(rest.headers['retry-after'], '5');
    assert.equal(rest.json.error, 'too_many_streams');
    // The A2A HTTP+JSON binding: 503 UNAVAILABLE as a google.rpc.Status, not 500 INTERNAL (it was,
    // and logged two internal errors).
    const v1 = { headers: { 'a2a-version': '1.0' } };
    for (const [path, body] of [
      [`/v1/a2a/rest/tasks/${taskId}:subscribe`, undefined],
      ['/v1/a2a/rest/message:stream', { message: { messageId: 'm-cap', role: 'ROLE_USER', parts: [{ text: 'x' }] } }],
    ] as const) {
      const binding = await openSse(`${url}${path}`, { ...v1, method: 'POST', ...(body ? { body } : {}) });
      assert.equal(binding.status, 503, path);
      assert.equal(binding.headers['retry-after'], '5', path);
      assert.match(binding.contentType, /^application\/a2a\+json/, path);
      assert.equal(binding.json.error.code, 503, path);
      assert.equal(binding.json.error.status, 'UNAVAILABLE', path);
      assert.equal(binding.json.error.details[0].reason, 'TOO_MANY_STREAMS', path);
      assert.match(binding.json.error.message, /HANDOFF_SSE_MAX_STREAMS/, path);
    }
    assert.equal(internalErrors.length, 0, JSON.stringify(internalErrors));
    assert.deepEqual(await footprint(t), before, 'a refused message:stream started a task');

    open.pop()?.abort();
    await until('the aborted stream to free its place', () => t.host.sse.size === 3);
    const again = await openA2AStream(url, 'tasks/resubscribe', { id: taskId });
    assert.equal(again.status, 200);
    await again.waitForCount(1);
    again.abort();
    for (const s of open) s.abort();
    await until('every stream to be gone', () => t.host.sse.size === 0);
  });
});

// A socket that is not read still takes 3–4 MiB into the kernel's buffers on loopback here, so the
// Tasks below are large (about 6 MB: a 3 MB prompt in the history and again in the artifact or the
// draft to approve): what the kernel does not take waits in the server's memory.
describe('clients that never read (caps: 8 MiB per stream and host-wide; HANDOFF_SSE_STALL_MS 1 s)', () => {
  const MIB = 1024 * KIB;
  const PROMPT = 'y'.repeat(3 * MIB);
  let t: TestHost;
  let url: string;
  before(async () => {
    t = await startTestHost({
      env: {
        HANDOFF_BODY_LIMIT: String(8 * MIB),
        HANDOFF_SSE_MAX_BUFFER: String(8 * MIB),
        HANDOFF_SSE_MAX_TOTAL_BUFFER: String(8 * MIB),
        HANDOFF_SSE_STALL_MS: '1000',
      },
    });
    url = await listen(t);
  });
  after(async () => {
    await t?.close();
  });

  /** Run `fn` while sampling the host's buffered bytes; returns the most seen at once. */
  async function sampling(fn: () => Promise<void>): Promise<number> {
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, t.host.sse.buffered)), 1);
    try {
      await fn();
    } finally {
      clearInterval(sampler);
    }
    return Math.max(most, t.host.sse.buffered);
  }

  const resubscribe = (id: string) => ({ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id } });

  it('twelve stalled resubscribers of a finished 6 MB Task: never more than the host-wide cap buffered, all cut, /healthz answers', async () => {
    const task = await sendOk(t, skillMessage('echo', PROMPT));
    assert.equal(task.status.state, 'completed');
    const most = await sampling(async () => {
      const clients = await Promise.all(
        Array.from({ length: 12 }, () => stalledClient(`${url}/v1/a2a`, 'POST', resubscribe(task.id))),
      );
      const health = await request(`${url}/healthz`);
      assert.equal(health.statusCode, 200);
      await health.body.dump();
      await until('every stalled stream to be destroyed', () => t.host.sse.size === 0);
      const ends = await within(Promise.all(clients.map((c) => c.readRest())), 'the clients to read the rest');
      assert.ok(
        ends.every((e) => !e.complete),
        'a stalled client was sent its stream whole',
      );
    });
    assert.ok(most <= 8 * MIB, `${most} bytes buffered at once, above the 8 MiB host-wide cap`);
    assert.ok(most > 0, 'nothing was ever buffered: the test stalled nobody');
    assert.equal(t.host.sse.buffered, 0, 'bytes of destroyed streams still counted');
  });

  it('a REST event stream that ended with its end unflushed is destroyed, not kept', async () => {
    // The whole log is written (each frame goes while less than half the cap waits), the stream
    // ends, and most of it is still in the server's buffer: only the stall sweep can free it.
    const res = await t.post('/v1/runs', { workflowId: 'echo', inputs: { prompt: PROMPT } });
    assert.equal(res.status, 201, res.text);
    await t.waitForStatus(res.body.runId, ['completed']);
    const most = await sampling(async () => {
      const client = await stalledClient(`${url}/v1/runs/${res.body.runId}/events`);
      await until('the ended stream to be destroyed', () => t.host.sse.size === 0);
      const end = await within(client.readRest(), 'the client to read the rest');
      assert.equal(end.complete, false, 'the stream was kept until the client read it whole');
    });
    assert.ok(most > 0, 'nothing was ever buffered: the test stalled nobody');
    assert.equal(t.host.sse.buffered, 0);
  });

  it('a resubscriber of a waiting task that never reads is cut once its buffer stalls', async () => {
    const taskId = (await sendOk(t, skillMessage('approval', PROMPT))).id;
    const client = await stalledClient(`${url}/v1/a2a`, 'POST', resubscribe(taskId));
    await until('the stalled resubscriber to be destroyed', () => t.host.sse.size === 0);
    assert.equal((await within(client.readRest(), 'the client to read the rest')).complete, false);
    assert.equal((await t.get(`/v1/runs/${taskId}`)).body.status, 'waiting-approval', 'the task is untouched');
  });
});
