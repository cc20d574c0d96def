import { test, describe } from 'node:test';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import {
  type InterruptVote,
  RUN_STATUSES,
  type RunEvent,
  type RunRecord,
  type RunStatus,
} from '../../src/store/model.js';
import {
  artifactFromEvent,
  collectArtifacts,
  isFinalForMessageStream,
  isTerminalState,
  projectState,
  toArtifactUpdate,
  toStatusUpdate,
  toTask,
  toTaskState,
} from '../../src/a2a/projection.js';
import { parseResumeMessage, partsToInputs } from '../../src/a2a/messages.js';
import { taskRecordOf } from '../../src/a2a/task-records.js';
import type { Message, Part } from '../../src/a2a/model.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

// Walk up to the repo root so this works from test/unit (tsx) and dist/test/unit (compiled).
function repoFile(rel: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`repo root not found for ${rel}`);
    dir = up;
  }
  return join(dir, rel);
}
const loadJson = (rel: string): Record<string, unknown> =>
  JSON.parse(readFileSync(repoFile(rel), 'utf8')) as Record<string, unknown>;

const taskStateSchema = loadJson('schemas/a2a-task-state.schema.json');
const a2aBlockSchema = loadJson('schemas/capabilities-a2a.schema.json');

function makeAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true });
  addFormats.default(ajv);
  return ajv;
}

const TS = '2026-06-13T19:00:00Z';

