// The 1.0 codec against the official SDK (@a2a-js/sdk 1.3.0): what we encode, the SDK's own
// ProtoJSON decoders (the ones its clients run on every answer) read back to the same thing, and
// what its clients serialize, we decode. A drift on either side fails here.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as Sdk from '@a2a-js/sdk';
import {
  decodeStreamEvent,
  decodeTask,
  listTasksResponseText,
  v1_0,
  type V1StreamResponse,
  type V1Task,
} from '../../src/a2a/codec/v1_0.js';
import type * as N from '../../src/a2a/model.js';

const TS = '2026-06-13T19:00:00.000Z';

const userMessage: N.Message = {
  messageId: 'm1',
  role: 'user',
  contextId: 'ctx_1',
  parts: [
    { kind: 'text', text: 'draft a brief' },
    { kind: 'data', data: { audience: 'devs' } },
    { kind: 'file', bytes: 'aGVsbG8=', name: 'a.txt', mediaType: 'text/plain' },
    { kind: 'file', uri: 'https://files.example.com/b.pdf', mediaType: 'application/pdf' },
  ],
  metadata: { skillId: 'campaign-brief' },
};

const task: N.TaskView = {
  id: 'run_1',
  contextId: 'ctx_1',
  status: {
    state: 'failed',
    timestamp: TS,
    message: {
      messageId: 'run_1:status:failed',
      role: 'agent',
      taskId: 'run_1',
      contextId: 'ctx_1',
      parts: [{ kind: 'text', text: 'boom' }],
    },
  },
  artifacts: [
    { artifactId: 'a1', name: 'brief', parts: [{ kind: 'data', data: 'a bare string travels as itself' }] },
    { artifactId: 'a2', parts: [{ kind: 'data', data: [1, 2, { x: true }] }], metadata: { v: 1 } },
  ],
  history: [userMessage],
  metadata: { openwop: { runId: 'run_1', runStatus: 'failed' } },
};

/** Every key anywhere in a JSON value. */
function keysOf(v: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) keysOf(x, into);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      into.add(k);
      keysOf(x, into);
    }
  }
  return into;
}

describe('1.0 encoding: ProtoJSON shape', () => {
  test('Task: TASK_STATE_*, ROLE_*, flat parts, no kind', () => {
    const wire = v1_0.encodeTask(task) as V1Task;
    assert.deepEqual(wire, {
      id: 'run_1',
      contextId: 'ctx_1',
      status: {
        state: 'TASK_STATE_FAILED',
        message: {
          messageId: 'run_1:status:failed',
          contextId: 'ctx_1',
          taskId: 'run_1',
          role: 'ROLE_AGENT',
          parts: [{ text: 'boom' }],
        },
        timestamp: TS,
      },
      artifacts: [
        { artifactId: 'a1', name: 'brief', parts: [{ data: 'a bare string travels as itself' }] },
        { artifactId: 'a2', parts: [{ data: [1, 2, { x: true }] }], metadata: { v: 1 } },
      ],
      history: [
        {
          messageId: 'm1',
          contextId: 'ctx_1',
          role: 'ROLE_USER',
          parts: [
            { text: 'draft a brief' },
            { data: { audience: 'devs' } },
            { raw: 'aGVsbG8=', filename: 'a.txt', mediaType: 'text/plain' },
            { url: 'https://files.example.com/b.pdf', mediaType: 'application/pdf' },
          ],
          metadata: { skillId: 'campaign-brief' },
        },
      ],
      metadata: { openwop: { runId: 'run_1', runStatus: 'failed' } },
    });
  });

  test('every state has its TASK_STATE_ name', () => {
    const names: Record<N.TaskState, string> = {
      submitted: 'TASK_STATE_SUBMITTED',
      working: 'TASK_STATE_WORKING',
      'input-required': 'TASK_STATE_INPUT_REQUIRED',
      'auth-required': 'TASK_STATE_AUTH_REQUIRED',
      completed: 'TASK_STATE_COMPLETED',
      failed: 'TASK_STATE_FAILED',
      canceled: 'TASK_STATE_CANCELED',
      rejected: 'TASK_STATE_REJECTED',
    };
    for (const [state, name] of Object.entries(names)) {
      const wire = v1_0.encodeTask({ id: 't', contextId: 'c', status: { state: state as N.TaskState } }) as V1Task;
      assert.equal(wire.status.state, name);
      // The SDK's enum knows the name (UNRECOGNIZED would mean a misspelling).
      assert.equal(Sdk.taskStateToJSON(Sdk.taskStateFromJSON(name)), name);
      assert.equal(decodeTask(wire).status.state, state);
    }
  });

  test('no kind and no final anywhere, on any encoder', () => {
    const update: N.StatusUpdate = { taskId: 't', contextId: 'c', status: { state: 'completed', timestamp: TS } };
    const outputs = [
      v1_0.encodeTask(task),
      v1_0.encodeSendResult({ kind: 'task', task }),
      v1_0.encodeSendResult({ kind: 'message', message: userMessage }),
      v1_0.encodeStreamEvent({ kind: 'status-update', update }, true),
      v1_0.encodeStreamEvent(
        {
          kind: 'artifact-update',
          update: { taskId: 't', contextId: 'c', artifact: task.artifacts?.[0] as N.Artifact },
        },
        true,
      ),
    ];
    for (const o of outputs) {
      const keys = keysOf(o);
      assert.ok(!keys.has('kind') && !keys.has('final'), JSON.stringify(o));
    }
  });

  test('artifacts: absent stays absent, [] is written (ListTasks with includeArtifacts)', () => {
    const bare: N.TaskView = { id: 't', contextId: 'c', status: { state: 'working' } };
    assert.ok(!('artifacts' in (v1_0.encodeTask(bare) as object)));
    assert.deepEqual((v1_0.encodeTask({ ...bare, artifacts: [] }) as V1Task).artifacts, []);
  });
});

