// Node types own their lifecycle (NodeType.cancel, resolveInterrupt, describe): the engine records
// a type's view with its state (src/engine/nodes/view.ts), and the engine's cancel and resolution
// and the REST views reach a node type only through those hooks, never by its name.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { NodeResult, NodeType } from '../../src/engine/nodes/types.js';
import { described, viewOf } from '../../src/engine/nodes/view.js';
import { REPO_ROOT } from '../support/host.js';

const base: NodeType = {
  typeId: 'test.waiter',
  inline: false,
  configSchema: {},
  execute: async () => ({ kind: 'failed', error: { code: 'unused', message: '' } }),
};
const on = { agent: 'b', peerTaskId: 't', state: 'working' };
const waiter: NodeType = {
  ...base,
  describe: (state) => (state.linked ? { waitingOn: { ...on, state: String(state.seen) } } : undefined),
};

describe('described: a node type’s view, recorded with its state', () => {
  it('records what describe says about the state the execution hands back', () => {
    const r = described(waiter, { kind: 'sleep', wakeAt: 5, state: { linked: true, seen: 'working' } });
    assert.deepEqual(r, { kind: 'sleep', wakeAt: 5, state: { linked: true, seen: 'working', waitingOn: on } });
    const asked = described(waiter, {
      kind: 'interrupt',
      interrupt: { kind: 'clarification', data: {} },
      state: { linked: true, seen: 'input-required' },
    });
    assert.deepEqual(asked.kind === 'interrupt' && asked.state?.waitingOn, { ...on, state: 'input-required' });
  });

  it('replaces the view recorded before, and drops it when there is none now', () => {
    const stale = { linked: true, seen: 'working', waitingOn: { ...on, state: 'submitted' } };
    const r = described(waiter, { kind: 'sleep', wakeAt: 5, state: stale });
    assert.deepEqual(r.kind === 'sleep' && r.state?.waitingOn, on);
    const gone = described(waiter, { kind: 'sleep', wakeAt: 5, state: { linked: false, waitingOn: on } });
    assert.deepEqual(gone.kind === 'sleep' && gone.state, { linked: false });
  });

  it('leaves a result alone without a state, or for a type without describe', () => {
    const keep: NodeResult = { kind: 'sleep', wakeAt: 5 };
    assert.equal(described(waiter, keep), keep);
    const plain: NodeResult = { kind: 'sleep', wakeAt: 5, state: { waitingOn: on } };
    assert.equal(described(base, plain), plain);
  });

  it('is read back from a line’s node state by every view', () => {
    assert.deepEqual(viewOf({ linked: true, waitingOn: on }), { waitingOn: on });
    assert.deepEqual(viewOf({ linked: true }), {});
    assert.deepEqual(viewOf(undefined), {});
    assert.deepEqual(viewOf({ waitingOn: null }), {});
  });
});

describe('the engine names no node type', () => {
  it('cancel, resolution and the REST views reach a2a.invoke only through its hooks', () => {
    for (const file of ['src/engine/cancel.ts', 'src/engine/resolution.ts', 'src/http/views.ts']) {
      const text = readFileSync(join(REPO_ROOT, file), 'utf8');
      assert.doesNotMatch(text, /a2a[.-]?invoke|peerWaits|reply:/i, file);
    }
  });
});
