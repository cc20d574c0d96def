// The 0.3 edge adapter against the shapes Handoff sent while 0.3 was its internal form
// (test/support/a2a-v03-today.ts): every Task and event the neutral projection builds, encoded for
// 0.3, is those bytes, and each comes back through the neutral model byte for byte — a 0.3 client
// sees no change from the inversion.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeMessage, decodeStreamEvent, decodeTask, v0_3 } from '../../src/a2a/v0_3/codec.js';
import { A2AError, invalidParams, taskNotFound } from '../../src/a2a/errors.js';
import { validateParams } from '../../src/a2a/jsonrpc.js';
import type * as N from '../../src/a2a/model.js';
import { artifactFromEvent, toArtifactUpdate, toStatusUpdate, toTask } from '../../src/a2a/projection.js';
import type * as W from '../../src/a2a/v0_3/types.js';
import { TODAYS_V03 } from '../support/a2a-v03-today.js';
import type { RunEvent, RunRecord, RunStatus } from '../../src/store/model.js';

const TS = '2026-06-13T19:00:00.000Z';

function run(status: RunStatus, over: Partial<RunRecord> = {}): RunRecord {
  return {
    runId: 'run_1',
    tenantId: 't1',
    principalId: 'p1',
    workflowId: 'campaign-brief',
    status,
    inputs: {},
    state: { outputs: {}, vars: {} },
    cursor: { ordinals: {} },
    tags: [],
    metadata: {},
    nextSeq: 0,
    version: 1,
    createdAt: TS,
    updatedAt: TS,
    ...over,
  };
}

function artifactEvent(artifactId: string, data: unknown, name?: string): RunEvent {
  const payload: Record<string, unknown> = { artifactId, data };
  if (name !== undefined) payload.name = name;
  return { runId: 'run_1', sequence: 3, type: 'artifact.created', timestamp: TS, payload } as RunEvent;
}

const artifact = (id: string, data: unknown, name?: string): N.Artifact =>
  artifactFromEvent(artifactEvent(id, data, name)) as N.Artifact;

/** A history message as the service stores it (the caller's message, neutral). */
const history: N.Message[] = [
  { messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'draft a brief' }] },
  {
    messageId: 'm2',
    role: 'user',
    taskId: 'run_1',
    contextId: 'ctx_1',
    parts: [{ kind: 'data', data: { action: 'accept' } }],
    metadata: { note: 'x' },
  },
];

/** The neutral Tasks of the runs whose 0.3 Tasks are in TODAYS_V03. */
const projected: Record<string, N.TaskView> = {
  submitted: toTask({ run: run('pending'), contextId: 'ctx_1', stateTimestamp: TS, artifacts: [], history: [] }),
  working: toTask({ run: run('running'), contextId: 'ctx_1', stateTimestamp: TS, artifacts: [], history }),
  approval: toTask({
    run: run('waiting-approval'),
    contextId: 'ctx_1',
    stateTimestamp: TS,
    artifacts: [artifact('a1', { title: 'Brief' }, 'brief')],
    history,
    interrupt: {
      kind: 'approval',
      nodeId: 'gate',
      data: { actions: ['accept', 'edit', 'reject'], title: 'Approve?', artifact: { x: 1 } },
    },
  }),
  clarification: toTask({
    run: run('waiting-input'),
    contextId: 'ctx_1',
    stateTimestamp: TS,
    artifacts: [],
    history,
    interrupt: { kind: 'clarification', nodeId: 'ask', data: { questions: [{ id: 'q1', prompt: 'Who?' }] } },
  }),
  failed: toTask({
    run: run('failed', { error: { code: 'node_failed', message: 'boom' } }),
    contextId: 'ctx_1',
    stateTimestamp: TS,
    artifacts: [],
    history: [],
  }),
  completed: toTask({
    run: run('completed'),
    contextId: 'ctx_1',
    stateTimestamp: TS,
    // A bare value is wrapped {value} by today's projection; null becomes {value: null}.
    artifacts: [artifact('a1', 'plain text'), artifact('a2', [1, 2]), artifact('a3', null, 'empty')],
    history,
    historyLength: 1,
  }),
  canceled: toTask({ run: run('cancelled'), contextId: 'ctx_1', stateTimestamp: TS, artifacts: [], history }),
};