describe('1.0 encoding read by the official SDK decoders', () => {
  test('Task: Task.fromJSON → toJSON gives back exactly what we sent', () => {
    const wire = v1_0.encodeTask(task);
    const parsed = Sdk.Task.fromJSON(wire);
    assert.equal(parsed.status?.state, Sdk.TaskState.TASK_STATE_FAILED);
    assert.equal(parsed.history[0]?.role, Sdk.Role.ROLE_USER);
    assert.deepEqual(
      parsed.history[0]?.parts.map((p) => p.content?.$case),
      ['text', 'data', 'raw', 'url'],
    );
    assert.equal(parsed.history[0]?.parts[2]?.filename, 'a.txt');
    assert.equal(Buffer.from(parsed.history[0]?.parts[2]?.content?.value as Buffer).toString(), 'hello');
    assert.deepEqual(Sdk.Task.toJSON(parsed), wire);
  });

  test('SendMessageResponse: {task} and {message}, as the SDK client parses a SendMessage result', () => {
    const asTask = Sdk.SendMessageResponse.fromJSON(v1_0.encodeSendResult({ kind: 'task', task }));
    assert.equal(asTask.payload?.$case, 'task');
    assert.equal(asTask.payload?.$case === 'task' && asTask.payload.value.id, 'run_1');
    const asMessage = Sdk.SendMessageResponse.fromJSON(
      v1_0.encodeSendResult({ kind: 'message', message: userMessage }),
    );
    assert.equal(asMessage.payload?.$case, 'message');
    assert.equal(asMessage.payload?.$case === 'message' && asMessage.payload.value.messageId, 'm1');
  });

  test('StreamResponse members: task, message, statusUpdate, artifactUpdate', () => {
    const events: Array<[N.StreamEvent, string]> = [
      [{ kind: 'task', task }, 'task'],
      [{ kind: 'message', message: userMessage }, 'message'],
      [
        {
          kind: 'status-update',
          update: {
            taskId: 'run_1',
            contextId: 'ctx_1',
            status: { state: 'input-required', timestamp: TS },
            metadata: { openwop: { interrupt: { kind: 'approval' } } },
          },
        },
        'statusUpdate',
      ],
      [
        {
          kind: 'artifact-update',
          update: {
            taskId: 'run_1',
            contextId: 'ctx_1',
            artifact: task.artifacts?.[1] as N.Artifact,
            append: true,
            lastChunk: true,
          },
        },
        'artifactUpdate',
      ],
    ];
    for (const [event, member] of events) {
      const wire = v1_0.encodeStreamEvent(event, true);
      assert.deepEqual(Object.keys(wire as object), [member]);
      const parsed = Sdk.StreamResponse.fromJSON(wire);
      assert.equal(parsed.payload?.$case, member);
      assert.deepEqual(Sdk.StreamResponse.toJSON(parsed), wire);
      assert.deepEqual(decodeStreamEvent(wire as V1StreamResponse), event);
    }
  });

  test('push config: flat, one scheme; the SDK reads it; lists carry nextPageToken', () => {
    const config: N.PushConfig = {
      id: 'cfg1',
      taskId: 'run_1',
      url: 'https://hooks.example.com',
      token: 'tok',
      authentication: { schemes: ['Bearer', 'Basic'], credentials: 'secret' },
    };
    const wire = v1_0.encodePushConfig(config);
    assert.deepEqual(wire, {
      id: 'cfg1',
      taskId: 'run_1',
      url: 'https://hooks.example.com',
      token: 'tok',
      authentication: { scheme: 'Bearer', credentials: 'secret' },
    });
    assert.deepEqual(Sdk.TaskPushNotificationConfig.toJSON(Sdk.TaskPushNotificationConfig.fromJSON(wire)), wire);
    // A config registered without a scheme (or read without secrets) has no authentication in 1.0.
    assert.deepEqual(
      v1_0.encodePushConfig({ id: 'c', taskId: 't', url: 'https://h.example.com', authentication: { schemes: [] } }),
      {
        id: 'c',
        taskId: 't',
        url: 'https://h.example.com',
      },
    );
    const list = v1_0.encodePushConfigList([config], '');
    assert.deepEqual(Object.keys(list as object), ['configs', 'nextPageToken']);
    const parsed = Sdk.ListTaskPushNotificationConfigsResponse.fromJSON(list);
    assert.equal(parsed.configs[0]?.authentication?.scheme, 'Bearer');
    assert.equal(parsed.nextPageToken, '');
  });

  test('ListTasksResponse: nextPageToken always present, pageSize and totalSize', () => {
    const tasks = (n: number) => JSON.stringify(Array.from({ length: n }, () => v1_0.encodeTask(task)));
    const last = JSON.parse(listTasksResponseText({ tasks: tasks(1), nextPageToken: '', pageSize: 50, totalSize: 1 }));
    assert.equal(last.nextPageToken, '');
    assert.deepEqual(Object.keys(last), ['tasks', 'nextPageToken', 'pageSize', 'totalSize']);
    const parsed = Sdk.ListTasksResponse.fromJSON(
      JSON.parse(listTasksResponseText({ tasks: tasks(2), nextPageToken: 'abc', pageSize: 2, totalSize: 7 })),
    );
    assert.equal(parsed.tasks.length, 2);
    assert.equal(parsed.tasks[0]?.status?.state, Sdk.TaskState.TASK_STATE_FAILED);
    assert.deepEqual([parsed.nextPageToken, parsed.pageSize, parsed.totalSize], ['abc', 2, 7]);
  });
});

