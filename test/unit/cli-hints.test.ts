// The commands the client suggests work as typed: the prefix is how it was run (npm run handoff --,
// npx handoff, handoff), and an approval's `next` line offers the gate's own actions.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Task } from '../../src/a2a/v0_3/types.js';
import { cliCommand } from '../../src/cli/client/invocation.js';
import { formatTask, Paint } from '../../src/cli/client/output.js';

describe('the client hints', () => {
  it('name the command the client was run as', () => {
    assert.equal(cliCommand({ npm_command: 'run', npm_lifecycle_event: 'handoff' }), 'npm run handoff --');
    assert.equal(cliCommand({ npm_command: 'run-script', npm_lifecycle_event: 'handoff' }), 'npm run handoff --');
    assert.equal(cliCommand({ npm_command: 'exec', npm_lifecycle_event: 'npx' }), 'npx handoff');
    // `npm test` spawning the client, or a `handoff` on the PATH.
    assert.equal(cliCommand({ npm_command: 'run', npm_lifecycle_event: 'test' }), 'handoff');
    assert.equal(cliCommand({}), 'handoff');
  });

  it("offer an approval gate's own actions", () => {
    const task = {
      kind: 'task',
      id: 'run_1',
      contextId: 'ctx_1',
      status: { state: 'input-required' },
      metadata: {
        openwop: {
          interrupt: { kind: 'approval', nodeId: 'review', actions: ['accept', 'reject', 'edit-accept'] },
          interrupts: [{ kind: 'approval', nodeId: 'review' }],
        },
      },
    } as unknown as Task;
    const text = formatTask(task, new Paint({ isTTY: false } as NodeJS.WriteStream), 'http://h');
    assert.match(text, /next\s+handoff approve http:\/\/h run_1 --action accept\|reject\|edit-accept$/m);
  });
});