const same = (actual: unknown, expected: unknown) =>
  assert.equal(JSON.stringify(withoutLaterFields(actual)), JSON.stringify(expected));

/**
 * The bytes without what the projection added after they were recorded — the run's activity
 * (`metadata.openwop.activity`, and as a working task's status message) and the interrupt's
 * `artifactHash` — which their own tests pin (activity.test.ts, a2a-projection.test.ts).
 */
function withoutLaterFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutLaterFields);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'activity' || k === 'artifactHash') continue;
    if (k === 'message' && String((v as { messageId?: unknown })?.messageId ?? '').includes(':activity:')) continue;
    out[k] = withoutLaterFields(v);
  }
  return out;
}
const todaysTasks = TODAYS_V03.tasks;

describe('0.3 codec: byte-identical round trips of what the projection builds', () => {
  for (const [name, task] of Object.entries(todaysTasks)) {
    test(`Task (${name}) → neutral → Task`, () => {
      same(v0_3.encodeTask(projected[name] as N.TaskView), task);
      same(v0_3.encodeTask(decodeTask(task)), task);
      same(v0_3.encodeSendResult({ kind: 'task', task: decodeTask(task) }), task);
      same(v0_3.encodeStreamEvent({ kind: 'task', task: decodeTask(task) }, false), task);
    });
  }

  const updates: Array<[string, N.StatusUpdate, boolean]> = [
    ['working', toStatusUpdate('run_1', 'ctx_1', 'working', TS), false],
    ['input-required', toStatusUpdate('run_1', 'ctx_1', 'input-required', TS, { interruptKind: 'approval' }), true],
    [
      'failed',
      toStatusUpdate('run_1', 'ctx_1', 'failed', TS, { error: { code: 'node_failed', message: 'boom' } }),
      true,
    ],
    ['completed', toStatusUpdate('run_1', 'ctx_1', 'completed', TS), true],
  ];
  for (const [name, neutral, isFinal] of updates) {
    const update = TODAYS_V03.updates[name] as W.TaskStatusUpdateEvent;
    test(`status-update (${name}, final ${update.final}) → neutral → status-update, also as a push body`, () => {
      same(v0_3.encodeStreamEvent({ kind: 'status-update', update: neutral }, isFinal), update);
      const { event, final } = decodeStreamEvent(update);
      assert.equal(final, update.final);
      assert.equal(event.kind, 'status-update');
      same(v0_3.encodeStreamEvent(event, final), update);
    });
  }

  test('artifact-update (lastChunk, data wrapped) → neutral → artifact-update', () => {
    const cases: Array<[string, N.Artifact]> = [
      ['named', artifact('a1', { k: 'v' }, 'named')],
      ['bare', artifact('a2', 'bare')],
    ];
    for (const [name, a] of cases) {
      const update = TODAYS_V03.artifacts[name] as W.TaskArtifactUpdateEvent;
      const neutral = toArtifactUpdate('run_1', 'ctx_1', a, { lastChunk: true });
      same(v0_3.encodeStreamEvent({ kind: 'artifact-update', update: neutral }, false), update);
      const { event, final } = decodeStreamEvent(update);
      assert.equal(final, false);
      same(v0_3.encodeStreamEvent(event, false), update);
    }
    const both = TODAYS_V03.artifacts.both as W.TaskArtifactUpdateEvent;
    const neutralBoth = toArtifactUpdate('run_1', 'ctx_1', artifact('a1', {}), { append: true, lastChunk: false });
    same(v0_3.encodeStreamEvent({ kind: 'artifact-update', update: neutralBoth }, false), both);
    same(v0_3.encodeStreamEvent(decodeStreamEvent(both).event, false), both);
  });

  test('push config: the shape the 0.3 service answers (no token or credentials shown)', () => {
    const config: N.PushConfig = {
      id: 'cfg1',
      taskId: 'run_1',
      url: 'https://hooks.example.com/a2a',
      authentication: { schemes: ['Bearer'] },
    };
    const today = {
      taskId: 'run_1',
      pushNotificationConfig: {
        id: 'cfg1',
        url: 'https://hooks.example.com/a2a',
        authentication: { schemes: ['Bearer'] },
      },
    };
    same(v0_3.encodePushConfig(config), today);
    same(v0_3.encodePushConfigList([config, { id: 'run_1', taskId: 'run_1', url: 'https://h.example.com' }], ''), [
      today,
      { taskId: 'run_1', pushNotificationConfig: { id: 'run_1', url: 'https://h.example.com' } },
    ]);
  });

  test('history messages keep every field (their key order becomes the canonical one)', () => {
    const reordered: W.Message = {
      parts: [{ kind: 'text', text: 'hi', metadata: { a: 1 } }],
      role: 'user',
      messageId: 'm9',
      kind: 'message',
      referenceTaskIds: ['run_0'],
      extensions: ['https://ext.example.com'],
    };
    const task: W.Task = { ...(todaysTasks.working as W.Task), history: [reordered] };
    assert.deepEqual(v0_3.encodeTask(decodeTask(task)), task);
  });
});

