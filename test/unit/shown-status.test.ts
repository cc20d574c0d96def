// The status a run's snapshot shows (src/engine/children.ts shownStatus): a parent whose one line
// waits for its children shows the wait of a child at a gate; nothing else is mirrored.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { shownStatus } from '../../src/engine/children.js';
import type { ChildSummary } from '../../src/store/repos/runs.js';
import type { RunCursor, RunStatus } from '../../src/store/model.js';

const child = (status: RunStatus): ChildSummary => ({
  runId: `run_${status}`,
  nodeId: 'spawn',
  workflowId: 'c',
  status,
});
const run = (status: RunStatus, cursor: Partial<RunCursor> = {}) => ({
  status,
  cursor: { nodeId: 'spawn', ordinals: {}, ...cursor } as RunCursor,
});

describe('shownStatus', () => {
  it('a running parent waiting for children shows the most pressing wait among them', () => {
    const r = run('running');
    assert.equal(shownStatus(r, 'waiting-child', [child('running'), child('waiting-approval')]), 'waiting-approval');
    assert.equal(shownStatus(r, 'waiting-child', [child('waiting-external'), child('waiting-input')]), 'waiting-input');
    assert.equal(shownStatus(r, 'waiting-child', [child('running')]), 'running');
    assert.equal(shownStatus(r, 'waiting-child', []), 'running');
  });

  it('nothing is mirrored unless the run itself waits only for its children', () => {
    const kids = [child('waiting-approval')];
    // Another kind of wait or work (sleeping, retrying, running a node).
    for (const activity of ['running', 'sleeping', 'retrying', undefined] as const) {
      assert.equal(shownStatus(run('running'), activity, kids), 'running', String(activity));
    }
    // A forked run: other lines may be at work; its own status stands.
    const forked = run('running', { branches: [{ id: 'f#0/a', nodeId: 'spawn', fork: 'f#0' } as never] });
    assert.equal(shownStatus(forked, 'waiting-child', kids), 'running');
    // A run that is itself waiting, or has ended, shows its own status.
    assert.equal(shownStatus(run('waiting-input'), 'waiting-child', kids), 'waiting-input');
    assert.equal(shownStatus(run('cancelled'), undefined, kids), 'cancelled');
  });
});
