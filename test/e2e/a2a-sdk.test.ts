// The A2A surface end to end: the REAL compiled server (`handoff serve`) in a child process,
// driven by the official client `@a2a-js/sdk@0.3.14` (card discovery, JSON-RPC, typed errors) and
// by raw HTTP where the exact wire JSON matters. API keys are configured, so every call carries
// `Authorization: Bearer <key>`; alice (tenant acme) owns the tasks, bob (tenant other) must not
// see them.
//
// How the SDK sends the header: the client is built by `ClientFactory.createFromUrl(base)` (public
// card at /.well-known/agent-card.json, then JSON-RPC to card.url), with a `CallInterceptor` in
// `clientConfig.interceptors` whose `before()` replaces `args.options` by a copy carrying
// `serviceParameters: { Authorization: 'Bearer <key>' }`; the 0.3.14 JsonRpcTransport spreads
// `options.serviceParameters` into the fetch headers of every request. The bare
// `JsonRpcTransport({endpoint, fetchImpl})` path (no card, no interceptors) is covered too, with a
// fetch wrapper that adds the header.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Message, MessageSendParams, Part, Task } from 'a2a-js-sdk-v03';
import {
  type BeforeArgs,
  type CallInterceptor,
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransport,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from 'a2a-js-sdk-v03/client';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';

const ALICE = 'key-alice-123';
const BOB = 'key-bob-4567';
const ENV = { HANDOFF_API_KEYS: `${ALICE}=acme:alice,${BOB}=other:bob` };
/** Every SDK call is bounded by this (an AbortSignal added by the auth interceptor). */
const CALL_TIMEOUT_MS = 30_000;
const TEST_TIMEOUT_MS = 180_000;

const dirs: string[] = [];
const freshDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'handoff-a2a-sdk-'));
  dirs.push(d);
  return d;
};

after(async () => {
  await killAllServers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// SDK clients

/** Adds the bearer key (and a deadline) to every call the SDK client makes. */
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

/** A fresh SDK client for `baseUrl`, found through the public agent card, as `key` (or anonymous). */
function sdkClient(baseUrl: string, key?: string): Promise<Client> {
  const options = key
    ? ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        clientConfig: { interceptors: [new BearerAuth(key)] },
      })
    : ClientFactoryOptions.default;
  return new ClientFactory(options).createFromUrl(baseUrl);
}

/** The bare transport (no card): a fetch wrapper adds the header. */
function bareTransport(baseUrl: string, key: string): JsonRpcTransport {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers, signal: init?.signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS) });
  };
  return new JsonRpcTransport({ endpoint: `${baseUrl}/v1/a2a`, fetchImpl });
}

const userMessage = (parts: Part[], extra: Partial<Message> = {}): Message => ({
  kind: 'message',
  role: 'user',
  messageId: randomUUID(),
  parts,
  ...extra,
});

const text = (t: string): Part => ({ kind: 'text', text: t });
const data = (d: Record<string, unknown>): Part => ({ kind: 'data', data: d });

/** message/send through the SDK; the result must be a Task (Handoff never answers with a Message). */
async function send(client: Client, params: MessageSendParams): Promise<Task> {
  const res = await client.sendMessage(params);
  assert.equal(res.kind, 'task', `message/send answered ${JSON.stringify(res)}`);
  return res as Task;
}

/** Start a skill with a text prompt; blocking, so it returns at input-required or terminal. */
const startSkill = (client: Client, skillId: string, prompt: string): Promise<Task> =>
  send(client, { message: userMessage([text(prompt)], { metadata: { skillId } }) });

/** Reply into an existing task. */
const reply = (client: Client, task: Task, parts: Part[]): Promise<Task> =>
  send(client, { message: userMessage(parts, { taskId: task.id, contextId: task.contextId }) });

type Rec = Record<string, any>;
const openwop = (task: Task): Rec => ((task.metadata ?? {}) as Rec).openwop ?? {};