describe('0.3 codec: parts', () => {
  const encodeParts = (parts: N.Part[]) =>
    (
      v0_3.encodeTask({
        id: 't',
        contextId: 'c',
        status: { state: 'working' },
        history: [{ messageId: 'm', role: 'agent', parts }],
      }) as W.Task
    ).history?.[0]?.parts;

  test('data of any JSON type travels as an object; objects as they are', () => {
    assert.deepEqual(
      encodeParts([
        { kind: 'data', data: { a: 1 } },
        { kind: 'data', data: 'text' },
        { kind: 'data', data: 3 },
        { kind: 'data', data: [1] },
        { kind: 'data', data: null },
        { kind: 'data', data: false },
      ]),
      [
        { kind: 'data', data: { a: 1 } },
        { kind: 'data', data: { value: 'text' } },
        { kind: 'data', data: { value: 3 } },
        { kind: 'data', data: { value: [1] } },
        { kind: 'data', data: { value: null } },
        { kind: 'data', data: { value: false } },
      ],
    );
  });

  test('files by bytes or uri with name and media type; a text media type has no 0.3 field', () => {
    const parts: N.Part[] = [
      { kind: 'file', bytes: 'aGk=', name: 'a.txt', mediaType: 'text/plain' },
      { kind: 'file', uri: 'https://x.example.com/f.pdf', mediaType: 'application/pdf', metadata: { m: 1 } },
      { kind: 'text', text: 'hello', mediaType: 'text/markdown' },
    ];
    const wire = encodeParts(parts);
    assert.deepEqual(wire, [
      { kind: 'file', file: { bytes: 'aGk=', name: 'a.txt', mimeType: 'text/plain' } },
      { kind: 'file', file: { uri: 'https://x.example.com/f.pdf', mimeType: 'application/pdf' }, metadata: { m: 1 } },
      { kind: 'text', text: 'hello' },
    ]);
    const back = decodeMessage({ kind: 'message', messageId: 'm', role: 'user', parts: wire as W.Part[] }).parts;
    assert.deepEqual(back, [parts[0], parts[1], { kind: 'text', text: 'hello' }]);
  });
});