// ts-proto objects as an SDK user builds them.
const sdkPart = (content: Sdk.Part['content'], over: Partial<Sdk.Part> = {}): Sdk.Part => ({
  content,
  metadata: undefined,
  filename: '',
  mediaType: '',
  ...over,
});
const sdkMessage = (over: Partial<Sdk.Message> = {}): Sdk.Message => ({
  messageId: 'm1',
  contextId: '',
  taskId: '',
  role: Sdk.Role.ROLE_USER,
  parts: [sdkPart({ $case: 'text', value: 'hi' })],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
  ...over,
});

describe('what the official SDK writes, we decode', () => {
  test('a Task from the SDK → neutral → the same ProtoJSON', () => {
    const sdkTask: Sdk.Task = {
      id: 't1',
      contextId: 'c1',
      status: { state: Sdk.TaskState.TASK_STATE_INPUT_REQUIRED, message: undefined, timestamp: TS },
      artifacts: [
        {
          artifactId: 'a1',
          name: 'out',
          description: 'the output',
          parts: [sdkPart({ $case: 'data', value: { k: [1] } }, { mediaType: 'application/json' })],
          metadata: { m: 1 },
          extensions: ['https://ext.example.com'],
        },
      ],
      history: [
        sdkMessage({
          parts: [
            sdkPart({ $case: 'raw', value: Buffer.from('bytes!') }, { filename: 'b.bin' }),
            sdkPart({ $case: 'url', value: 'https://x.example.com/f' }),
          ],
          referenceTaskIds: ['t0'],
        }),
      ],
      metadata: { a: 'b' },
    };
    const json = Sdk.Task.toJSON(sdkTask) as V1Task;
    const neutral = decodeTask(json);
    assert.equal(neutral.status.state, 'input-required');
    assert.deepEqual(neutral.history?.[0]?.parts[0], {
      kind: 'file',
      bytes: Buffer.from('bytes!').toString('base64'),
      name: 'b.bin',
    });
    assert.deepEqual(v1_0.encodeTask(neutral), json);
  });

  test('SendMessage params as the 1.3 client serializes them', () => {
    const params = Sdk.SendMessageRequest.toJSON({
      tenant: '',
      message: sdkMessage({
        taskId: 'run_1',
        contextId: 'ctx_1',
        parts: [sdkPart({ $case: 'text', value: 'ok' }), sdkPart({ $case: 'data', value: { action: 'accept' } })],
      }),
      configuration: {
        acceptedOutputModes: ['application/json'],
        historyLength: 3,
        returnImmediately: true,
        taskPushNotificationConfig: {
          tenant: '',
          id: '',
          taskId: '',
          url: 'https://hooks.example.com',
          token: 'tok',
          authentication: { scheme: 'Bearer', credentials: 'cred' },
        },
      },
      metadata: { skillId: 'triage' },
    });
    assert.deepEqual(v1_0.decodeRequest('send', params), {
      message: {
        messageId: 'm1',
        role: 'user',
        parts: [
          { kind: 'text', text: 'ok' },
          { kind: 'data', data: { action: 'accept' } },
        ],
        taskId: 'run_1',
        contextId: 'ctx_1',
      },
      configuration: {
        blocking: false,
        historyLength: 3,
        acceptedOutputModes: ['application/json'],
        pushConfig: {
          url: 'https://hooks.example.com',
          token: 'tok',
          authentication: { schemes: ['Bearer'], credentials: 'cred' },
        },
      },
      metadata: { skillId: 'triage' },
    });
    // Without configuration, a send blocks (returnImmediately defaults to false).
    const plain = Sdk.SendMessageRequest.toJSON({
      tenant: '',
      message: sdkMessage(),
      configuration: undefined,
      metadata: undefined,
    });
    assert.deepEqual(v1_0.decodeRequest('stream', plain).configuration, { blocking: true });
  });

  test('ListTasks: an unset status filter is "UNRECOGNIZED" from the 1.3 client and means no filter', () => {
    const unset = Sdk.ListTasksRequest.toJSON({ contextId: 'ctx_1' } as Sdk.ListTasksRequest);
    assert.equal((unset as { status?: string }).status, 'UNRECOGNIZED');
    assert.deepEqual(v1_0.decodeRequest('list', unset), { contextId: 'ctx_1', pageSize: 50, includeArtifacts: false });
    const full = Sdk.ListTasksRequest.toJSON({
      tenant: '',
      contextId: '',
      status: Sdk.TaskState.TASK_STATE_WORKING,
      pageSize: 10,
      pageToken: '',
      historyLength: 0,
      statusTimestampAfter: '2026-06-13T21:00:00+02:00',
      includeArtifacts: true,
    });
    assert.deepEqual(v1_0.decodeRequest('list', full), {
      state: 'working',
      statusTimestampAfter: '2026-06-13T19:00:00.000Z',
      pageSize: 10,
      historyLength: 0,
      includeArtifacts: true,
    });
  });

  test('task, push config and card requests as the 1.3 client serializes them', () => {
    assert.deepEqual(v1_0.decodeRequest('get', Sdk.GetTaskRequest.toJSON({ tenant: '', id: 't1', historyLength: 2 })), {
      id: 't1',
      historyLength: 2,
    });
    assert.deepEqual(
      v1_0.decodeRequest('cancel', Sdk.CancelTaskRequest.toJSON({ tenant: 'acme', id: 't1', metadata: { why: 'x' } })),
      {
        tenant: 'acme',
        id: 't1',
        metadata: { why: 'x' },
      },
    );
    assert.deepEqual(v1_0.decodeRequest('subscribe', Sdk.SubscribeToTaskRequest.toJSON({ tenant: '', id: 't1' })), {
      id: 't1',
    });
    const create = Sdk.TaskPushNotificationConfig.toJSON({
      tenant: '',
      id: '',
      taskId: 't1',
      url: 'https://hooks.example.com',
      token: '',
      authentication: { scheme: 'Basic', credentials: '' },
    });
    assert.deepEqual(v1_0.decodeRequest('push.create', create), {
      taskId: 't1',
      config: { url: 'https://hooks.example.com', authentication: { schemes: ['Basic'] } },
    });
    const ref = { tenant: '', taskId: 't1', id: 'c1' };
    assert.deepEqual(v1_0.decodeRequest('push.get', Sdk.GetTaskPushNotificationConfigRequest.toJSON(ref)), {
      taskId: 't1',
      id: 'c1',
    });
    assert.deepEqual(v1_0.decodeRequest('push.delete', Sdk.DeleteTaskPushNotificationConfigRequest.toJSON(ref)), {
      taskId: 't1',
      id: 'c1',
    });
    const list = Sdk.ListTaskPushNotificationConfigsRequest.toJSON({
      tenant: '',
      taskId: 't1',
      pageSize: 0,
      pageToken: '',
    });
    assert.deepEqual(v1_0.decodeRequest('push.list', list), { taskId: 't1' });
    assert.deepEqual(v1_0.decodeRequest('card.extended', Sdk.GetExtendedAgentCardRequest.toJSON({ tenant: '' })), {});
    assert.deepEqual(v1_0.decodeRequest('card.extended', undefined), {});
  });
});
