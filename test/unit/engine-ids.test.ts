import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { validate, version } from 'uuid';
import { newContextId, newInterruptId, newRunId } from '../../src/engine/ids.js';

describe('ids', () => {
  it('are prefixed UUIDv7s that carry their creation time', () => {
    const before = Date.now();
    const ids = [newRunId(), newInterruptId(), newContextId()];
    const after = Date.now();
    assert.deepEqual(
      ids.map((id) => id.slice(0, 4)),
      ['run_', 'int_', 'ctx_'],
    );
    for (const id of ids) {
      const uuid = id.slice(4);
      assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(validate(uuid));
      assert.equal(version(uuid), 7);
      const ms = Number.parseInt(uuid.replace(/-/g, '').slice(0, 12), 16);
      assert.ok(ms >= before && ms <= after + 1, `${ms} in [${before}, ${after}]`);
    }
  });

  it('sort in creation order, within one millisecond too, and never repeat', () => {
    // Several thousand ids span many pool refills and same-millisecond runs.
    const ids = Array.from({ length: 5000 }, () => newRunId());
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });
});
