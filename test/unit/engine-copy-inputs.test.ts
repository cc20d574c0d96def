import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyInputs } from '../../src/engine/engine.js';

describe('copyInputs', () => {
  it('copies JSON inputs deeply, as structuredClone does', () => {
    const inputs = { prompt: 'hi', n: 1, nil: null, u: undefined, list: [1, { a: [2] }], obj: { b: { c: true } } };
    const copy = copyInputs(inputs);
    assert.deepStrictEqual(copy, structuredClone(inputs));
    assert.ok(Object.hasOwn(copy, 'u'));
    assert.notEqual(copy, inputs);
    assert.notEqual(copy.list, inputs.list);
    assert.notEqual((copy.list as unknown[])[1], inputs.list[1]);
    assert.notEqual(copy.obj, inputs.obj);
  });

  it('leaves what JSON cannot hold to structuredClone', () => {
    const shared = { s: 1 };
    const circular: Record<string, unknown> = { x: 1 };
    circular.self = circular;
    const holes: number[] = new Array(3);
    holes[0] = 1;
    holes[2] = 3;
    const extra = Object.assign([1], { name: 'x' });
    const protoKey = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const cases: Record<string, unknown>[] = [
      { when: new Date(0) },
      { map: new Map([['k', 1]]) },
      { a: shared, b: shared },
      circular,
      { holes },
      { extra },
      protoKey,
      { deep: JSON.parse(`${'['.repeat(100)}1${']'.repeat(100)}`) },
      Object.assign(Object.create(null), { k: 'v' }),
    ];
    for (const inputs of cases) {
      const copy = copyInputs(inputs);
      assert.deepStrictEqual(copy, structuredClone(inputs));
      assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    }
    const copy = copyInputs({ a: shared, b: shared });
    assert.equal(copy.a, copy.b); // one copy, referenced twice
    assert.equal((copyInputs(protoKey) as { polluted?: unknown }).polluted, undefined);
    assert.ok(Object.hasOwn(copyInputs(protoKey), '__proto__'));
    assert.throws(
      () => copyInputs({ f: () => 1 }),
      (err: Error) => err.name === 'DataCloneError',
    );
  });
});
