// A part stored by reference is written slice by slice (src/store/recorded.ts, jsonSlices): the
// slices, joined, are exactly JSON.stringify's text of the value, whatever it holds, and none is
// made of much more than RECORDED_SLICE_CHARS characters of the value (escaping may write one as
// up to six).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunRecord } from '../../src/store/model.js';
import { jsonSlices, RECORDED_SLICE_CHARS } from '../../src/store/recorded.js';
import { PATCH_CASES } from '../support/json-patches.js';

const SLICE = RECORDED_SLICE_CHARS;

function assertSliced(value: unknown, what: string): void {
  const slices = [...jsonSlices(value)];
  assert.equal(slices.join(''), JSON.stringify(value), `${what}: JSON.stringify's text`);
  for (const s of slices) assert.ok(s.length <= 6 * SLICE + 64, `${what}: a slice of ${s.length} characters`);
}

/** Every JSON field value of the table of patches (everything JSON treats specially), in turn. */
function patchValues(): unknown[] {
  let record = {
    state: { outputs: {}, vars: {} },
    cursor: { nodeId: 'start', ordinals: {} },
    metadata: {},
  } as unknown as RunRecord;
  const values: unknown[] = [];
  for (const { patch } of PATCH_CASES) {
    const p = patch(record) as Record<string, unknown>;
    for (const field of ['state', 'cursor', 'error', 'metadata']) if (p[field] !== undefined) values.push(p[field]);
    record = { ...record, ...JSON.parse(JSON.stringify(p)) } as RunRecord;
  }
  return values;
}

describe('jsonSlices: a long JSON text, never made whole', () => {
  it("gives JSON.stringify's text for the table of patches, inside long containers and alone", () => {
    const values = patchValues();
    const long = 'x'.repeat(SLICE + 10);
    for (const [i, v] of values.entries()) {
      assertSliced(v, `value ${i}`);
      assertSliced({ long, v, after: [v, long] }, `value ${i} in a long object`);
      assertSliced([long, v, v], `value ${i} in a long array`);
    }
  });

  it('long strings: escapes, control characters, and a surrogate pair across a slice boundary', () => {
    const pair = '😀';
    assertSliced(`${'a'.repeat(SLICE - 1)}${pair}${'b'.repeat(SLICE)}`, 'a pair across the boundary');
    assertSliced(`${'"\\/\n\t\u0001\u001f'.repeat(SLICE / 4)}`, 'escapes everywhere');
    assertSliced(`${'é'.repeat(SLICE)}\ud800${'z'.repeat(SLICE)}\udfff`, 'lone surrogates');
    assertSliced({ data: 'q'.repeat(3 * SLICE) }, 'clean text: slices of the string itself');
  });

  it('long containers of short entries, nested, with entries JSON leaves out', () => {
    const items = Array.from({ length: 4000 }, (_, i) => ({
      i,
      s: `item ${i}`,
      u: undefined,
      f: () => i,
      at: new Date(1_900_000_000_000 + i),
      list: [i, undefined, NaN, -0, Symbol('s')],
      toJSON: i % 1000 === 0 ? (key: string) => `entry ${key}` : undefined,
    }));
    assertSliced(items, 'an array of objects');
    assertSliced({ a: { b: { items } }, c: items.slice(0, 10) }, 'nested');
    assertSliced(
      Object.fromEntries(items.map((item, i) => [String(i), item])),
      'an object of many keys (integer-like: JSON orders them)',
    );
  });
});