function run(status: RunStatus, over: Partial<RunRecord> = {}): RunRecord {
  return {
    runId: 'run_1',
    tenantId: 't1',
    principalId: 'p1',
    workflowId: 'campaign-brief',
    status,
    inputs: { prompt: 'secret input' },
    state: { outputs: { n1: 'secret output' }, vars: {} },
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

const msg = (id: string, text: string): Message => ({
  messageId: id,
  role: 'user',
  parts: [{ kind: 'text', text }],
});

/** `metadata.openwop` of a Task (the tests below always expect it). */
const openwopOf = (t: { metadata?: Record<string, unknown> }): Record<string, unknown> =>
  (t.metadata?.openwop ?? {}) as Record<string, unknown>;

describe('projectState: the §1.3/§7.4 table', () => {
  const table: Array<[RunStatus, string, string | undefined]> = [
    ['pending', 'submitted', undefined],
    ['running', 'working', undefined],
    ['paused', 'working', undefined],
    ['cancelling', 'working', undefined],
    ['waiting-approval', 'input-required', 'approval'],
    ['waiting-input', 'input-required', 'clarification'],
    ['waiting-external', 'input-required', undefined],
    ['completed', 'completed', undefined],
    ['failed', 'failed', undefined],
    ['cancelled', 'canceled', undefined],
  ];
  for (const [status, state, kind] of table) {
    test(`${status} → ${state}${kind ? `/${kind}` : ''}`, () => {
      assert.deepEqual(projectState(status), kind ? { state, interruptKind: kind } : { state });
    });
  }

  test('the table covers every run status and never yields auth-required or rejected', () => {
    assert.deepEqual(new Set(table.map((r) => r[0])), new Set(RUN_STATUSES));
    for (const s of RUN_STATUSES) {
      const p = projectState(s, 'approval');
      assert.ok(!['auth-required', 'rejected', 'unknown'].includes(p.state));
      assert.equal(p.interruptKind !== undefined, p.state === 'input-required' && s !== 'waiting-external');
    }
  });

  test('the status decides the kind, not the passed interrupt kind', () => {
    assert.deepEqual(projectState('waiting-input', 'approval'), {
      state: 'input-required',
      interruptKind: 'clarification',
    });
    assert.deepEqual(projectState('running', 'approval'), { state: 'working' });
  });

  test('terminal and final-for-stream predicates', () => {
    for (const s of ['completed', 'canceled', 'failed', 'rejected'] as const) {
      assert.ok(isTerminalState(s));
      assert.ok(isFinalForMessageStream(s));
    }
    for (const s of ['submitted', 'working'] as const) {
      assert.ok(!isTerminalState(s));
      assert.ok(!isFinalForMessageStream(s));
    }
    assert.ok(!isTerminalState('input-required'));
    assert.ok(isFinalForMessageStream('input-required'));
    assert.ok(isFinalForMessageStream('auth-required'));
  });
});

describe('the published A2ATaskState against schemas/a2a-task-state.schema.json', () => {
  const validate = makeAjv().compile(taskStateSchema);
  /** The record exactly as production builds it: the pipeline step's record, then the read view. */
  const published = (status: RunStatus, push?: { url: string; tokenFingerprint?: string }) =>
    toTaskState(taskRecordOf(run(status, { metadata: { a2a: { contextId: 'ctx_1' } } })), push);

  for (const status of RUN_STATUSES) {
    test(`record for ${status} validates`, () => {
      const rec = published(status);
      assert.ok(validate(rec), JSON.stringify(validate.errors));
      assert.equal(rec.taskId, rec.runId);
      assert.equal(rec.interruptKind !== undefined, status === 'waiting-approval' || status === 'waiting-input');
    });
  }

  test('serialises schema fields only, push config reduced to url and fingerprint', () => {
    const pushConfig = { url: 'https://caller.example.com/push', tokenFingerprint: 'abc', token: 'RAW' } as {
      url: string;
      tokenFingerprint: string;
    };
    const rec = published('waiting-approval', pushConfig);
    assert.deepEqual(rec, {
      taskId: 'run_1',
      runId: 'run_1',
      contextId: 'ctx_1',
      state: 'input-required',
      interruptKind: 'approval',
      updatedAt: TS,
      pushConfig: { url: 'https://caller.example.com/push', tokenFingerprint: 'abc' },
    });
    assert.ok(validate(rec), JSON.stringify(validate.errors));
  });

  test('the schema examples validate', () => {
    for (const ex of taskStateSchema.examples as unknown[]) assert.ok(validate(ex), JSON.stringify(validate.errors));
  });
});

describe('conformance shape checks (openwop.md §6.3 item 4 a–e)', () => {
  const ajv = makeAjv();
  ajv.addSchema(taskStateSchema);
  const validate = ajv.getSchema('https://openwop.dev/spec/v1/a2a-task-state.schema.json')!;
  // The suite reads the block as capabilities.properties.a2a; wrap ours the same way.
  const capabilities = { type: 'object', properties: { a2a: a2aBlockSchema } } as const;

  test('a. a conforming record validates', () => {
    const rec = {
      taskId: 'run_x',
      runId: 'run_x',
      contextId: 'ctx_42',
      state: 'input-required',
      interruptKind: 'approval',
      updatedAt: TS,
    };
    assert.ok(validate(rec), JSON.stringify(validate.errors));
  });

  test('b. state WORKING fails', () => {
    assert.equal(validate({ taskId: 'run_x', runId: 'run_x', state: 'WORKING', updatedAt: TS }), false);
  });

  test('c. an extra inputs property fails (closed object)', () => {
    assert.equal(
      validate({ taskId: 'run_x', runId: 'run_x', state: 'working', updatedAt: TS, inputs: { secret: 'x' } }),
      false,
    );
  });

  test('d. PushConfig from $defs, referenced by $id', () => {
    const push = ajv.compile({ $ref: 'https://openwop.dev/spec/v1/a2a-task-state.schema.json#/$defs/PushConfig' });
    assert.equal(push({ tokenFingerprint: 'a1b2' }), false);
    assert.equal(push({ url: 'https://caller.example.com/push', tokenFingerprint: 'x'.repeat(33) }), false);
    assert.equal(push({ url: 'https://caller.example.com/push', tokenFingerprint: 'a1b2c3d4' }), true);
    assert.equal(push({ url: 'https://caller.example.com/push', token: 'raw' }), false);
  });

  test('e. capabilities.properties.a2a shape', () => {
    const a2a = capabilities.properties.a2a as {
      required: string[];
      additionalProperties: unknown;
      properties: object;
    };
    assert.ok(['supported', 'agentCardUrl'].every((k) => a2a.required.includes(k)));
    assert.equal(a2a.additionalProperties, false);
    // The RFC 0100 fields and RFC 0152's three version fields.
    assert.deepEqual(Object.keys(a2a.properties).sort(), [
      'agentCardUrl',
      'durableTasks',
      'preferredVersion',
      'profiles',
      'protocolVersions',
      'pushNotifications',
      'streaming',
      'supported',
    ]);
    const v = makeAjv().compile(capabilities);
    const ok = {
      a2a: { supported: true, agentCardUrl: 'https://example.com/.well-known/agent-card.json', durableTasks: true },
    };
    assert.ok(v(ok), JSON.stringify(v.errors));
    assert.equal(v({ a2a: { supported: true } }), false);
    assert.ok(v({ a2a: { ...ok.a2a, protocolVersions: ['1.0', '0.3'], preferredVersion: '1.0' } }));
    assert.equal(v({ a2a: { ...ok.a2a, transports: ['grpc'] } }), false, 'still closed');
  });
});

describe('toTask', () => {
  const base = { contextId: 'ctx_1', stateTimestamp: TS, artifacts: [], history: [] };

  test('working task: envelope, openwop ids, its activity as the status message, no content', () => {
    const t = toTask({ ...base, run: run('running', { cursor: { ordinals: {}, nodeId: 'draft' } }) });
    const summary = 'Running node draft';
    assert.deepEqual(t, {
      id: 'run_1',
      contextId: 'ctx_1',
      status: {
        state: 'working',
        timestamp: TS,
        message: {
          messageId: 'run_1:activity:1',
          role: 'agent',
          taskId: 'run_1',
          contextId: 'ctx_1',
          parts: [{ kind: 'text', text: summary }],
        },
      },
      metadata: {
        openwop: {
          runId: 'run_1',
          workflowId: 'campaign-brief',
          runStatus: 'running',
          activity: { kind: 'running', nodeId: 'draft', summary, since: TS },
        },
      },
    });
    assert.ok(!JSON.stringify(t).includes('secret'));
  });

  test('paused projects as working, the pause visible in metadata', () => {
    const t = toTask({ ...base, run: run('paused') });
    assert.equal(t.status.state, 'working');
    assert.equal(openwopOf(t).runStatus, 'paused');
  });

  test('historyLength: undefined → all, 0 → omitted, N → last N', () => {
    const history = [msg('m1', 'a'), msg('m2', 'b'), msg('m3', 'c')];
    assert.equal(toTask({ ...base, history, run: run('running') }).history?.length, 3);
    assert.equal(toTask({ ...base, history, historyLength: 0, run: run('running') }).history, undefined);
    assert.deepEqual(
      toTask({ ...base, history, historyLength: 2, run: run('running') }).history?.map((m) => m.messageId),
      ['m2', 'm3'],
    );
    assert.equal(toTask({ ...base, history, historyLength: 10, run: run('running') }).history?.length, 3);
  });

  test('approval interrupt: kind, nodeId and actions (edit → edit-accept)', () => {
    const t = toTask({
      ...base,
      run: run('waiting-approval'),
      interrupt: {
        kind: 'approval',
        nodeId: 'review',
        data: { actions: ['accept', 'reject', 'edit', 'ask'], artifactData: 'x' },
      },
    });
    assert.equal(t.status.state, 'input-required');
    assert.deepEqual(openwopOf(t).interrupt, {
      kind: 'approval',
      nodeId: 'review',
      actions: ['accept', 'reject', 'edit-accept', 'ask'],
      // No artifact shown: the decision is bound to the RFC 8785 form of null.
      artifactHash: `sha256:${sha256('null')}`,
    });
  });

  test('clarification interrupt carries the questions', () => {
    const questions = [{ id: 'q1', question: 'Which region?' }];
    const t = toTask({
      ...base,
      run: run('waiting-input'),
      interrupt: { kind: 'clarification', nodeId: 'ask', data: { questions } },
    });
    assert.deepEqual(openwopOf(t).interrupt, {
      kind: 'clarification',
      nodeId: 'ask',
      questions,
      // RFC 8785: keys sorted, no whitespace.
      artifactHash: `sha256:${sha256('[{"id":"q1","question":"Which region?"}]')}`,
    });
  });

  test('artifactHash is the RFC 8785 form of the artifact, whatever order its keys came in; an edit vote changes it', () => {
    const shown = (data: Record<string, unknown>, votes?: InterruptVote[]) =>
      (
        openwopOf(
          toTask({
            ...base,
            run: run('waiting-approval'),
            interrupt: { kind: 'approval', nodeId: 'review', data, ...(votes ? { votes } : {}) },
          }),
        ).interrupt as { artifactHash: string }
      ).artifactHash;
    const canonical = '{"n":1e+30,"text":"Draft","z":[true,null]}';
    assert.equal(shown({ artifact: { z: [true, null], text: 'Draft', n: 1e30 } }), `sha256:${sha256(canonical)}`);
    const edit: InterruptVote = {
      principalId: 'alice',
      action: 'edit-accept',
      at: '2026-01-01T00:00:00Z',
      value: { editedArtifactData: { text: 'Edited' } },
    };
    assert.equal(shown({ artifact: { text: 'Draft' } }, [edit]), `sha256:${sha256('{"text":"Edited"}')}`);
  });

  test('input-required without interrupt details still names the kind', () => {
    const t = toTask({ ...base, run: run('waiting-approval') });
    assert.deepEqual(openwopOf(t).interrupt, { kind: 'approval' });
    const ext = toTask({ ...base, run: run('waiting-external') });
    assert.deepEqual(openwopOf(ext).interrupt, { kind: 'external-event' });
  });

  test('failed: agent status message and openwop.error', () => {
    const t = toTask({
      ...base,
      run: run('failed', { error: { code: 'interrupt_rejected', message: 'Rejected by reviewer' } }),
    });
    assert.equal(t.status.state, 'failed');
    assert.equal(t.status.message?.role, 'agent');
    assert.deepEqual(t.status.message?.parts, [{ kind: 'text', text: 'Rejected by reviewer' }]);
    assert.equal(t.status.message?.taskId, 'run_1');
    assert.deepEqual(openwopOf(t).error, {
      code: 'interrupt_rejected',
      message: 'Rejected by reviewer',
    });
    assert.equal(openwopOf(t).interrupt, undefined);
    // Deterministic: two reads are identical.
    assert.deepEqual(
      t,
      toTask({
        ...base,
        run: run('failed', { error: { code: 'interrupt_rejected', message: 'Rejected by reviewer' } }),
      }),
    );
  });

  test('failed without a recorded error still has a message', () => {
    const t = toTask({ ...base, run: run('failed') });
    assert.equal((openwopOf(t).error as { code: string }).code, 'run_failed');
  });

  test('completed with artifacts; cancelled → canceled', () => {
    const artifacts = [{ artifactId: 'a1', parts: [{ kind: 'data' as const, data: { x: 1 } }] }];
    const t = toTask({ ...base, artifacts, run: run('completed') });
    assert.equal(t.status.state, 'completed');
    assert.deepEqual(t.artifacts, artifacts);
    assert.equal(toTask({ ...base, run: run('cancelled') }).status.state, 'canceled');
  });
});

describe('events', () => {
  test('toStatusUpdate is content-free and carries kind / error', () => {
    const ir = toStatusUpdate('run_1', 'ctx_1', 'input-required', TS, { interruptKind: 'approval' });
    assert.deepEqual(ir, {
      taskId: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'input-required', timestamp: TS },
      metadata: { openwop: { runId: 'run_1', interrupt: { kind: 'approval' } } },
    });
    const failed = toStatusUpdate('run_1', 'ctx_1', 'failed', TS, { error: { code: 'x', message: 'boom' } });
    assert.deepEqual(failed.metadata, { openwop: { runId: 'run_1', error: { code: 'x', message: 'boom' } } });
    const working = toStatusUpdate('run_1', 'ctx_1', 'working', TS, { interruptKind: 'approval' });
    assert.deepEqual(working.metadata, { openwop: { runId: 'run_1' } });
  });

  test('toArtifactUpdate', () => {
    const artifact = { artifactId: 'a1', parts: [{ kind: 'data' as const, data: {} }] };
    assert.deepEqual(toArtifactUpdate('run_1', 'ctx_1', artifact), {
      taskId: 'run_1',
      contextId: 'ctx_1',
      artifact,
    });
    assert.equal(toArtifactUpdate('run_1', 'ctx_1', artifact, { lastChunk: true }).lastChunk, true);
  });

  const ev = (sequence: number, type: RunEvent['type'], payload: Record<string, unknown>): RunEvent => ({
    runId: 'run_1',
    sequence,
    type,
    payload,
    timestamp: TS,
  });

  test('artifactFromEvent wraps data and ignores other events', () => {
    assert.deepEqual(
      artifactFromEvent(ev(0, 'artifact.created', { artifactId: 'a1', name: 'Brief', data: { title: 't' } })),
      {
        artifactId: 'a1',
        name: 'Brief',
        parts: [{ kind: 'data', data: { title: 't' } }],
      },
    );
    assert.deepEqual(artifactFromEvent(ev(0, 'artifact.created', { artifactId: 'a2', data: 'text' }))?.parts, [
      { kind: 'data', data: { value: 'text' } },
    ]);
    assert.deepEqual(artifactFromEvent(ev(0, 'artifact.created', { artifactId: 'a3', data: [1, 2] }))?.parts, [
      { kind: 'data', data: { value: [1, 2] } },
    ]);
    assert.equal(artifactFromEvent(ev(0, 'node.completed', { artifactId: 'a1' })), undefined);
    assert.equal(artifactFromEvent(ev(0, 'artifact.created', { data: {} })), undefined);
  });

  test('collectArtifacts keeps the latest per id in first-seen order', () => {
    const out = collectArtifacts([
      ev(0, 'artifact.created', { artifactId: 'a1', data: { v: 1 } }),
      ev(1, 'run.started', {}),
      ev(2, 'artifact.created', { artifactId: 'a2', data: { v: 1 } }),
      ev(3, 'artifact.created', { artifactId: 'a1', data: { v: 2 } }),
    ]);
    assert.deepEqual(
      out.map((a) => [a.artifactId, a.parts[0]]),
      [
        ['a1', { kind: 'data', data: { v: 2 } }],
        ['a2', { kind: 'data', data: { v: 1 } }],
      ],
    );
  });
});

describe('partsToInputs', () => {
  test('text joined into prompt, data merged, files as references', () => {
    const parts: Part[] = [
      { kind: 'text', text: 'line 1' },
      { kind: 'data', data: { a: 1, b: 1 } },
      { kind: 'text', text: 'line 2' },
      { kind: 'data', data: { b: 2 } },
      { kind: 'file', uri: 'https://x.example/f.pdf', name: 'f.pdf', mediaType: 'application/pdf' },
      { kind: 'file', bytes: Buffer.from('hello').toString('base64'), name: 'h.txt', mediaType: 'text/plain' },
    ];
    const { inputs } = partsToInputs(parts);
    assert.deepEqual(inputs, {
      prompt: 'line 1\nline 2',
      a: 1,
      b: 2,
      files: [
        { name: 'f.pdf', mimeType: 'application/pdf', uri: 'https://x.example/f.pdf' },
        { name: 'h.txt', mimeType: 'text/plain', size: 5 },
      ],
    });
    assert.ok(!JSON.stringify(inputs).includes(Buffer.from('hello').toString('base64')));
  });

  test('no text → no prompt', () => {
    assert.deepEqual(partsToInputs([{ kind: 'data', data: { x: 1 } }]).inputs, { x: 1 });
  });
});

describe('parseResumeMessage: approval', () => {
  const data = (d: Record<string, unknown>): Part[] => [{ kind: 'data', data: d }];
  const p = (parts: Part[], metadata?: unknown) => parseResumeMessage(parts, metadata, 'approval');

  test('accept / reject with feedback', () => {
    assert.deepEqual(p(data({ action: 'accept', feedback: 'looks good' })), {
      kind: 'approval',
      value: { action: 'accept', feedback: 'looks good' },
    });
    assert.deepEqual(p(data({ action: 'reject' })), { kind: 'approval', value: { action: 'reject' } });
  });

  test('refine with refineFeedback, and bare feedback promoted', () => {
    const rf = { scope: 'section', sectionPath: 'intro', tags: ['tone'], text: 'warmer' };
    assert.deepEqual(p(data({ action: 'refine', refineFeedback: rf })), {
      kind: 'approval',
      value: { action: 'refine', refineFeedback: rf },
    });
    assert.deepEqual(p(data({ action: 'refine', feedback: 'shorter' })), {
      kind: 'approval',
      value: { action: 'refine', feedback: 'shorter', refineFeedback: { scope: 'whole', text: 'shorter' } },
    });
    assert.equal(p(data({ action: 'refine' })).kind, 'invalid');
    assert.equal(p(data({ action: 'refine', refineFeedback: { scope: 'chapter' } })).kind, 'invalid');
    assert.equal(p(data({ action: 'refine', refineFeedback: { tags: 'x' } })).kind, 'invalid');
  });

  test('edit-accept, and the edit alias', () => {
    const expected = { kind: 'approval', value: { action: 'edit-accept', editedArtifactData: { title: 'New' } } };
    assert.deepEqual(p(data({ action: 'edit-accept', editedArtifactData: { title: 'New' } })), expected);
    assert.deepEqual(p(data({ action: 'edit', editedArtifactData: { title: 'New' } })), expected);
    assert.equal(p(data({ action: 'edit-accept' })).kind, 'invalid');
  });

  test('ask: action, or a text-only reply', () => {
    assert.deepEqual(p(data({ action: 'ask', question: 'Why?' })), { kind: 'ask', question: 'Why?' });
    assert.deepEqual(
      p([
        { kind: 'data', data: { action: 'ask' } },
        { kind: 'text', text: 'What budget?' },
      ]),
      { kind: 'ask', question: 'What budget?' },
    );
    assert.deepEqual(p([{ kind: 'text', text: 'Can you explain section 2?' }]), {
      kind: 'ask',
      question: 'Can you explain section 2?',
    });
    assert.equal(p(data({ action: 'ask' })).kind, 'invalid');
  });

  test('text alongside a decision becomes the feedback', () => {
    assert.deepEqual(
      p([
        { kind: 'data', data: { action: 'accept' } },
        { kind: 'text', text: 'ship it' },
      ]),
      {
        kind: 'approval',
        value: { action: 'accept', feedback: 'ship it' },
      },
    );
  });

  test('legacy approve and decision forms', () => {
    assert.deepEqual(p(data({ approve: true, feedback: 'ok' })), {
      kind: 'approval',
      value: { action: 'accept', feedback: 'ok' },
    });
    assert.deepEqual(p(data({ approve: false })), { kind: 'approval', value: { action: 'reject' } });
    assert.deepEqual(p(data({ approve: false, feedback: 'no' })), {
      kind: 'approval',
      value: { action: 'reject', feedback: 'no' },
    });
    assert.deepEqual(p(data({ decision: 'approved' })), { kind: 'approval', value: { action: 'accept' } });
    assert.deepEqual(p(data({ decision: 'rejected', feedback: 'redo' })), {
      kind: 'approval',
      value: { action: 'refine', feedback: 'redo', refineFeedback: { scope: 'whole', text: 'redo' } },
    });
    assert.deepEqual(p(data({ decision: 'rejected' })), { kind: 'approval', value: { action: 'reject' } });
    assert.equal(p(data({ decision: 'timeout' })).kind, 'invalid');
  });

  test('metadata.openwop.action (string or object) and metadata.openwop.interrupt', () => {
    assert.deepEqual(p([], { openwop: { action: 'accept' } }), { kind: 'approval', value: { action: 'accept' } });
    assert.deepEqual(p([], { openwop: { action: { action: 'reject', feedback: 'no' } } }), {
      kind: 'approval',
      value: { action: 'reject', feedback: 'no' },
    });
    assert.deepEqual(p([], { openwop: { interrupt: { action: 'accept' } } }), {
      kind: 'approval',
      value: { action: 'accept' },
    });
    assert.deepEqual(p([], { openwop: { interrupt: { resumeValue: { approve: true } } } }), {
      kind: 'approval',
      value: { action: 'accept' },
    });
  });

  test('a data part action wins over metadata', () => {
    assert.deepEqual(p(data({ action: 'reject' }), { openwop: { action: 'accept' } }), {
      kind: 'approval',
      value: { action: 'reject' },
    });
  });

  test('invalid: unknown action, wrong feedback type, nothing at all', () => {
    const bad = p(data({ action: 'approve' }));
    assert.equal(bad.kind, 'invalid');
    assert.match((bad as { reason: string }).reason, /approve/);
    assert.equal(p(data({ action: 7 })).kind, 'invalid');
    assert.equal(p(data({ action: 'accept', feedback: 3 })).kind, 'invalid');
    assert.equal(p([]).kind, 'invalid');
    assert.equal(p(data({ unrelated: true })).kind, 'invalid');
  });
});

describe('parseResumeMessage: clarification', () => {
  const p = (parts: Part[], metadata?: unknown) => parseResumeMessage(parts, metadata, 'clarification');

  test('answers map', () => {
    assert.deepEqual(p([{ kind: 'data', data: { answers: { q1: 'EU', q2: 3 } } }]), {
      kind: 'clarification',
      value: { answers: { q1: 'EU', q2: '3' } },
    });
  });

  test('answers array', () => {
    assert.deepEqual(
      p([
        {
          kind: 'data',
          data: {
            answers: [
              { id: 'q1', answer: 'EU' },
              { id: 'q2', answer: true },
            ],
          },
        },
      ]),
      {
        kind: 'clarification',
        value: { answers: { q1: 'EU', q2: 'true' } },
      },
    );
  });

  test('plain text answers the single question', () => {
    assert.deepEqual(p([{ kind: 'text', text: 'Europe' }]), {
      kind: 'clarification',
      value: { answers: { '*': 'Europe' } },
    });
  });

  test('answers via metadata.openwop.interrupt', () => {
    assert.deepEqual(p([], { openwop: { interrupt: { answers: { q1: 'x' } } } }), {
      kind: 'clarification',
      value: { answers: { q1: 'x' } },
    });
  });

  test('invalid forms', () => {
    assert.equal(p([]).kind, 'invalid');
    assert.equal(p([{ kind: 'data', data: { answers: {} } }]).kind, 'invalid');
    assert.equal(p([{ kind: 'data', data: { answers: 'x' } }]).kind, 'invalid');
    assert.equal(p([{ kind: 'data', data: { answers: [{ answer: 'x' }] } }]).kind, 'invalid');
    assert.equal(p([{ kind: 'data', data: { answers: { q1: { nested: 1 } } } }]).kind, 'invalid');
  });
});