describe('0.3 codec: requests', () => {
  const message: W.Message = {
    kind: 'message',
    messageId: 'm1',
    role: 'user',
    parts: [{ kind: 'text', text: 'go' }],
    contextId: 'ctx_1',
  };

  test('send: blocking defaults to true, the inline push config to the neutral input', () => {
    const plain = v0_3.decodeRequest('send', { message });
    assert.deepEqual(plain, {
      message: { messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'go' }], contextId: 'ctx_1' },
      configuration: { blocking: true },
    });
    const full = v0_3.decodeRequest('stream', {
      message,
      metadata: { skillId: 'triage' },
      configuration: {
        blocking: false,
        historyLength: 0,
        acceptedOutputModes: ['text/plain'],
        pushNotificationConfig: {
          url: 'https://h.example.com',
          id: '',
          token: 'tok',
          authentication: { schemes: ['Bearer'], credentials: 'c' },
        },
      },
    });
    assert.deepEqual(full.configuration, {
      blocking: false,
      historyLength: 0,
      acceptedOutputModes: ['text/plain'],
      pushConfig: {
        url: 'https://h.example.com',
        token: 'tok',
        authentication: { schemes: ['Bearer'], credentials: 'c' },
      },
    });
    assert.deepEqual(full.metadata, { skillId: 'triage' });
  });

  test('task and push config requests', () => {
    assert.deepEqual(v0_3.decodeRequest('get', { id: 't1', historyLength: 2, metadata: {} }), {
      id: 't1',
      historyLength: 2,
    });
    assert.deepEqual(v0_3.decodeRequest('cancel', { id: 't1' }), { id: 't1' });
    assert.deepEqual(v0_3.decodeRequest('subscribe', { id: 't1', metadata: { lastEventId: '7' } }), {
      id: 't1',
      metadata: { lastEventId: '7' },
    });
    assert.deepEqual(
      v0_3.decodeRequest('push.create', {
        taskId: 't1',
        pushNotificationConfig: { url: 'https://h.example.com', id: 'c1' },
      }),
      { taskId: 't1', config: { id: 'c1', url: 'https://h.example.com' } },
    );
    assert.deepEqual(v0_3.decodeRequest('push.get', { id: 't1' }), { taskId: 't1' });
    assert.deepEqual(v0_3.decodeRequest('push.get', { id: 't1', pushNotificationConfigId: null }), { taskId: 't1' });
    assert.deepEqual(v0_3.decodeRequest('push.get', { id: 't1', pushNotificationConfigId: 'c1' }), {
      taskId: 't1',
      id: 'c1',
    });
    assert.deepEqual(v0_3.decodeRequest('push.list', { id: 't1' }), { taskId: 't1' });
    assert.deepEqual(v0_3.decodeRequest('push.delete', { id: 't1', pushNotificationConfigId: 'c1' }), {
      taskId: 't1',
      id: 'c1',
    });
    assert.deepEqual(v0_3.decodeRequest('card.extended', undefined), {});
  });

  test('malformed params: the same -32602 as the 0.3 validator, nothing decoded', () => {
    const cases: Array<[N.Operation, string, unknown]> = [
      ['send', 'message/send', { message: { ...message, parts: [] } }],
      ['send', 'message/send', { message: { ...message, role: 'ROLE_USER' } }],
      ['get', 'tasks/get', { id: 5 }],
      ['get', 'tasks/get', undefined],
      ['push.delete', 'tasks/pushNotificationConfig/delete', { id: 't1' }],
    ];
    for (const [op, method, params] of cases) {
      const expected = validateParams(method, params) as A2AError;
      assert.ok(expected, method);
      assert.throws(
        () => v0_3.decodeRequest(op, params),
        (e: unknown) => e instanceof A2AError && e.kind === 'invalid-params' && e.message === expected.message,
      );
    }
  });

  test('ListTasks is not a 0.3 operation', () => {
    assert.throws(
      () => v0_3.decodeRequest('list', {}),
      (e: unknown) => e instanceof A2AError && e.kind === 'unsupported-operation',
    );
  });
});

describe('0.3 codec: peers and errors', () => {
  test('a peer Task in state "unknown" is an invalid agent response', () => {
    const task: W.Task = { kind: 'task', id: 't', contextId: 'c', status: { state: 'unknown' } };
    assert.throws(
      () => decodeTask(task),
      (e: unknown) => e instanceof A2AError && e.kind === 'invalid-agent-response',
    );
  });

  test('a direct Message result and stream item', () => {
    const message: N.Message = { messageId: 'm', role: 'agent', parts: [{ kind: 'text', text: 'hi' }], contextId: 'c' };
    const wire = {
      kind: 'message',
      messageId: 'm',
      role: 'agent',
      contextId: 'c',
      parts: [{ kind: 'text', text: 'hi' }],
    };
    assert.deepEqual(v0_3.encodeSendResult({ kind: 'message', message }), wire);
    assert.deepEqual(v0_3.encodeStreamEvent({ kind: 'message', message }, true), wire);
    assert.deepEqual(decodeStreamEvent(wire as W.Message), { event: { kind: 'message', message }, final: true });
  });

  test('errors keep the 0.3 form: code, message, the 0.3 data only', () => {
    assert.deepEqual(v0_3.encodeError(taskNotFound('run_x')), { code: -32001, message: 'Task not found: run_x' });
    assert.deepEqual(v0_3.encodeError(invalidParams('bad', { errors: [] })), {
      code: -32602,
      message: 'bad',
      data: { errors: [] },
    });
  });
});