/** The data of the task's (only) data artifact part. */
function artifactData(task: Task): Rec {
  const part = task.artifacts?.flatMap((a) => a.parts).find((p) => p.kind === 'data');
  assert.ok(part && part.kind === 'data', `no data artifact in ${JSON.stringify(task)}`);
  return part.data as Rec;
}

function assertInputRequired(task: Task, kind: 'approval' | 'clarification'): void {
  assert.equal(task.status.state, 'input-required', JSON.stringify(task));
  assert.equal(openwop(task).interrupt?.kind, kind, JSON.stringify(task.metadata));
}

/** The SDK error of a failed JSON-RPC call: a typed class with the wire response attached. */
async function rejectsWithCode(
  p: Promise<unknown>,
  cls: abstract new (...a: any[]) => Error,
  code: number,
): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
    const wire = (err as { errorResponse?: { error?: { code?: number } } }).errorResponse;
    assert.equal(wire?.error?.code, code, `wire error ${JSON.stringify(wire)}`);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Raw JSON-RPC over HTTP

let rpcId = 1000;
interface RpcReply {
  status: number;
  contentType: string;
  body: Rec;
  id: number;
}
async function rawRpc(
  baseUrl: string,
  method: string,
  params: unknown,
  key: string | undefined = ALICE,
): Promise<RpcReply> {
  const id = rpcId++;
  const res = await postJson(
    `${baseUrl}/v1/a2a`,
    { jsonrpc: '2.0', id, method, params },
    { ...(key ? { token: key } : {}), timeoutMs: CALL_TIMEOUT_MS },
  );
  return { status: res.status, contentType: String(res.headers['content-type'] ?? ''), body: res.body as Rec, id };
}

/** A JSON-RPC success on the wire: HTTP 200, JSON, version and id echoed, result and no error. */
function assertRpcResult(r: RpcReply): Rec {
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.match(r.contentType, /^application\/json/);
  assert.equal(r.body.jsonrpc, '2.0');
  assert.equal(r.body.id, r.id);
  assert.ok(!('error' in r.body), JSON.stringify(r.body));
  assert.ok(r.body.result && typeof r.body.result === 'object', JSON.stringify(r.body));
  return r.body.result as Rec;
}

function assertRpcError(r: RpcReply, code: number): Rec {
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.jsonrpc, '2.0');
  assert.equal(r.body.id, r.id);
  assert.ok(!('result' in r.body), JSON.stringify(r.body));
  assert.equal(r.body.error?.code, code, JSON.stringify(r.body));
  assert.equal(typeof r.body.error?.message, 'string');
  return r.body.error as Rec;
}

/** v0.3 states are lowercase, hyphenated strings (never TASK_STATE_* or "INPUT_REQUIRED"). */
const V03_STATES = [
  'submitted',
  'working',
  'input-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
  'auth-required',
  'unknown',
];

// ---------------------------------------------------------------------------------------------

