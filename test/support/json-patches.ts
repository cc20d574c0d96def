// Run patches whose JSON fields hold everything JSON treats specially, for the tests of a commit's
// normalizing (src/store/json-value.ts, StoreTx.commitRun): each builds its patch from the record
// it is applied to, sharing that record's subtrees as the engine does (a shallow copy of the state
// with one node's output set), and every one of them is a case where reusing a part wrongly, or
// rebuilding it differently from JSON, would show.
import assert from 'node:assert/strict';
import type { RunRecord } from '../../src/store/model.js';
import type { RunPatch } from '../../src/store/store.js';

/** A class instance: JSON writes its own enumerable fields, not its getter or methods. */
class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
  get length(): number {
    return Math.hypot(this.x, this.y);
  }
  scaled(k: number): Point {
    return new Point(this.x * k, this.y * k);
  }
}

/** A JSONata result sequence: an array with extra properties, which JSON leaves out. */
function sequence(...items: unknown[]): unknown[] {
  return Object.assign(items, { sequence: true, keepSingleton: true });
}

const T0 = Date.parse('2030-01-01T00:00:00.000Z');

/** `{ ...o, [key]: value }`, and `o` without `key` when value is REMOVE. */
const REMOVE = Symbol('remove');
function set(o: unknown, key: string, value: unknown): Record<string, unknown> {
  const out = { ...(o as Record<string, unknown>) };
  if (value === REMOVE) delete out[key];
  else Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
  return out;
}
type Json = Record<string, unknown>;
const outputsOf = (r: RunRecord): Json => r.state.outputs;
/** A state patch with `outputs[key]` set (or removed), vars shared: what the engine commits. */
const output = (r: RunRecord, key: string, value: unknown): RunPatch => ({
  state: { outputs: set(outputsOf(r), key, value), vars: r.state.vars },
});

export interface PatchCase {
  name: string;
  patch(r: RunRecord): RunPatch;
}

