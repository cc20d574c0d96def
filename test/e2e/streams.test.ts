// A2A streams end to end: the REAL compiled server (`handoff serve`) in a child process, driven by
// the official client `@a2a-js/sdk@0.3.14` AND by a raw SSE client (test/support/sse-client.ts).
// What is checked is the stream-cursor decision of docs/decisions.md: the SSE `id:` of every A2A update is the
// run event sequence, so a client that drops its stream mid-run and re-attaches with the last id
// it saw (Last-Event-ID header, or params.metadata.lastEventId) gets exactly what it missed, then
// the live updates, through `completed` with `final: true` — also across a SIGKILL and restart of
// the server on the same database and port — and re-attaching never starts the run again.
//
// The reference for "exactly" is the run's own event log (GET /v1/runs/{id}/events/poll): the
// union of the SSE ids a client received before and after the drop must equal, in order, the log
// events that map to A2A updates (expectedA2AUpdates): no gap, no duplicate, nothing else.
//
// How the SDK's SSE ids are seen: the SDK client never exposes `id:` fields, so its transport gets
// a fetch wrapper (SseTap) that passes every SSE body through a TransformStream which feeds the
// same bytes to eventsource-parser before handing them on. The i-th event the SDK yields is then
// the i-th frame the tap parsed. The bearer key goes in through a CallInterceptor, as in
// test/e2e/a2a-sdk.test.ts; Last-Event-ID goes in as a `serviceParameters` header of the call.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Message, MessageSendParams, Part } from 'a2a-js-sdk-v03';
import {
  type BeforeArgs,
  type CallInterceptor,
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
} from 'a2a-js-sdk-v03/client';
import { createParser } from 'eventsource-parser';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';
import {
  type ExpectedUpdate,
  expectedA2AUpdates,
  type Json,
  openA2AStream,
  resultWord,
  SSE_WAIT_MS,
  type SseConnection,
} from '../support/sse-client.js';

const ALICE = 'key-alice-123';
const BOB = 'key-bob-4567';
// Keepalive comments every 200 ms: a stream that must stay open is seen to be open by a comment
// arriving after its last event (a condition, not a sleep).
const ENV = { HANDOFF_API_KEYS: `${ALICE}=acme:alice,${BOB}=other:bob`, HANDOFF_SSE_KEEPALIVE_MS: '200' };
const STEPS = { steps: 6, stepMs: 150 };
const CALL_TIMEOUT_MS = 30_000;
const TEST_TIMEOUT_MS = 240_000;

const dirs: string[] = [];
const freshDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'handoff-streams-'));
  dirs.push(d);
  return d;
};

after(async () => {
  await killAllServers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// One event of an A2A stream as a client saw it: the SSE id (a run event sequence) and the result.

interface Seen {
  id?: number;
  result: Json;
}

const seenOf = (c: SseConnection): Seen[] =>
  c.events.map((e) => {
    assert.equal(e.json?.jsonrpc, '2.0', `not a JSON-RPC response: ${e.data}`);
    assert.ok(!('error' in e.json), `error event in the stream: ${e.data}`);
    return e.id === undefined ? { result: e.json.result } : { id: Number(e.id), result: e.json.result };
  });

const describeSeen = (s: Seen[]): string =>
  s
    .map((x) => {
      const r = x.result;
      const what =
        r.kind === 'task'
          ? `task(${r.status.state})`
          : r.kind === 'status-update'
            ? `status(${r.status.state}${r.final ? ',final' : ''})`
            : r.kind;
      return `${x.id ?? '-'}:${what}`;
    })
    .join(', ');

// ---------------------------------------------------------------------------------------------
// SDK clients with a tap on their SSE bodies

/** Adds the bearer key to every call; keeps the caller's own signal (streams pass one). */
class BearerAuth implements CallInterceptor {
  constructor(private readonly key: string) {}
  async before(args: BeforeArgs): Promise<void> {
    args.options = {
      ...args.options,
      signal: args.options?.signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS),
      serviceParameters: { ...args.options?.serviceParameters, Authorization: `Bearer ${this.key}` },
    };
  }
  async after(): Promise<void> {}
}

/** The SSE frames of one response, as the tap parsed them, in order. */
interface TappedStream {
  ids: Array<string | undefined>;
  comments: number;
}

/** A fetch for the SDK transport that records the `id:` of every SSE frame it passes on. */
class SseTap {
  readonly streams: TappedStream[] = [];
  /** Called after every frame or comment the tap parses. */
  readonly listeners = new Set<() => void>();
  readonly fetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (!res.body || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) return res;
    const rec: TappedStream = { ids: [], comments: 0 };
    this.streams.push(rec);
    const parser = createParser({
      onEvent: (m) => {
        rec.ids.push(m.id);
        for (const l of this.listeners) l();
      },
      onComment: () => {
        rec.comments++;
        for (const l of this.listeners) l();
      },
    });
    const decoder = new TextDecoder();
    const body = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, ctl) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          ctl.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

interface TappedClient {
  client: Client;
  tap: SseTap;
}

/** An SDK client found through the agent card, as `key`, whose JSON-RPC transport is tapped. */
async function sdkClient(baseUrl: string, key: string): Promise<TappedClient> {
  const tap = new SseTap();
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: tap.fetch })],
    clientConfig: { interceptors: [new BearerAuth(key)] },
  });
  return { client: await new ClientFactory(options).createFromUrl(baseUrl), tap };
}