describe('A2A end to end with @a2a-js/sdk 0.3.14 against the real server', { timeout: 10 * TEST_TIMEOUT_MS }, () => {
  let srv: ServerProcess;
  let alice: Client;
  let bob: Client;

  before(async () => {
    srv = await startServer({ dataDir: freshDir(), env: ENV });
    alice = await sdkClient(srv.url, ALICE);
    bob = await sdkClient(srv.url, BOB);
  });

  it('the public card leads the SDK to the JSON-RPC endpoint; without the key the SDK gets 401', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const card = await getJson(`${srv.url}/.well-known/agent-card.json`);
    assert.equal(card.status, 200);
    assert.equal(card.body.url, `${srv.url}/v1/a2a`);
    assert.deepEqual(card.body.security, [{ bearer: [] }]);
    for (const skill of ['echo', 'approval', 'clarify']) {
      assert.ok(
        card.body.skills.some((s: Rec) => s.id === skill),
        `skill ${skill} missing from the card`,
      );
    }
    // Negative control: the same SDK client minus the interceptor is refused at the HTTP layer,
    // so every passing SDK call below really carried the key.
    const anonymous = await sdkClient(srv.url);
    await assert.rejects(
      anonymous.getTask({ id: 'run_whatever' }, { signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }),
      /401/,
    );
  });

  it('1. sendMessage echo → a completed Task with the echoed artifact', { timeout: TEST_TIMEOUT_MS }, async () => {
    const task = await send(alice, {
      message: userMessage([text('hello, handoff')], { metadata: { skillId: 'echo' } }),
    });
    assert.equal(task.kind, 'task');
    assert.equal(task.status.state, 'completed');
    assert.match(task.id, /^run_/);
    assert.equal(typeof task.contextId, 'string');
    assert.ok(task.contextId.length > 0);
    assert.deepEqual(artifactData(task), { echo: 'hello, handoff' });
    assert.equal(openwop(task).workflowId, 'echo');
    // The default skill (no skillId) is echo as well.
    const dflt = await send(alice, { message: userMessage([text('default skill')]) });
    assert.equal(dflt.status.state, 'completed');
    assert.deepEqual(artifactData(dflt), { echo: 'default skill' });
    // tasks/get reads back what the send returned.
    const again = await alice.getTask({ id: task.id });
    assert.equal(again.status.state, 'completed');
    assert.deepEqual(again.artifacts, task.artifacts);
  });

  it('3a. accept → completed, approvedBy is the authenticated principal', { timeout: TEST_TIMEOUT_MS }, async () => {
    const t = await startSkill(alice, 'approval', 'accept me');
    assertInputRequired(t, 'approval');
    assert.deepEqual(openwop(t).interrupt.actions, ['accept', 'reject', 'refine', 'edit-accept', 'ask']);
    // A decidedBy in the message is ignored: the host supplies the principal.
    const done = await reply(alice, t, [data({ action: 'accept', decidedBy: 'mallory' })]);
    assert.equal(done.id, t.id);
    assert.equal(done.status.state, 'completed', JSON.stringify(done));
    assert.deepEqual(artifactData(done), { text: 'Draft: accept me', approvedBy: 'alice' });
  });

  it('3b. reject → failed with metadata.openwop.error.code interrupt_rejected', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'approval', 'reject me');
    assertInputRequired(t, 'approval');
    const done = await reply(alice, t, [data({ action: 'reject', feedback: 'no thanks' })]);
    assert.equal(done.status.state, 'failed', JSON.stringify(done));
    assert.equal(openwop(done).error?.code, 'interrupt_rejected', JSON.stringify(done.metadata));
    assert.equal(done.status.message?.role, 'agent');
    assert.equal(done.artifacts, undefined, 'a rejected draft is never published');
    // Terminal: a further reply is refused (UnsupportedOperation), the task stays failed.
    await rejectsWithCode(reply(alice, t, [data({ action: 'accept' })]), UnsupportedOperationError, -32004);
    assert.equal((await alice.getTask({ id: t.id })).status.state, 'failed');
  });

  it('3c. refine → input-required again, then accept → completed with the revised text', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'approval', 'refine me');
    assertInputRequired(t, 'approval');
    const refined = await reply(alice, t, [
      data({ action: 'refine', refineFeedback: { scope: 'whole', text: 'shorter please' } }),
    ]);
    assert.equal(refined.id, t.id);
    assertInputRequired(refined, 'approval');
    assert.equal(openwop(refined).runStatus, 'waiting-approval');
    const done = await reply(alice, refined, [data({ action: 'accept' })]);
    assert.equal(done.status.state, 'completed', JSON.stringify(done));
    assert.deepEqual(artifactData(done), { text: 'Draft: refine me [revised: shorter please]', approvedBy: 'alice' });
  });

  it('3d. edit-accept → completed with the edited data', { timeout: TEST_TIMEOUT_MS }, async () => {
    const t = await startSkill(alice, 'approval', 'edit me');
    assertInputRequired(t, 'approval');
    const done = await reply(alice, t, [
      data({ action: 'edit-accept', editedArtifactData: { text: 'Edited by hand' } }),
    ]);
    assert.equal(done.status.state, 'completed', JSON.stringify(done));
    assert.deepEqual(artifactData(done), { text: 'Edited by hand', approvedBy: 'alice' });
  });

  it('3e. ask (text only) → still input-required; the gate still takes a decision afterwards', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'approval', 'ask about me');
    assertInputRequired(t, 'approval');
    const asked = await reply(alice, t, [text('Why this wording?')]);
    assert.equal(asked.id, t.id);
    assertInputRequired(asked, 'approval');
    assert.equal(openwop(asked).runStatus, 'waiting-approval');
    assert.equal(asked.artifacts, undefined);
    // The question is in the task history, after the opening message.
    const said = (asked.history ?? [])
      .flatMap((m) => m.parts)
      .filter((p) => p.kind === 'text')
      .map((p) => (p as { text: string }).text);
    assert.deepEqual(said, ['ask about me', 'Why this wording?']);
    const done = await reply(alice, asked, [data({ action: 'accept' })]);
    assert.equal(done.status.state, 'completed', JSON.stringify(done));
    assert.deepEqual(artifactData(done), { text: 'Draft: ask about me', approvedBy: 'alice' });
  });

  it('3f. accept and reject racing on one task: exactly one wins, the other is refused', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'approval', 'race me');
    assertInputRequired(t, 'approval');
    const [a, r] = await Promise.allSettled([
      reply(alice, t, [data({ action: 'accept' })]),
      reply(alice, t, [data({ action: 'reject' })]),
    ]);
    const won = [a, r].filter((x): x is PromiseFulfilledResult<Task> => x.status === 'fulfilled');
    const lost = [a, r].filter((x): x is PromiseRejectedResult => x.status === 'rejected');
    assert.equal(won.length, 1, `both or neither decision applied: ${JSON.stringify([a, r])}`);
    assert.equal(lost.length, 1);
    assert.ok(lost[0]?.reason instanceof UnsupportedOperationError, String(lost[0]?.reason));
    const winner = won[0]?.value as Task;
    assert.ok(['completed', 'failed'].includes(winner.status.state));
    assert.equal((await alice.getTask({ id: t.id })).status.state, winner.status.state);
  });

  it('3g. malformed replies are refused (-32602) and leave the task as it was', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'approval', 'leave me');
    assertInputRequired(t, 'approval');
    const refused = async (parts: Part[], extra: Partial<Message> = {}) => {
      await assert.rejects(send(alice, { message: userMessage(parts, { taskId: t.id, ...extra }) }), (err: unknown) => {
        assert.equal(
          (err as { errorResponse?: { error?: { code?: number } } }).errorResponse?.error?.code,
          -32602,
          String(err),
        );
        return true;
      });
    };
    await refused([data({ action: 'yolo' })]);
    await refused([data({ action: 'edit-accept' })]); // no editedArtifactData
    await refused([data({ action: 'refine' })]); // no feedback
    await refused([data({ action: 'accept' })], { contextId: 'not-this-task' });
    const still = await alice.getTask({ id: t.id });
    assertInputRequired(still, 'approval');
    assert.equal(still.status.timestamp, t.status.timestamp);
    assert.equal(still.history?.length, 1, 'refused replies are not recorded');
  });

  it('4. cancelTask → canceled; unknown id and another tenant both give task-not-found (-32001)', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'approval', 'cancel me');
    assertInputRequired(t, 'approval');

    // bob (tenant other) cannot see, cancel or answer alice's task: exactly an unknown task.
    await rejectsWithCode(bob.getTask({ id: t.id }), TaskNotFoundError, -32001);
    await rejectsWithCode(bob.cancelTask({ id: t.id }), TaskNotFoundError, -32001);
    await rejectsWithCode(reply(bob, t, [data({ action: 'accept' })]), TaskNotFoundError, -32001);
    const viaWire = assertRpcError(await rawRpc(srv.url, 'tasks/get', { id: t.id }, BOB), -32001);
    const unknownWire = assertRpcError(await rawRpc(srv.url, 'tasks/get', { id: 'run_does-not-exist' }, BOB), -32001);
    assert.deepEqual(Object.keys(viaWire).sort(), Object.keys(unknownWire).sort());
    assertInputRequired(await alice.getTask({ id: t.id }), 'approval');

    const canceled = await alice.cancelTask({ id: t.id });
    assert.equal(canceled.id, t.id);
    assert.equal(canceled.status.state, 'canceled', JSON.stringify(canceled));
    assert.equal((await alice.getTask({ id: t.id })).status.state, 'canceled');
    // A second cancel: the task is terminal.
    await rejectsWithCode(alice.cancelTask({ id: t.id }), TaskNotCancelableError, -32002);

    // Unknown ids: through the card-built client and through the bare transport.
    await rejectsWithCode(alice.getTask({ id: 'run_does-not-exist' }), TaskNotFoundError, -32001);
    await rejectsWithCode(alice.cancelTask({ id: 'run_does-not-exist' }), TaskNotFoundError, -32001);
    await rejectsWithCode(
      bareTransport(srv.url, ALICE).getTask({ id: 'run_does-not-exist' }),
      TaskNotFoundError,
      -32001,
    );
  });

  it('5. clarification round trip: input-required kind clarification, reply "Ada" → completed', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'clarify', 'greet someone');
    assertInputRequired(t, 'clarification');
    assert.equal(openwop(t).runStatus, 'waiting-input');
    assert.deepEqual(openwop(t).interrupt.questions, [{ id: 'name', question: 'What should the greeting say?' }]);
    const done = await reply(alice, t, [text('Ada')]);
    assert.equal(done.id, t.id);
    assert.equal(done.contextId, t.contextId);
    assert.equal(done.status.state, 'completed', JSON.stringify(done));
    assert.deepEqual(artifactData(done), { answer: 'Ada' });
  });

  it('6. idempotent send over the wire: the same messageId twice → the same task', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const message = {
      kind: 'message',
      role: 'user',
      messageId: `idem-${randomUUID()}`,
      parts: [{ kind: 'text', text: 'once' }],
      metadata: { skillId: 'approval' },
    };
    const first = assertRpcResult(await rawRpc(srv.url, 'message/send', { message }));
    const second = assertRpcResult(await rawRpc(srv.url, 'message/send', { message }));
    assert.equal(first.kind, 'task');
    assert.equal(second.id, first.id);
    assert.equal(second.contextId, first.contextId);
    assert.equal(second.status.state, 'input-required');
    // Still one opening message in the history: the repeat did not reach the run.
    assert.equal(second.history?.length, 1, JSON.stringify(second.history));

    // Concurrent duplicates also collapse onto one task.
    const racing = { ...message, messageId: `idem-race-${randomUUID()}` };
    const results = await Promise.all([1, 2, 3].map(() => rawRpc(srv.url, 'message/send', { message: racing })));
    const ids = new Set(results.map((r) => assertRpcResult(r).id));
    assert.equal(ids.size, 1, `concurrent duplicates started ${ids.size} tasks: ${[...ids].join(', ')}`);

    // Idempotency is per principal: bob's message with the same id is bob's own, new task.
    const bobs = assertRpcResult(await rawRpc(srv.url, 'message/send', { message }, BOB));
    assert.notEqual(bobs.id, first.id);
  });

  it('6b. a retried reply (same messageId) is applied once and answers with the same task', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const t = await startSkill(alice, 'approval', 'retry me');
    assertInputRequired(t, 'approval');
    const refine = userMessage([data({ action: 'refine', refineFeedback: { scope: 'whole', text: 'once' } })], {
      taskId: t.id,
    });
    const first = await send(alice, { message: refine });
    const retried = await send(alice, { message: refine }); // e.g. the response to the first was lost
    assert.equal(retried.id, first.id);
    assertInputRequired(retried, 'approval');
    const ids = (retried.history ?? []).map((m) => m.messageId);
    assert.deepEqual(ids, [...new Set(ids)], `a message was applied twice: ${ids.join(', ')}`);

    const accept = userMessage([data({ action: 'accept' })], { taskId: t.id });
    const done = await send(alice, { message: accept });
    assert.equal(done.status.state, 'completed');
    const again = await send(alice, { message: accept });
    assert.equal(again.id, done.id);
    assert.equal(again.status.state, 'completed');
  });
});

