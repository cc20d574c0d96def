// `handoff watch` names what a task's a2a.invoke node waits on (metadata.openwop.waitingOn).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatEventLine, Paint } from '../../src/cli/client/output.js';

// Not a TTY: no colours.
const plain = new Paint({ isTTY: false } as NodeJS.WriteStream);

describe('handoff watch: waitingOn', () => {
  it('a task waiting on a peer shows the agent, the peer task and its state', () => {
    const task = {
      kind: 'task',
      id: 'run_1',
      contextId: 'c',
      status: { state: 'working', timestamp: '2026-01-01T00:00:00.000Z' },
      metadata: {
        openwop: { runId: 'run_1', waitingOn: { agent: 'reviewer', peerTaskId: 'run_b', state: 'input-required' } },
      },
    };
    const line = formatEventLine(task, plain);
    assert.match(line, /waiting on agent reviewer, task run_b \(input-required\)/);
  });
});