/**
 * One SDK stream consumed in the background: every event it yields, paired with the SSE id the tap
 * saw for it. `drop()` aborts the request (the connection closes, as when a client goes away).
 */
class SdkStream {
  readonly seen: Seen[] = [];
  readonly done: Promise<void>;
  error: unknown;
  finished = false;
  private readonly controller = new AbortController();
  private readonly waiters = new Set<() => void>();
  private tapped: TappedStream | undefined;

  constructor(
    private readonly tc: TappedClient,
    open: (options: { signal: AbortSignal; serviceParameters?: Record<string, string> }) => AsyncGenerator<Json>,
    serviceParameters?: Record<string, string>,
  ) {
    const signal = AbortSignal.any([this.controller.signal, AbortSignal.timeout(90_000)]);
    const before = tc.tap.streams.length;
    const listener = () => this.notify();
    tc.tap.listeners.add(listener);
    this.done = (async () => {
      try {
        for await (const ev of open({ signal, ...(serviceParameters ? { serviceParameters } : {}) })) {
          this.tapped ??= tc.tap.streams[before];
          assert.ok(this.tapped, 'the SDK stream did not pass through the tap');
          const id = this.tapped.ids[this.seen.length];
          this.seen.push(id === undefined ? { result: ev } : { id: Number(id), result: ev });
          this.notify();
        }
      } catch (err) {
        if (!this.controller.signal.aborted) this.error = err;
      } finally {
        tc.tap.listeners.delete(listener);
        this.finished = true;
        this.notify();
      }
    })();
  }

  /** Keepalive comments seen on this stream so far. */
  get comments(): number {
    return (this.tapped ?? this.tc.tap.streams.at(-1))?.comments ?? 0;
  }

  drop(): void {
    this.controller.abort();
  }

  /** Wait until `cond()` holds; fails after `timeoutMs`, or if the stream ends first. */
  until(cond: () => boolean, what: string, timeoutMs = SSE_WAIT_MS): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const poll = () => {
        if (cond()) {
          clearTimeout(timer);
          this.waiters.delete(poll);
          resolve();
        } else if (this.finished) {
          clearTimeout(timer);
          this.waiters.delete(poll);
          reject(
            new Error(`SDK stream ended before ${what}: [${describeSeen(this.seen)}] ${String(this.error ?? '')}`),
          );
        }
      };
      timer = setTimeout(() => {
        this.waiters.delete(poll);
        reject(new Error(`no ${what} within ${timeoutMs} ms: [${describeSeen(this.seen)}]`));
      }, timeoutMs);
      this.waiters.add(poll);
      poll();
    });
  }

  /** Wait for the server to end the stream; it must end without error. */
  async ended(timeoutMs = SSE_WAIT_MS): Promise<Seen[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
    const res = await Promise.race([this.done, timeout]);
    clearTimeout(timer);
    if (res === 'timeout') {
      this.drop();
      assert.fail(`the SDK stream did not end within ${timeoutMs} ms: [${describeSeen(this.seen)}]`);
    }
    assert.equal(this.error, undefined, `the SDK stream failed: ${String(this.error)}`);
    return this.seen;
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Wait for a keepalive comment beyond the first `after`: proof the stream is still open. */
  untilComment(after: number, timeoutMs = SSE_WAIT_MS): Promise<void> {
    return this.until(() => this.comments > after, 'a keepalive comment', timeoutMs);
  }
}

