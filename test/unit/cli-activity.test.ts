// `handoff get` and `handoff watch` print why a task is not moving (metadata.openwop.activity).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatEventLine, formatTask, Paint } from '../../src/cli/client/output.js';
import type { Task } from '../../src/a2a/v0_3/types.js';

// Not a TTY: no colours.
const plain = new Paint({ isTTY: false } as NodeJS.WriteStream);
const summary = 'Retrying the call to agent reviewer (attempt 4, next at 12:04:10 UTC): connection refused';

const task = (message?: string): Task => ({
  kind: 'task',
  id: 'run_1',
  contextId: 'c',
  status: {
    state: 'working',
    timestamp: '2026-12-07T12:03:00.000Z',
    ...(message
      ? {
          message: {
            kind: 'message',
            messageId: 'm',
            role: 'agent',
            parts: [{ kind: 'text', text: message }],
          },
        }
      : {}),
  },
  metadata: {
    openwop: {
      runId: 'run_1',
      activity: { kind: 'retrying', summary, since: '2026-12-07T12:01:00.000Z', attempt: 4 },
    },
  },
});

describe('handoff get / watch: activity', () => {
  it('get prints the activity once, with since when', () => {
    const out = formatTask(task(summary), plain);
    assert.match(
      out,
      /activity +Retrying the call to agent reviewer \(attempt 4, next at 12:04:10 UTC\): connection refused \(since 2026-12-07T12:01:00.000Z\)/,
    );
    assert.equal(out.split(summary).length - 1, 1, out);
  });

  it('watch prints it under a Task whose status message says something else', () => {
    const line = formatEventLine(task('Draft (1 of 3)'), plain);
    assert.match(line, /Draft \(1 of 3\)\n +activity Retrying the call to agent reviewer/);
    assert.equal(formatEventLine(task(summary), plain).split(summary).length - 1, 1);
  });
});