/** Applied in order, each to the record the previous one left (they build on each other). */
export const PATCH_CASES: PatchCase[] = [
  {
    name: 'a new output: nested objects, arrays, undefined values and holes',
    patch: (r) =>
      output(r, 'draft', {
        text: 'ünïcødé ✓ "quoted"',
        u: undefined,
        nested: { deep: { list: [1, undefined, 'x', () => 1, Symbol('s'), null], empty: {} }, f: () => 1 },
        // biome-ignore lint/suspicious/noSparseArray: a hole, written as null
        sparse: [1, , 3],
        n: 0.1 + 0.2,
        big: 1e21,
      }),
  },
  {
    name: 'Dates, at an object key, in an array, and replacing an output',
    patch: (r) => ({
      state: {
        outputs: set(set(outputsOf(r), 'when', { at: new Date(T0), list: [new Date(T0 + 1)] }), 'draft', new Date(T0)),
        vars: r.state.vars,
      },
    }),
  },
  {
    name: 'objects with toJSON (called with their key), one giving undefined, one on a plain-looking object',
    patch: (r) =>
      output(r, 'custom', {
        keyed: { toJSON: (key: string) => ({ key }) },
        gone: { toJSON: () => undefined },
        nested: { inner: { toJSON: (key: string) => `inner at ${key}` } },
        list: [{ toJSON: (key: string) => `index ${key}` }],
      }),
  },
  {
    name: 'NaN, ±Infinity and -0, in objects, in arrays and as vars',
    patch: (r) => ({
      state: {
        outputs: set(outputsOf(r), 'numbers', {
          nan: NaN,
          inf: Infinity,
          ninf: -Infinity,
          nzero: -0,
          list: [NaN, -0, Infinity],
        }),
        vars: { ...r.state.vars, nan: NaN, nzero: -0, max: Number.MAX_VALUE, tiny: 5e-324 },
      },
    }),
  },
  {
    name: 'JSONata-like sequences (arrays with extra properties), and a sequence replacing an object',
    patch: (r) => ({
      state: {
        outputs: set(
          set(outputsOf(r), 'seq', sequence(1, sequence('a', 'b'), { k: sequence(true) })),
          'numbers',
          sequence(1),
        ),
        vars: r.state.vars,
      },
    }),
  },
  {
    name: 'class instances, a Map, a Set, boxed primitives, a RegExp, an Error, a null-prototype object',
    patch: (r) =>
      output(r, 'instances', {
        point: new Point(3, 4),
        scaled: new Point(1, 2).scaled(2),
        map: new Map([['a', 1]]),
        set: new Set([1]),
        boxed: [new String('s'), new Number(3), new Boolean(false), Object(Symbol('boxed'))],
        re: /x/g,
        error: new Error('boom'),
        bare: Object.assign(Object.create(null), { b: 1, a: { c: undefined, d: 2 } }),
      }),
  },
  {
    name: 'a class instance replacing a plain object, a plain object replacing an array',
    patch: (r) => ({
      state: {
        outputs: set(set(outputsOf(r), 'when', new Point(1, 1)), 'seq', { was: 'an array' }),
        vars: r.state.vars,
      },
    }),
  },
  {
    name: 'shared identical subtrees: kept in place, copied to a new key, twice in one object',
    patch: (r) => {
      const custom = outputsOf(r).custom;
      return {
        state: {
          outputs: set(set(outputsOf(r), 'copy', custom), 'pair', { a: custom, b: custom, c: outputsOf(r).instances }),
          vars: r.state.vars,
        },
      };
    },
  },
  {
    name: 'a deep change in a shallow-copied output, the rest shared',
    patch: (r) => {
      const instances = outputsOf(r).instances as Json;
      const bare = set(instances.bare, 'a', { ...(instances.bare as { a: Json }).a, d: 3, e: new Date(T0) });
      return output(r, 'instances', set(instances, 'bare', bare));
    },
  },
  {
    name: 'integer-like keys (JSON orders them first), an own __proto__ key, getters, symbol keys and values',
    patch: (r) =>
      output(r, 'keys', {
        b: 1,
        2: 'two',
        a: 2,
        1: 'one',
        ...JSON.parse('{"__proto__": {"polluted": true}}'),
        get computed() {
          return { at: new Date(T0) };
        },
        [Symbol('hidden')]: 1,
        visible: Symbol('dropped'),
      }),
  },
  {
    name: 'an output with an own __proto__, shallow-copied, its __proto__ entry shared',
    patch: (r) => output(r, 'keys', { ...(outputsOf(r).keys as Json), added: true }),
  },
  {
    name: 'a key removed, a value replaced by a primitive, vars replaced whole',
    patch: (r) => ({
      state: {
        outputs: set(set(set(outputsOf(r), 'copy', REMOVE), 'draft', 'now a string'), 'instances', 42),
        vars: { only: 'this' },
      },
    }),
  },
  {
    name: 'the cursor, error and metadata, with undefined and exotic values',
    patch: (r) => ({
      cursor: {
        nodeId: 'next',
        ordinals: { ...r.cursor.ordinals, next: 1 },
        wakeAt: undefined,
        nodeState: { at: new Date(T0), n: NaN },
      },
      error: { code: 'x', message: 'failed', details: { cause: new Error('inner'), when: new Date(T0), u: undefined } },
      metadata: { ...r.metadata, point: new Point(0, 1), u: undefined },
    }),
  },
  {
    name: 'the same state object again, metadata a string, error cleared',
    patch: (r) => ({ state: r.state, metadata: 'just text' as unknown as Json, error: undefined }),
  },
  {
    name: 'metadata an object again, the state a shallow copy with nothing new',
    patch: (r) => ({ state: { ...r.state }, metadata: { back: [1, { two: 2 }] } }),
  },
];

/**
 * `got` is `want`: deeply equal (prototypes, -0, NaN), with the same keys in the same order at
 * every level, and the same JSON text.
 */
export function assertSameJson(got: unknown, want: unknown, what = 'value'): void {
  assert.deepStrictEqual(got, want, what);
  assert.deepStrictEqual(keyOrder(got), keyOrder(want), `${what}: key order`);
  assert.equal(JSON.stringify(got), JSON.stringify(want), `${what}: JSON text`);
}

/**
 * Two records are the same run: deeply equal, and each JSON field the same JSON (`assertSameJson`).
 * The order of the record's own fields is not compared: a commit's record keeps `before`'s and adds
 * the fields it sets after them, where a record read back has the columns' order.
 */
export function assertSameRecord(got: RunRecord, want: RunRecord, what = 'record'): void {
  assert.deepStrictEqual(got, want, what);
  for (const field of ['inputs', 'state', 'cursor', 'error', 'tags', 'metadata'] as const)
    assertSameJson(got[field], want[field], `${what}: ${field}`);
}

/** Every object's own keys in order, nested as the value is. */
function keyOrder(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return typeof value;
  if (Array.isArray(value)) return value.map(keyOrder);
  return Reflect.ownKeys(value).map((k) => [String(k), keyOrder((value as Json)[k as string])]);
}
