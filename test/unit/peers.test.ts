// The pure parts of the peer client: message identity and trace context, the folding of stream
// events into one task shape, and the classification of what a call threw.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Role, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { JsonRpcTaskNotFoundError, JsonRpcTransportError, RestTaskNotFoundError } from '@a2a-js/sdk/errors';
import { EgressDeniedError } from '../../src/egress/dispatcher.js';
import { PeerError, toPeerError } from '../../src/peers/errors.js';
import { messageIdFor, traceIdFor, traceparentFor } from '../../src/peers/identity.js';
import type { TaskView } from '../../src/a2a/model.js';
import { applyStreamEvent, taskOf } from '../../src/peers/normalize.js';
import { Redactor } from '../../src/secrets/redact.js';

describe('message identity', () => {
  it('derives a UUID-shaped (version 8) message id from the idempotency key, the same every time', () => {
    const id = messageIdFor('run_1:review:0');
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(messageIdFor('run_1:review:0'), id);
    assert.notEqual(messageIdFor('run_1:review:1'), id);
    assert.notEqual(messageIdFor('run_1:review:0:reply:1'), id);
  });

  it('gives every request of a run the run’s trace id and a fresh span id', () => {
    const a = traceparentFor('run_1');
    const b = traceparentFor('run_1');
    assert.match(a, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.equal(a.split('-')[1], traceIdFor('run_1'));
    assert.equal(b.split('-')[1], traceIdFor('run_1'));
    assert.notEqual(a.split('-')[2], b.split('-')[2]);
    assert.notEqual(traceIdFor('run_2'), traceIdFor('run_1'));
  });
});

const text = (value: string) => ({
  content: { $case: 'text' as const, value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});
const status = (state: TaskState, words?: string) => ({
  state,
  message: words
    ? {
        messageId: 'm',
        contextId: 'c',
        taskId: 't',
        role: Role.ROLE_AGENT,
        parts: [text(words)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      }
    : undefined,
  timestamp: '2026-01-01T00:00:00Z',
});
const artifactEvent = (id: string, value: string, append: boolean): StreamResponse => ({
  payload: {
    $case: 'artifactUpdate',
    value: {
      taskId: 't',
      contextId: 'c',
      artifact: {
        artifactId: id,
        name: id,
        description: '',
        parts: [text(value)],
        metadata: undefined,
        extensions: [],
      },
      append,
      lastChunk: true,
      metadata: undefined,
    },
  },
});

describe('the normalized task', () => {
  it('is the neutral Task: the RFC 0100 state names and plain-JSON parts (text, data, file)', () => {
    const task = taskOf({
      id: 't',
      contextId: 'c',
      status: status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which one?'),
      artifacts: [
        {
          artifactId: 'a',
          name: '',
          description: '',
          parts: [
            { content: { $case: 'data', value: { k: 1 } }, metadata: undefined, filename: '', mediaType: '' },
            {
              content: { $case: 'url', value: 'https://f.example/x' },
              metadata: undefined,
              filename: 'x.pdf',
              mediaType: 'application/pdf',
            },
            { content: { $case: 'raw', value: Buffer.from('hi') }, metadata: undefined, filename: '', mediaType: '' },
          ],
          metadata: undefined,
          extensions: [],
        },
      ],
      history: [],
      metadata: undefined,
    });
    assert.deepEqual(task, {
      id: 't',
      contextId: 'c',
      status: {
        state: 'input-required',
        message: {
          messageId: 'm',
          role: 'agent',
          parts: [{ kind: 'text', text: 'Which one?' }],
          contextId: 'c',
          taskId: 't',
        },
        timestamp: '2026-01-01T00:00:00Z',
      },
      artifacts: [
        {
          artifactId: 'a',
          parts: [
            { kind: 'data', data: { k: 1 } },
            { kind: 'file', uri: 'https://f.example/x', name: 'x.pdf', mediaType: 'application/pdf' },
            { kind: 'file', bytes: 'aGk=' },
          ],
        },
      ],
    });
  });

  it('refuses a task whose state it does not know (an invalid answer, -32006)', () => {
    assert.throws(
      () =>
        taskOf({
          id: 't',
          contextId: 'c',
          status: status(TaskState.TASK_STATE_UNSPECIFIED),
          artifacts: [],
          history: [],
          metadata: undefined,
        }),
      (e: unknown) => e instanceof PeerError && e.failure.kind === 'peer' && e.failure.code === -32006,
    );
  });

  it('folds stream events: status replaces state and words, artifacts are added, replaced or appended to', () => {
    let t: TaskView | undefined;
    const statusEvent = (state: TaskState, words?: string): StreamResponse => ({
      payload: {
        $case: 'statusUpdate',
        value: { taskId: 't', contextId: 'c', status: status(state, words), metadata: undefined },
      },
    });
    t = applyStreamEvent(t, statusEvent(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which one?'));
    assert.equal(t?.status.state, 'input-required');
    t = applyStreamEvent(t, statusEvent(TaskState.TASK_STATE_WORKING));
    assert.equal(t?.status.state, 'working');
    assert.equal(t?.status.message, undefined, 'the question belongs to the state it came with');
    t = applyStreamEvent(t, artifactEvent('a', 'one', false));
    t = applyStreamEvent(t, artifactEvent('a', 'two', true));
    t = applyStreamEvent(t, artifactEvent('b', 'x', false));
    t = applyStreamEvent(t, artifactEvent('b', 'y', false));
    assert.deepEqual(
      t?.artifacts?.map((a) => [a.artifactId, a.parts.map((p) => (p.kind === 'text' ? p.text : ''))]),
      [
        ['a', ['one', 'two']],
        ['b', ['y']],
      ],
    );
    t = applyStreamEvent(t, statusEvent(TaskState.TASK_STATE_COMPLETED));
    assert.deepEqual([t?.id, t?.contextId, t?.status.state, t?.artifacts?.length], ['t', 'c', 'completed', 2]);
  });
});

describe('error classification', () => {
  const classify = (err: unknown) => toPeerError(err, 'send https://p.example/a2a', 1000).failure;

  it('a refusal of the egress guard, however deep in the causes, is refused', () => {
    const err = new TypeError('fetch failed', { cause: new EgressDeniedError('address 10.0.0.1 is not allowed') });
    assert.deepEqual(classify(err), {
      kind: 'refused',
      reason: 'send https://p.example/a2a: address 10.0.0.1 is not allowed',
    });
  });

  it('network failures and timeouts are transport errors', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.9.9.9:443'), { code: 'ECONNREFUSED' });
    assert.deepEqual(classify(new TypeError('fetch failed', { cause: refused })), {
      kind: 'transport',
      message: 'send https://p.example/a2a: connect ECONNREFUSED 10.9.9.9:443',
    });
    assert.equal(classify(new TypeError('terminated', { cause: new Error('other side closed') })).kind, 'transport');
    assert.deepEqual(classify(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), {
      kind: 'transport',
      message: 'send https://p.example/a2a: no answer within 1000 ms',
    });
  });

  it("the SDK's A2A errors keep their code, over JSON-RPC and REST alike", () => {
    assert.deepEqual(classify(new JsonRpcTaskNotFoundError({ message: 'Task not found: x' })), {
      kind: 'peer',
      code: -32001,
      message: 'send https://p.example/a2a: Task not found: x',
    });
    assert.equal((classify(new RestTaskNotFoundError({ message: 'gone' })) as { code: number }).code, -32001);
    const vendor = new JsonRpcTransportError({ jsonrpc: '2.0', id: 1, error: { code: -32050, message: 'nope' } });
    assert.equal((classify(vendor) as { code: number }).code, -32050);
    // The SDK reports an error event inside a stream as a plain Error whose cause is the A2A error.
    const inStream = new Error('SSE event contained an error', { cause: new JsonRpcTaskNotFoundError() });
    assert.equal((classify(inStream) as { code: number }).code, -32001);
  });

  it("the peer's words are redacted before they are cut: a token across the cut leaves nothing of itself", () => {
    const token = 'agent~tok+en/=0123456789';
    const redact = new Redactor([token]).text;
    // The token starts 10 characters before the cut at 300.
    const said = `${'x'.repeat(290)} ${token} and more`;
    const failures = [
      new JsonRpcTaskNotFoundError({ message: said }),
      new SyntaxError(said),
      new TypeError('fetch failed', { cause: new Error(said) }),
    ].map((err) => toPeerError(err, 'send https://p.example/a2a', 1000, redact).failure as { message: string });
    for (const f of failures) {
      assert.match(f.message, /x \[redact/);
      assert.ok(!f.message.includes('agent'), f.message);
    }
  });

  it('an answer that is not A2A is -32006; a bug of ours is not disguised as the peer’s', () => {
    assert.equal((classify(new SyntaxError('Unexpected token')) as { code: number }).code, -32006);
    assert.equal((classify(new Error('JSON-RPC response ID mismatch')) as { code: number }).code, -32006);
    for (const bug of [new TypeError("Cannot read properties of undefined (reading 'x')"), new RangeError('bad')]) {
      assert.throws(
        () => classify(bug),
        (e) => e === bug,
      );
    }
  });
});