const userMessage = (parts: Part[], extra: Partial<Message> = {}): Message => ({
  kind: 'message',
  role: 'user',
  messageId: randomUUID(),
  parts,
  ...extra,
});

const stepsParams = (): MessageSendParams => ({
  message: userMessage([{ kind: 'data', data: { ...STEPS } }], { metadata: { skillId: 'steps' } }),
});
const approvalParams = (prompt: string): MessageSendParams => ({
  message: userMessage([{ kind: 'text', text: prompt }], { metadata: { skillId: 'approval' } }),
});

// ---------------------------------------------------------------------------------------------
// REST helpers

interface RunEventDoc {
  runId: string;
  type: string;
  sequence: number;
  payload: Record<string, Json>;
}

/** The run's whole event log (GET …/events/poll?lastSequence=-1&timeout=0&limit=1000). */
async function eventLog(srv: ServerProcess, runId: string): Promise<RunEventDoc[]> {
  const res = await getJson(`${srv.url}/v1/runs/${runId}/events/poll?lastSequence=-1&timeout=0&limit=1000`, {
    token: ALICE,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const events = res.body.events as RunEventDoc[];
  assert.ok(events.length < 1000, 'the log is longer than one page');
  for (const [i, e] of events.entries()) assert.equal(e.sequence, i, 'the event log is not gap-free');
  return events;
}

/** Poll the run snapshot until `done(status)` (long-polls the log between reads: no fixed sleeps). */
async function waitForRun(
  srv: ServerProcess,
  runId: string,
  done: (status: string) => boolean,
  deadlineMs = SSE_WAIT_MS,
): Promise<Json> {
  let last = -1;
  let run: Json;
  const settled = async () => {
    // Between two reads of the snapshot, wait for the log to move instead of sleeping.
    if (run !== undefined) {
      const url = `${srv.url}/v1/runs/${runId}/events/poll?lastSequence=${last}&timeout=1`;
      last = (await getJson(url, { token: ALICE })).body.lastEventSeq ?? last;
    }
    const res = await getJson(`${srv.url}/v1/runs/${runId}`, { token: ALICE });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    run = res.body;
    return done(run.status) && run;
  };
  return until(`run ${runId} to settle`, settled, {
    deadlineMs,
    intervalMs: 0,
    detail: () => `stuck at ${run?.status}`,
  });
}

async function rawRpc(srv: ServerProcess, method: string, params: unknown, key = ALICE): Promise<Json> {
  const id = `r-${randomUUID()}`;
  const res = await postJson(
    `${srv.url}/v1/a2a`,
    { jsonrpc: '2.0', id, method, params },
    { token: key, timeoutMs: CALL_TIMEOUT_MS },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.id, id);
  return res.body;
}

async function approveViaRest(srv: ServerProcess, runId: string): Promise<void> {
  const res = await postJson(
    `${srv.url}/v1/runs/${runId}/interrupts/review`,
    { resumeValue: { action: 'accept' } },
    { token: ALICE },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

// ---------------------------------------------------------------------------------------------
// The checks

/** Every event belongs to `taskId` (and says so in metadata.openwop.runId where it has one). */
function assertOneTask(seen: Seen[], taskId: string, contextId: string): void {
  for (const s of seen) {
    const r = s.result;
    const id = r.kind === 'task' ? r.id : r.taskId;
    assert.equal(id, taskId, `event of another task: ${JSON.stringify(r)}`);
    assert.equal(r.contextId, contextId, `contextId changed: ${JSON.stringify(r)}`);
    if (r.metadata?.openwop?.runId !== undefined) assert.equal(r.metadata.openwop.runId, taskId);
  }
}

/** An update matches the log event it was made from. */
function assertMatches(s: Seen, exp: ExpectedUpdate, log: RunEventDoc[]): void {
  assert.equal(
    s.result.kind,
    exp.kind,
    `id ${s.id}: expected ${exp.kind} for ${log[exp.seq]?.type}, got ${JSON.stringify(s.result)}`,
  );
  if (exp.state !== undefined) assert.equal(s.result.status.state, exp.state, `id ${s.id}: state`);
}

/**
 * The union of the SSE ids received before and after the drop, restricted to A2A updates, is
 * exactly the log's A2A updates (no gap, no duplicate, nothing extra), in order; everything after
 * the drop lies after the cursor; the last update is `completed` with final:true and is the only
 * final one.
 */
function assertResumedExactly(log: RunEventDoc[], beforeDrop: Seen[], afterDrop: Seen[], cursor: number): void {
  const expected = expectedA2AUpdates(log);
  const updates = [...beforeDrop, ...afterDrop].filter((s) => s.result.kind !== 'task');
  const ids = updates.map((s) => s.id);
  const detail =
    `before [${describeSeen(beforeDrop)}] after [${describeSeen(afterDrop)}]; ` +
    `log updates ${JSON.stringify(expected)}`;
  assert.ok(
    ids.every((id) => id !== undefined),
    `an update without an SSE id: ${detail}`,
  );
  assert.equal(new Set(ids).size, ids.length, `a duplicate SSE id: ${detail}`);
  assert.deepEqual(
    ids,
    expected.map((e) => e.seq),
    `gap or extra update: ${detail}`,
  );
  for (const [i, s] of updates.entries()) assertMatches(s, expected[i] as ExpectedUpdate, log);
  for (const s of afterDrop)
    assert.ok(s.id !== undefined && s.id > cursor, `replayed an event at or before the cursor ${cursor}: ${detail}`);
  const last = updates.at(-1)?.result;
  assert.equal(last?.kind, 'status-update', detail);
  assert.equal(last.status.state, 'completed', detail);
  assert.equal(last.final, true, detail);
  assert.equal(updates.filter((s) => s.result.final === true).length, 1, `more than one final update: ${detail}`);
  assert.equal(log.filter((e) => e.type === 'run.started').length, 1, 'the run was started more than once');
  assert.ok(
    log.every((e) => !['run.cancelling', 'run.cancelled'].includes(e.type)),
    'dropping a stream must never cancel the task',
  );
}

/** A new task's message/stream opens with the Task as it was before the message: submitted. */
function assertSubmittedFirst(first: Seen | undefined): { taskId: string; contextId: string } {
  assert.ok(first, 'no first event');
  assert.equal(first.result.kind, 'task', JSON.stringify(first.result));
  assert.equal(first.result.status.state, 'submitted');
  assert.match(first.result.id, /^run_/);
  return { taskId: first.result.id, contextId: first.result.contextId };
}

// ---------------------------------------------------------------------------------------------

describe('A2A streams: drop and resubscribe against the real server', { timeout: 10 * TEST_TIMEOUT_MS }, () => {
  let srv: ServerProcess;

  before(async () => {
    srv = await startServer({ dataDir: freshDir(), env: ENV });
  });

  for (const via of ['header', 'metadata'] as const) {
    it(`raw SSE: message/stream steps, drop after 2 events, resubscribe with the last id (${via}) → exactly the rest`, {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const stream = await openA2AStream(srv.url, 'message/stream', stepsParams(), { token: ALICE });
      assert.equal(stream.status, 200);
      assert.match(stream.contentType, /^text\/event-stream/);
      await stream.waitForCount(2);
      stream.abort();
      const beforeDrop = seenOf(stream);
      const { taskId, contextId } = assertSubmittedFirst(beforeDrop[0]);
      assert.ok(
        beforeDrop.every((s) => s.result.final !== true),
        `the stream ended before the drop: ${describeSeen(beforeDrop)}`,
      );
      const cursor = Number(stream.lastEventId);
      assert.ok(Number.isInteger(cursor), `no SSE id before the drop: ${stream.describe()}`);

      const resub = await openA2AStream(
        srv.url,
        'tasks/resubscribe',
        via === 'header' ? { id: taskId } : { id: taskId, metadata: { lastEventId: cursor } },
        { token: ALICE, ...(via === 'header' ? { lastEventId: cursor } : {}) },
      );
      assert.equal(resub.status, 200, resub.text);
      assert.match(resub.contentType, /^text\/event-stream/);
      const end = await resub.waitForEnd();
      assert.equal(end.reason, 'end', 'the server closes the stream after final:true');
      const afterDrop = seenOf(resub);
      assert.ok(afterDrop.length > 0, 'nothing after the resubscribe');
      assert.notEqual(afterDrop[0]?.result.kind, 'task', 'with a cursor the backlog comes first, not a Task snapshot');
      assertOneTask([...beforeDrop, ...afterDrop], taskId, contextId);
      assertResumedExactly(await eventLog(srv, taskId), beforeDrop, afterDrop, cursor);
    });

    it(`@a2a-js/sdk: sendMessageStream steps, drop after 2 events, resubscribeTask with the last id (${via}) \
→ exactly the rest`, {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const tc = await sdkClient(srv.url, ALICE);
      const first = new SdkStream(tc, (o) => tc.client.sendMessageStream(stepsParams(), o));
      await first.until(() => first.seen.length >= 2, '2 events');
      first.drop();
      await first.done;
      assert.equal(first.error, undefined, String(first.error));
      const beforeDrop = [...first.seen];
      const { taskId, contextId } = assertSubmittedFirst(beforeDrop[0]);
      const cursor = beforeDrop.at(-1)?.id;
      assert.ok(cursor !== undefined, `no SSE id before the drop: ${describeSeen(beforeDrop)}`);
      assert.ok(
        beforeDrop.every((s) => s.result.final !== true),
        `the stream ended before the drop: ${describeSeen(beforeDrop)}`,
      );

      // A second client (a new process, say) re-attaches with only the ids it kept.
      const tc2 = await sdkClient(srv.url, ALICE);
      const resub =
        via === 'header'
          ? new SdkStream(tc2, (o) => tc2.client.resubscribeTask({ id: taskId }, o), {
              'Last-Event-ID': String(cursor),
            })
          : new SdkStream(tc2, (o) => tc2.client.resubscribeTask({ id: taskId, metadata: { lastEventId: cursor } }, o));
      const afterDrop = await resub.ended();
      assert.ok(afterDrop.length > 0, 'nothing after the resubscribe');
      assert.notEqual(afterDrop[0]?.result.kind, 'task');
      assertOneTask([...beforeDrop, ...afterDrop], taskId, contextId);
      assertResumedExactly(await eventLog(srv, taskId), beforeDrop, afterDrop, cursor);
    });
  }

  it('missed, then live: a dropped approval stream resumed after its input-required gets that backlog, stays open, \
then follows to completed', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    // message/stream, drop after the Task and `working`: the input-required happens while away.
    const stream = await openA2AStream(srv.url, 'message/stream', approvalParams('missed then live'), { token: ALICE });
    await stream.waitForCount(2);
    stream.abort();
    const beforeDrop = seenOf(stream).slice(0, 2);
    const { taskId, contextId } = assertSubmittedFirst(beforeDrop[0]);
    assert.equal(beforeDrop[1]?.result.status?.state, 'working');
    const cursor = beforeDrop[1]?.id as number;
    await waitForRun(srv, taskId, (s) => s === 'waiting-approval');

    const resub = await openA2AStream(
      srv.url,
      'tasks/resubscribe',
      { id: taskId },
      { token: ALICE, lastEventId: cursor },
    );
    const missed = await resub.waitFor(
      (e) => e.json?.result?.status?.state === 'input-required',
      'the missed input-required',
    );
    assert.equal(missed.json.result.final, false, 'a resubscribed stream stays open across input-required');
    assert.equal(missed.json.result.metadata.openwop.interrupt.kind, 'approval');
    const comments = resub.comments.length;
    await resub.waitForComment((c) => c === 'keepalive', 'a keepalive after input-required', SSE_WAIT_MS, comments);
    assert.equal(resub.end, undefined, 'the stream closed at input-required');

    await approveViaRest(srv, taskId);
    assert.equal((await resub.waitForEnd()).reason, 'end');
    const afterDrop = seenOf(resub);
    assert.deepEqual(
      afterDrop.map((s) => resultWord(s.result)),
      [
        '▸Draft (1 of 3)',
        '▸Review (2 of 3)',
        'input-required',
        'working',
        '▸Publish (3 of 3)',
        'artifact',
        'completed!',
      ],
    );
    assertOneTask([...beforeDrop, ...afterDrop], taskId, contextId);
    assertResumedExactly(await eventLog(srv, taskId), beforeDrop, afterDrop, cursor);
  });

  it('raw SSE: resubscribe (no cursor) to an approval task at its gate → Task input-required, stays open, \
then working → artifact → completed final', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const sent = await rawRpc(srv, 'message/send', approvalParams('approve me live'));
    const task = sent.result;
    assert.equal(task.status.state, 'input-required', JSON.stringify(sent));

    const resub = await openA2AStream(srv.url, 'tasks/resubscribe', { id: task.id }, { token: ALICE });
    assert.equal(resub.status, 200, resub.text);
    const [first] = await resub.waitForCount(1);
    assert.equal(first?.json.result.kind, 'task', 'without a cursor the current Task comes first');
    assert.equal(first?.json.result.id, task.id);
    assert.equal(first?.json.result.status.state, 'input-required');
    assert.equal(first?.json.result.metadata.openwop.interrupt.kind, 'approval');
    const firstId = Number(first?.id);
    assert.ok(Number.isInteger(firstId), 'the snapshot carries the SSE id of the log position it reflects');

    // While waiting, the stream stays open: keepalives arrive and no final:true is sent.
    const c0 = resub.comments.length;
    await resub.waitForComment((c) => c === 'keepalive', 'a keepalive while waiting', SSE_WAIT_MS, c0);
    await resub.waitForComment(
      (c) => c === 'keepalive',
      'a second keepalive while waiting',
      SSE_WAIT_MS,
      resub.comments.length,
    );
    assert.equal(resub.events.length, 1, `unexpected events while waiting: ${resub.describe()}`);
    assert.equal(resub.end, undefined);

    // Another client approves over REST.
    await approveViaRest(srv, task.id);
    assert.equal((await resub.waitForEnd()).reason, 'end');
    const rest = seenOf(resub).slice(1);
    assert.deepEqual(
      rest.map((s) => resultWord(s.result)),
      ['working', '▸Publish (3 of 3)', 'artifact', 'completed!'],
      describeSeen(rest),
    );
    assert.deepEqual(rest[2]?.result.artifact.parts[0].data, { text: 'Draft: approve me live', approvedBy: 'alice' });
    const ids = rest.map((s) => s.id as number);
    assert.ok(
      ids.every((id, i) => id > (i === 0 ? firstId : (ids[i - 1] as number))),
      `ids not increasing after the snapshot: ${ids}`,
    );
    const log = await eventLog(srv, task.id);
    assert.deepEqual(
      ids,
      expectedA2AUpdates(log)
        .filter((e) => e.seq > firstId)
        .map((e) => e.seq),
    );
  });

  it('@a2a-js/sdk: resubscribeTask (no cursor) at the gate stays open; \
an A2A approval from another client completes it on the same stream', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const tc = await sdkClient(srv.url, ALICE);
    const task = (await tc.client.sendMessage(approvalParams('approve me via A2A'))) as Json;
    assert.equal(task.kind, 'task');
    assert.equal(task.status.state, 'input-required');

    const resub = new SdkStream(tc, (o) => tc.client.resubscribeTask({ id: task.id }, o));
    await resub.until(() => resub.seen.length >= 1, 'the Task snapshot');
    assert.equal(resub.seen[0]?.result.kind, 'task');
    assert.equal(resub.seen[0]?.result.status.state, 'input-required');
    const c0 = resub.comments;
    await resub.untilComment(c0);
    assert.equal(resub.seen.length, 1, `events while waiting: ${describeSeen(resub.seen)}`);
    assert.equal(resub.finished, false, 'the resubscribed stream ended at input-required');

    const other = await sdkClient(srv.url, ALICE);
    const done = (await other.client.sendMessage({
      message: userMessage([{ kind: 'data', data: { action: 'accept' } }], {
        taskId: task.id,
        contextId: task.contextId,
      }),
    })) as Json;
    assert.equal(done.status.state, 'completed');

    const seen = await resub.ended();
    assert.deepEqual(
      seen.slice(1).map((s) => resultWord(s.result)),
      ['working', '▸Publish (3 of 3)', 'artifact', 'completed!'],
      describeSeen(seen),
    );
    assertOneTask(seen, task.id, task.contextId);
  });

  it('message/stream of a new approval task ends with input-required final:true (raw SSE and SDK)', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const raw = await openA2AStream(srv.url, 'message/stream', approvalParams('stream me'), { token: ALICE });
    assert.equal((await raw.waitForEnd()).reason, 'end');
    const seen = seenOf(raw);
    const { taskId, contextId } = assertSubmittedFirst(seen[0]);
    assert.deepEqual(
      seen.slice(1).map((s) => resultWord(s.result)),
      ['working', '▸Draft (1 of 3)', '▸Review (2 of 3)', 'input-required!'],
      describeSeen(seen),
    );
    assert.equal(seen.at(-1)?.result.metadata.openwop.interrupt.kind, 'approval');
    assertOneTask(seen, taskId, contextId);
    const log = await eventLog(srv, taskId);
    assert.deepEqual(
      seen.slice(1).map((s) => s.id),
      expectedA2AUpdates(log).map((e) => e.seq),
    );

    const tc = await sdkClient(srv.url, ALICE);
    const sdk = await new SdkStream(tc, (o) => tc.client.sendMessageStream(approvalParams('stream me too'), o)).ended();
    assert.equal(sdk[0]?.result.kind, 'task');
    assert.equal(sdk[0]?.result.status.state, 'submitted');
    assert.deepEqual(
      sdk.slice(1).map((s) => resultWord(s.result)),
      ['working', '▸Draft (1 of 3)', '▸Review (2 of 3)', 'input-required!'],
      describeSeen(sdk),
    );
  });

  it('tasks/resubscribe of an unknown or foreign task is SSE with the JSON-RPC -32001 as the one event', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const sent = await rawRpc(srv, 'message/send', approvalParams('alice only'));
    for (const [id, key] of [
      ['run_does-not-exist', ALICE],
      [sent.result.id as string, BOB],
    ] as const) {
      const s = await openA2AStream(srv.url, 'tasks/resubscribe', { id }, { token: key, rpcId: 'x-1' });
      assert.equal(s.status, 200);
      assert.ok(s.isSse, `expected SSE, got ${s.contentType}`);
      assert.deepEqual(await s.ended, { reason: 'end' });
      assert.equal(s.events.length, 1);
      const [e] = s.events;
      assert.equal(e?.event, 'error');
      assert.equal(e?.json?.jsonrpc, '2.0');
      assert.equal(e?.json?.id, 'x-1');
      assert.equal(e?.json?.error?.code, -32001, e?.data);
      assert.ok(!('result' in (e?.json ?? {})));
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('A2A streams across a SIGKILL and restart (same data dir and port)', { timeout: 4 * TEST_TIMEOUT_MS }, () => {
  it('raw SSE and SDK streams dropped mid-run, server killed and restarted, resubscribed with their last ids \
→ exactly the rest; one run.started, same runId', {
    timeout: 3 * TEST_TIMEOUT_MS,
  }, async () => {
    const dataDir = freshDir();
    let srv = await startServer({ dataDir, env: ENV });

    // Two steps tasks, one streamed raw, one through the SDK (its client made first, so both
    // streams start together); both dropped after ≥2 events, then the server is killed at once.
    const tc = await sdkClient(srv.url, ALICE);
    const raw = await openA2AStream(srv.url, 'message/stream', stepsParams(), { token: ALICE });
    const sdk = new SdkStream(tc, (o) => tc.client.sendMessageStream(stepsParams(), o));
    await Promise.all([raw.waitForCount(2), sdk.until(() => sdk.seen.length >= 2, '2 SDK events')]);
    const rawTask = assertSubmittedFirst(seenOf(raw)[0]);

    // One more observer attaches (no cursor) while the run goes on, and drops: re-attaching must
    // not restart anything.
    const extra = await openA2AStream(srv.url, 'tasks/resubscribe', { id: rawTask.taskId }, { token: ALICE });
    await extra.waitForCount(1);
    assert.equal(seenOf(extra)[0]?.result.status.state, 'working');
    extra.abort();

    raw.abort();
    sdk.drop();
    await sdk.done;
    const rawBefore = seenOf(raw);
    const sdkBefore = [...sdk.seen];
    const sdkTask = assertSubmittedFirst(sdkBefore[0]);
    const rawCursor = Number(raw.lastEventId);
    const sdkCursor = sdkBefore.at(-1)?.id as number;
    assert.ok(Number.isInteger(rawCursor) && Number.isInteger(sdkCursor));

    // Both runs are mid-run when the server dies.
    const runs = await Promise.all(
      [rawTask, sdkTask].map((t) => getJson(`${srv.url}/v1/runs/${t.taskId}`, { token: ALICE })),
    );
    for (const run of runs) {
      assert.ok(
        ['running', 'pending'].includes(run.body.status),
        `run already ${run.body.status} before the kill: steps too fast for this machine`,
      );
    }
    const exit = await srv.kill();
    assert.equal(exit.signal, 'SIGKILL');
    const port = srv.port;
    srv = await startServer({ dataDir, env: ENV, port });
    assert.equal(srv.port, port);

    // Re-attach: raw with the Last-Event-ID header, the SDK (same client, same card URL) via metadata.
    const rawResub = await openA2AStream(
      srv.url,
      'tasks/resubscribe',
      { id: rawTask.taskId },
      { token: ALICE, lastEventId: rawCursor },
    );
    const sdkResub = new SdkStream(tc, (o) =>
      tc.client.resubscribeTask({ id: sdkTask.taskId, metadata: { lastEventId: sdkCursor } }, o),
    );
    assert.equal((await rawResub.waitForEnd(60_000)).reason, 'end');
    const rawAfter = seenOf(rawResub);
    const sdkAfter = await sdkResub.ended(60_000);

    const rawLog = await eventLog(srv, rawTask.taskId);
    const sdkLog = await eventLog(srv, sdkTask.taskId);
    assertOneTask([...rawBefore, ...rawAfter], rawTask.taskId, rawTask.contextId);
    assertOneTask([...sdkBefore, ...sdkAfter], sdkTask.taskId, sdkTask.contextId);
    assertResumedExactly(rawLog, rawBefore, rawAfter, rawCursor);
    assertResumedExactly(sdkLog, sdkBefore, sdkAfter, sdkCursor);
    assert.deepEqual(rawLog.find((e) => e.type === 'artifact.created')?.payload.data, { steps: 6 });

    // Resubscribe several more times after the restart: a terminal task gets its snapshot and the
    // stream closes; a full replay (cursor -1) repeats exactly the log's updates. Nothing restarts.
    for (const t of [rawTask, sdkTask]) {
      for (let i = 0; i < 3; i++) {
        const snap = await openA2AStream(srv.url, 'tasks/resubscribe', { id: t.taskId }, { token: ALICE });
        assert.equal((await snap.waitForEnd()).reason, 'end');
        const s = seenOf(snap);
        assert.equal(s.length, 1, `a terminal task: the snapshot only: ${describeSeen(s)}`);
        assert.equal(s[0]?.result.kind, 'task');
        assert.equal(s[0]?.result.id, t.taskId);
        assert.equal(s[0]?.result.contextId, t.contextId);
        assert.equal(s[0]?.result.status.state, 'completed');
        assert.equal(s[0]?.result.metadata.openwop.runId, t.taskId);
      }
      const replay = await openA2AStream(
        srv.url,
        'tasks/resubscribe',
        { id: t.taskId, metadata: { lastEventId: -1 } },
        { token: ALICE },
      );
      assert.equal((await replay.waitForEnd()).reason, 'end');
      const log = await eventLog(srv, t.taskId);
      assert.deepEqual(
        seenOf(replay).map((s) => s.id),
        expectedA2AUpdates(log).map((e) => e.seq),
      );
      assertOneTask(seenOf(replay), t.taskId, t.contextId);
      assert.equal(log.filter((e) => e.type === 'run.started').length, 1, 'exactly one run.started');
      assert.ok(
        log.every((e) => e.runId === t.taskId),
        'every event belongs to the original run',
      );
      const got = await rawRpc(srv, 'tasks/get', { id: t.taskId });
      assert.equal(got.result.id, t.taskId);
      assert.equal(got.result.metadata.openwop.runId, t.taskId);
      assert.equal(got.result.status.state, 'completed');
    }
    await srv.stop();
  });
});