describe('A2A durability: SIGKILL and restart between the pause and the approval', {
  timeout: 4 * TEST_TIMEOUT_MS,
}, () => {
  it('2. a paused approval task survives a crash; a NEW SDK client approves it as alice', {
    timeout: 3 * TEST_TIMEOUT_MS,
  }, async () => {
    const dataDir = freshDir();
    let srv = await startServer({ dataDir, env: ENV });

    // The first client is used once and dropped: only the ids are kept.
    const { taskId, contextId, timestamp } = await (async () => {
      const client = await sdkClient(srv.url, ALICE);
      const t = await startSkill(client, 'approval', 'survive a crash');
      assertInputRequired(t, 'approval');
      return { taskId: t.id, contextId: t.contextId, timestamp: t.status.timestamp };
    })();

    const exit = await srv.kill();
    assert.equal(exit.signal, 'SIGKILL');

    // Same data dir; same port when it is still free (the card URL stays valid), else a new one.
    const port = srv.port;
    try {
      srv = await startServer({ dataDir, env: ENV, port });
    } catch (err) {
      if (!/EADDRINUSE/.test(String(err))) throw err;
      srv = await startServer({ dataDir, env: ENV });
    }

    const client = await sdkClient(srv.url, ALICE);
    const got = await client.getTask({ id: taskId });
    assert.equal(got.id, taskId);
    assert.equal(got.contextId, contextId);
    assertInputRequired(got, 'approval');
    assert.equal(got.status.timestamp, timestamp, 'the state did not change, so neither does its timestamp');

    // The exact wire JSON of tasks/get before the approval.
    const wire = assertRpcResult(await rawRpc(srv.url, 'tasks/get', { id: taskId }));
    assert.equal(wire.kind, 'task');
    assert.equal(wire.id, taskId);
    assert.equal(wire.contextId, contextId);
    assert.equal(wire.status.state, 'input-required');
    assert.ok(V03_STATES.includes(wire.status.state));
    assert.match(wire.status.state, /^[a-z]+(-[a-z]+)*$/);
    assert.equal(wire.metadata.openwop.interrupt.kind, 'approval');
    assert.equal(wire.metadata.openwop.runId, taskId);
    // The RFC 0100 host read agrees.
    const rec = await getJson(`${srv.url}/v1/a2a/tasks/${taskId}`, { token: ALICE });
    assert.equal(rec.status, 200, JSON.stringify(rec.body));
    assert.equal(rec.body.state, 'input-required');
    assert.equal(rec.body.interruptKind, 'approval');

    const done = await send(client, { message: userMessage([data({ action: 'accept' })], { taskId, contextId }) });
    assert.equal(done.id, taskId);
    assert.equal(done.contextId, contextId);
    assert.equal(done.status.state, 'completed', JSON.stringify(done));
    assert.deepEqual(artifactData(done), { text: 'Draft: survive a crash', approvedBy: 'alice' });

    const final = assertRpcResult(await rawRpc(srv.url, 'tasks/get', { id: taskId }));
    assert.equal(final.status.state, 'completed');
    assert.equal(final.metadata.openwop.interrupt, undefined);
    await srv.stop();
  });
});
