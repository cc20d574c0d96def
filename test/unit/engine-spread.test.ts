import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spread, withEntry } from '../../src/engine/spread.js';

/** Same keys, in the same order, same values, same prototype. */
function assertSame(got: object, want: object): void {
  assert.deepStrictEqual(Reflect.ownKeys(got), Reflect.ownKeys(want));
  assert.deepStrictEqual(got, want);
  assert.equal(Object.getPrototypeOf(got), Object.getPrototypeOf(want));
}

describe('spread and withEntry', () => {
  it('make exactly what the object spread makes', () => {
    const a = { x: 1, y: { z: 2 }, 2: 'two', u: undefined };
    const b = { y: 3, w: 4, 1: 'one' };
    assertSame(spread(a, b), { ...a, ...b });
    assertSame(spread(a, {}), { ...a });
    assertSame(withEntry<unknown>(a, 'y', 9), { ...a, y: 9 });
    assertSame(withEntry<unknown>(a, 'new', 9), { ...a, new: 9 });
    const out = spread(a, b);
    assert.notEqual(out, a);
    assert.equal(out.y, 3);
  });

  it('keep an own __proto__ key an own key, as the spread does', () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "k": 1}') as Record<string, unknown>;
    assertSame(spread(hostile, { j: 2 }), { ...hostile, j: 2 });
    assertSame(spread({ j: 2 }, hostile), { j: 2, ...hostile });
    assertSame(withEntry(hostile, 'j', 2), { ...hostile, j: 2 });
    assertSame(withEntry<unknown>({ j: 2 }, '__proto__', { polluted: true }), {
      j: 2,
      ['__proto__']: { polluted: true },
    });
    assert.equal(
      (withEntry<unknown>({}, '__proto__', { polluted: true }) as { polluted?: boolean }).polluted,
      undefined,
    );
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
  });
});
