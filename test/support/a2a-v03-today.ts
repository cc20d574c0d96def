// The 0.3 wire objects Handoff sent while 0.3 was its internal form (generated from the 0.3
// projection before the inversion, issue 34 §1): the 0.3 edge adapter must keep sending these bytes.
// Keys in the order they were written; compared as JSON text.
import type * as W from '../../src/a2a/v0_3/types.js';

export const TODAYS_V03: {
  tasks: Record<string, W.Task>;
  updates: Record<string, W.TaskStatusUpdateEvent>;
  artifacts: Record<string, W.TaskArtifactUpdateEvent>;
} = {
  tasks: {
    submitted: {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'submitted', timestamp: '2026-06-13T19:00:00.000Z' },
      metadata: { openwop: { runId: 'run_1', workflowId: 'campaign-brief', runStatus: 'pending' } },
    },
    working: {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'working', timestamp: '2026-06-13T19:00:00.000Z' },
      history: [
        { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'draft a brief' }] },
        {
          kind: 'message',
          messageId: 'm2',
          role: 'user',
          taskId: 'run_1',
          contextId: 'ctx_1',
          parts: [{ kind: 'data', data: { action: 'accept' } }],
          metadata: { note: 'x' },
        },
      ],
      metadata: { openwop: { runId: 'run_1', workflowId: 'campaign-brief', runStatus: 'running' } },
    },
    approval: {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'input-required', timestamp: '2026-06-13T19:00:00.000Z' },
      artifacts: [{ artifactId: 'a1', parts: [{ kind: 'data', data: { title: 'Brief' } }], name: 'brief' }],
      history: [
        { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'draft a brief' }] },
        {
          kind: 'message',
          messageId: 'm2',
          role: 'user',
          taskId: 'run_1',
          contextId: 'ctx_1',
          parts: [{ kind: 'data', data: { action: 'accept' } }],
          metadata: { note: 'x' },
        },
      ],
      metadata: {
        openwop: {
          runId: 'run_1',
          workflowId: 'campaign-brief',
          runStatus: 'waiting-approval',
          interrupt: {
            kind: 'approval',
            nodeId: 'gate',
            actions: ['accept', 'edit-accept', 'reject'],
            title: 'Approve?',
            artifact: { x: 1 },
          },
          interrupts: [{ nodeId: 'gate', kind: 'approval', title: 'Approve?' }],
        },
      },
    },
    clarification: {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'input-required', timestamp: '2026-06-13T19:00:00.000Z' },
      history: [
        { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'draft a brief' }] },
        {
          kind: 'message',
          messageId: 'm2',
          role: 'user',
          taskId: 'run_1',
          contextId: 'ctx_1',
          parts: [{ kind: 'data', data: { action: 'accept' } }],
          metadata: { note: 'x' },
        },
      ],
      metadata: {
        openwop: {
          runId: 'run_1',
          workflowId: 'campaign-brief',
          runStatus: 'waiting-input',
          interrupt: { kind: 'clarification', nodeId: 'ask', questions: [{ id: 'q1', prompt: 'Who?' }] },
          interrupts: [{ nodeId: 'ask', kind: 'clarification' }],
        },
      },
    },
    failed: {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: {
        state: 'failed',
        timestamp: '2026-06-13T19:00:00.000Z',
        message: {
          kind: 'message',
          messageId: 'run_1:status:failed',
          role: 'agent',
          taskId: 'run_1',
          contextId: 'ctx_1',
          parts: [{ kind: 'text', text: 'boom' }],
        },
      },
      metadata: {
        openwop: {
          runId: 'run_1',
          workflowId: 'campaign-brief',
          runStatus: 'failed',
          error: { code: 'node_failed', message: 'boom' },
        },
      },
    },
    completed: {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'completed', timestamp: '2026-06-13T19:00:00.000Z' },
      artifacts: [
        { artifactId: 'a1', parts: [{ kind: 'data', data: { value: 'plain text' } }] },
        { artifactId: 'a2', parts: [{ kind: 'data', data: { value: [1, 2] } }] },
        { artifactId: 'a3', parts: [{ kind: 'data', data: { value: null } }], name: 'empty' },
      ],
      history: [
        {
          kind: 'message',
          messageId: 'm2',
          role: 'user',
          taskId: 'run_1',
          contextId: 'ctx_1',
          parts: [{ kind: 'data', data: { action: 'accept' } }],
          metadata: { note: 'x' },
        },
      ],
      metadata: { openwop: { runId: 'run_1', workflowId: 'campaign-brief', runStatus: 'completed' } },
    },
    canceled: {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'canceled', timestamp: '2026-06-13T19:00:00.000Z' },
      history: [
        { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'draft a brief' }] },
        {
          kind: 'message',
          messageId: 'm2',
          role: 'user',
          taskId: 'run_1',
          contextId: 'ctx_1',
          parts: [{ kind: 'data', data: { action: 'accept' } }],
          metadata: { note: 'x' },
        },
      ],
      metadata: { openwop: { runId: 'run_1', workflowId: 'campaign-brief', runStatus: 'cancelled' } },
    },
  },
  updates: {
    working: {
      kind: 'status-update',
      taskId: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'working', timestamp: '2026-06-13T19:00:00.000Z' },
      final: false,
      metadata: { openwop: { runId: 'run_1' } },
    },
    'input-required': {
      kind: 'status-update',
      taskId: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'input-required', timestamp: '2026-06-13T19:00:00.000Z' },
      final: true,
      metadata: { openwop: { runId: 'run_1', interrupt: { kind: 'approval' } } },
    },
    failed: {
      kind: 'status-update',
      taskId: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'failed', timestamp: '2026-06-13T19:00:00.000Z' },
      final: true,
      metadata: { openwop: { runId: 'run_1', error: { code: 'node_failed', message: 'boom' } } },
    },
    completed: {
      kind: 'status-update',
      taskId: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'completed', timestamp: '2026-06-13T19:00:00.000Z' },
      final: true,
      metadata: { openwop: { runId: 'run_1' } },
    },
  },
  artifacts: {
    named: {
      kind: 'artifact-update',
      taskId: 'run_1',
      contextId: 'ctx_1',
      artifact: { artifactId: 'a1', parts: [{ kind: 'data', data: { k: 'v' } }], name: 'named' },
      lastChunk: true,
    },
    bare: {
      kind: 'artifact-update',
      taskId: 'run_1',
      contextId: 'ctx_1',
      artifact: { artifactId: 'a2', parts: [{ kind: 'data', data: { value: 'bare' } }] },
      lastChunk: true,
    },
    both: {
      kind: 'artifact-update',
      taskId: 'run_1',
      contextId: 'ctx_1',
      artifact: { artifactId: 'a1', parts: [{ kind: 'data', data: {} }] },
      append: true,
      lastChunk: false,
    },
  },
};
