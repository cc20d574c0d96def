// A2A 1.0 end to end: the REAL compiled server (`handoff serve`) driven by the official client
// `@a2a-js/sdk@1.3.0`, unmodified, over JSON-RPC 1.0 and over HTTP+JSON 1.0 (the factory's
// `preferredTransports` picks the binding from the card's supportedInterfaces), beside the 0.3.14
// client on the same server and store. API keys: alice (tenant acme), bob (tenant other).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Message, type Part, Role, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import {
  type BeforeArgs,
  type CallInterceptor,
  type Client,
  ClientFactory,
  ClientFactoryOptions,
} from '@a2a-js/sdk/client';
import { TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { Task as Task03 } from 'a2a-js-sdk-v03';
import {
  ClientFactory as ClientFactory03,
  ClientFactoryOptions as ClientFactoryOptions03,
  type CallInterceptor as CallInterceptor03,
  type BeforeArgs as BeforeArgs03,
} from 'a2a-js-sdk-v03/client';
import { killAllServers, type ServerProcess, startServer } from '../support/server-process.js';

const ALICE = 'key-alice-123';
const BOB = 'key-bob-4567';
const ENV = { HANDOFF_API_KEYS: `${ALICE}=acme:alice,${BOB}=other:bob` };
const CALL_TIMEOUT_MS = 30_000;
const T = { timeout: 180_000 };

const dirs: string[] = [];
after(async () => {
  await killAllServers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

class BearerAuth implements CallInterceptor, CallInterceptor03 {
  constructor(private readonly key: string) {}
  async before(args: BeforeArgs | BeforeArgs03): Promise<void> {
    args.options = {
      ...args.options,
      signal: args.options?.signal ?? AbortSignal.timeout(CALL_TIMEOUT_MS),
      serviceParameters: { ...args.options?.serviceParameters, Authorization: `Bearer ${this.key}` },
    };
  }
  async after(): Promise<void> {}
}

type Binding = 'JSONRPC' | 'HTTP+JSON';

/** The typed A2A error, thrown as is or (JSON-RPC, inside a stream) as an Error's cause. */
const typed =
  (cls: abstract new (...args: never[]) => Error) =>
  (err: unknown): boolean =>
    err instanceof cls || (err as { cause?: unknown } | undefined)?.cause instanceof cls;

function client(base: string, key: string, binding: Binding): Promise<Client> {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    clientConfig: { interceptors: [new BearerAuth(key)] },
    preferredTransports: [binding],
  });
  return new ClientFactory(options).createFromUrl(base);
}

function client03(base: string, key: string) {
  const options = ClientFactoryOptions03.createFrom(ClientFactoryOptions03.default, {
    clientConfig: { interceptors: [new BearerAuth(key)] },
  });
  return new ClientFactory03(options).createFromUrl(base);
}

const text = (t: string): Part => ({
  content: { $case: 'text', value: t },
  metadata: undefined,
  filename: '',
  mediaType: '',
});
const data = (d: Record<string, unknown>): Part => ({
  content: { $case: 'data', value: d },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

function message(parts: Part[], extra: Partial<Message> = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

const sendConfig = (o: { returnImmediately?: boolean; historyLength?: number } = {}) => ({
  acceptedOutputModes: [],
  taskPushNotificationConfig: undefined,
  historyLength: o.historyLength,
  returnImmediately: o.returnImmediately ?? false,
});

async function send(c: Client, msg: Message, o: { returnImmediately?: boolean; historyLength?: number } = {}) {
  const res = await c.sendMessage({ tenant: '', message: msg, configuration: sendConfig(o), metadata: undefined });
  assert.ok(!('messageId' in res), `SendMessage answered a Message: ${JSON.stringify(res)}`);
  return res as Task;
}

const start = (c: Client, skill: string, prompt: string) =>
  send(c, message([text(prompt)], { metadata: { skillId: skill } }));
const reply = (c: Client, t: Task, parts: Part[]) => send(c, message(parts, { taskId: t.id, contextId: t.contextId }));

/** The data of the task's first data artifact part. */
function artifactData(task: Task): unknown {
  for (const a of task.artifacts) for (const p of a.parts) if (p.content?.$case === 'data') return p.content.value;
  return undefined;
}

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

const stateOf = (e: StreamResponse): TaskState | undefined =>
  e.payload?.$case === 'task'
    ? e.payload.value.status?.state
    : e.payload?.$case === 'statusUpdate'
      ? e.payload.value.status?.state
      : undefined;

describe('A2A 1.0 with the official @a2a-js/sdk 1.3.0 client', () => {
  let srv: ServerProcess;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-a2a-v1-'));
    dirs.push(dir);
    srv = await startServer({ dataDir: dir, env: ENV });
  });

  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    describe(binding, () => {
      let alice: Client;
      let bob: Client;
      before(async () => {
        alice = await client(srv.url, ALICE, binding);
        bob = await client(srv.url, BOB, binding);
        assert.equal(alice.transport.protocolName, binding);
        assert.equal(alice.protocolVersion, '1.0');
      });

      it('send, get (historyLength), returnImmediately', T, async () => {
        const t = await start(alice, 'echo', 'hello');
        assert.equal(t.status?.state, TaskState.TASK_STATE_COMPLETED);
        assert.deepEqual(artifactData(t), { echo: 'hello' });
        const got = await alice.getTask({ tenant: '', id: t.id, historyLength: undefined });
        assert.equal(got.id, t.id);
        assert.equal(got.history.length, 1);
        const none = await alice.getTask({ tenant: '', id: t.id, historyLength: 0 });
        assert.equal(none.history.length, 0);
        const quick = await send(alice, message([text('x')], { metadata: { skillId: 'approval' } }), {
          returnImmediately: true,
        });
        assert.ok(quick.id.startsWith('run_'));
        // Another tenant's task is not found, like an unknown one.
        await assert.rejects(bob.getTask({ tenant: '', id: t.id, historyLength: undefined }), TaskNotFoundError);
        await assert.rejects(
          alice.getTask({ tenant: '', id: 'run_nope', historyLength: undefined }),
          TaskNotFoundError,
        );
      });

      it('stream: the Task first, then updates; the stream closes at completed', T, async () => {
        const events = await collect(
          alice.sendMessageStream({
            tenant: '',
            message: message([text('streamed')], { metadata: { skillId: 'echo' } }),
            configuration: sendConfig(),
            metadata: undefined,
          }),
        );
        assert.equal(events[0]?.payload?.$case, 'task');
        assert.ok(events.some((e) => e.payload?.$case === 'artifactUpdate'));
        assert.equal(stateOf(events.at(-1) as StreamResponse), TaskState.TASK_STATE_COMPLETED);
      });

      it('approval round trip; subscribe after a drop; cancel', T, async () => {
        const t = await start(alice, 'approval', 'accept me');
        assert.equal(t.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
        // A subscriber drops after the first event; a new subscription starts with the Task again.
        const drop = new AbortController();
        for await (const e of alice.resubscribeTask({ tenant: '', id: t.id }, { signal: drop.signal })) {
          assert.equal(e.payload?.$case, 'task');
          drop.abort();
          break;
        }
        const watching = collect(alice.resubscribeTask({ tenant: '', id: t.id }));
        const done = await reply(alice, t, [data({ action: 'accept' })]);
        assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
        assert.deepEqual(artifactData(done), { text: 'Draft: accept me', approvedBy: 'alice' });
        const seen = await watching;
        assert.equal(seen[0]?.payload?.$case, 'task');
        assert.equal(stateOf(seen.at(-1) as StreamResponse), TaskState.TASK_STATE_COMPLETED);
        // A finished task: SubscribeToTask is UnsupportedOperationError, cancel TaskNotCancelable. A
        // streaming method refused before its stream opens answers SSE with the error as the one event;
        // the JSON-RPC client reports it as an Error whose cause is the typed error.
        await assert.rejects(
          collect(alice.resubscribeTask({ tenant: '', id: t.id })),
          typed(UnsupportedOperationError),
        );
        await assert.rejects(
          collect(alice.resubscribeTask({ tenant: '', id: 'run_unknown' })),
          typed(TaskNotFoundError),
        );
        await assert.rejects(collect(bob.resubscribeTask({ tenant: '', id: t.id })), typed(TaskNotFoundError));
        await assert.rejects(alice.cancelTask({ tenant: '', id: t.id, metadata: undefined }), TaskNotCancelableError);
        const other = await start(alice, 'approval', 'cancel me');
        const canceled = await alice.cancelTask({ tenant: '', id: other.id, metadata: undefined });
        assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      });

      it('clarification round trip', T, async () => {
        const t = await start(alice, 'clarify', 'greet someone');
        assert.equal(t.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
        const done = await reply(alice, t, [text('Ada')]);
        assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
        assert.deepEqual(artifactData(done), { answer: 'Ada' });
      });

      it('push configs: create, get, list, delete (never the token)', T, async () => {
        const t = await start(alice, 'approval', 'push me');
        const saved = await alice.createTaskPushNotificationConfig({
          tenant: '',
          id: 'hook-1',
          taskId: t.id,
          url: 'https://hooks.example.com/a2a',
          token: 'secret-token',
          authentication: { scheme: 'Bearer', credentials: 'secret-credentials' },
        });
        assert.equal(saved.id, 'hook-1');
        assert.equal(saved.token, '');
        assert.equal(saved.authentication?.credentials ?? '', '');
        const got = await alice.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' });
        assert.equal(got.url, 'https://hooks.example.com/a2a');
        assert.equal(got.authentication?.scheme, 'Bearer');
        const list = await alice.listTaskPushNotificationConfig({
          tenant: '',
          taskId: t.id,
          pageSize: 0,
          pageToken: '',
        });
        assert.deepEqual(
          list.configs.map((c) => c.id),
          ['hook-1'],
        );
        await alice.deleteTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' });
        await assert.rejects(
          alice.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'hook-1' }),
          TaskNotFoundError,
        );
        await alice.cancelTask({ tenant: '', id: t.id, metadata: undefined });
      });

      it('ListTasks pages through the caller tenant only, newest first, stable under inserts', T, async () => {
        const mine = new Set<string>();
        const contextId = randomUUID();
        for (let i = 0; i < 5; i++) {
          mine.add((await send(alice, message([text(`list ${i}`)], { contextId, metadata: { skillId: 'echo' } }))).id);
        }
        const theirs = await send(bob, message([text('bob')], { contextId, metadata: { skillId: 'echo' } }));
        const seen: string[] = [];
        let pageToken = '';
        let pages = 0;
        do {
          const page = await alice.listTasks({
            tenant: '',
            contextId,
            status: TaskState.TASK_STATE_UNSPECIFIED,
            pageSize: 2,
            pageToken,
            historyLength: undefined,
            statusTimestampAfter: undefined,
            includeArtifacts: pages === 0,
          });
          assert.equal(page.totalSize, pages === 0 ? 5 : 6, 'totalSize counts what matches now');
          for (const task of page.tasks) {
            seen.push(task.id);
            assert.equal(task.artifacts.length > 0, pages === 0, 'artifacts only with includeArtifacts');
          }
          // A task created meanwhile (newer) never shifts the pages that follow.
          if (pages === 0) await send(alice, message([text('late')], { contextId, metadata: { skillId: 'echo' } }));
          pageToken = page.nextPageToken;
          pages++;
        } while (pageToken !== '');
        assert.deepEqual(new Set(seen), mine);
        assert.equal(seen.length, 5);
        assert.ok(!seen.includes(theirs.id));
        const bobs = await bob.listTasks({
          tenant: '',
          contextId,
          status: TaskState.TASK_STATE_COMPLETED,
          pageSize: 100,
          pageToken: '',
          historyLength: 0,
          statusTimestampAfter: undefined,
          includeArtifacts: false,
        });
        assert.deepEqual(
          bobs.tasks.map((x) => x.id),
          [theirs.id],
        );
      });
    });
  }

  it('one store for both versions: a 0.3 task read by 1.0 clients, a 1.0 task by the 0.3 client', T, async () => {
    const old = await client03(srv.url, ALICE);
    const t03 = (await old.sendMessage({
      message: {
        kind: 'message',
        role: 'user',
        messageId: randomUUID(),
        parts: [{ kind: 'text', text: 'from 0.3' }],
        metadata: { skillId: 'echo' },
      },
    })) as Task03;
    assert.equal(t03.kind, 'task');
    for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
      const c = await client(srv.url, ALICE, binding);
      const read = await c.getTask({ tenant: '', id: t03.id, historyLength: undefined });
      assert.equal(read.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.deepEqual(artifactData(read), { echo: 'from 0.3' });
      const t10 = await start(c, 'echo', `from 1.0 ${binding}`);
      const back = await old.getTask({ id: t10.id });
      assert.equal(back.status.state, 'completed');
      assert.equal(back.contextId, t10.contextId);
    }
    // The 0.3 client reads a refused resubscribe the same way: the JSON-RPC error as the one SSE event.
    await assert.rejects(async () => {
      for await (const _ of old.resubscribeTask({ id: 'run_unknown' })) assert.fail('no event but the error');
    }, /not found/i);
  });
});
