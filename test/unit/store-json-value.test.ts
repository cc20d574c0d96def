import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Note, normalized } from '../../src/store/json-value.js';
import type { RunRecord } from '../../src/store/model.js';
import { assertSameJson, PATCH_CASES } from '../support/json-patches.js';

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
type Json = Record<string, unknown>;
const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;

/**
 * Where `value` holds `prev`'s very object at the same place, `got` holds it too; every other
 * object of `got` is new: none is an object of `value`.
 */
function assertReuse(got: unknown, value: unknown, prev: unknown, path = '$', patchObjects = ownObjects(value)): void {
  if (!isObject(got)) return;
  if (isObject(value) && value === prev) {
    assert.equal(got, prev, `${path}: reused`);
    return;
  }
  assert.ok(!patchObjects.has(got), `${path}: a new object, not the patch's`);
  for (const key of Object.keys(got)) {
    const v = isObject(value) && !Array.isArray(value) ? (value as Json)[key] : undefined;
    const p = isObject(prev) && !Array.isArray(prev) && Object.hasOwn(prev, key) ? (prev as Json)[key] : undefined;
    assertReuse((got as Json)[key], v, p, `${path}.${key}`, patchObjects);
  }
}

/** Every object reachable from `value`. */
function ownObjects(value: unknown, seen = new Set<object>()): Set<object> {
  if (isObject(value) && !seen.has(value)) {
    seen.add(value);
    for (const key of Reflect.ownKeys(value)) ownObjects((value as Json)[key as string], seen);
  }
  return seen;
}

const FIELDS = ['state', 'cursor', 'error', 'metadata'] as const;

/**
 * A note that takes every new object or array (minChars 0): each is then copied from the value,
 * not by a round trip through its text (what a long one gets, src/store/recorded.ts). It checks
 * that it is told the value and a copy holding none of the value's objects.
 */
function everyEntry(): Note & { told: number } {
  return {
    minChars: 0,
    told: 0,
    keep(original, copy) {
      this.told++;
      const theirs = ownObjects(original);
      for (const o of ownObjects(copy)) assert.ok(!theirs.has(o), "the copy holds none of the value's objects");
    },
  };
}

/** The normalizing a test runs: as the store does for most fields, or with a note taking every entry. */
const WAYS: Array<{ way: string; note: () => (Note & { told: number }) | undefined }> = [
  { way: 'by round trips', note: () => undefined },
  { way: 'copying every new entry from the value (a long one, noted)', note: everyEntry },
];

describe('normalized: a JSON round trip reusing what the previous value holds', () => {
  for (const { way, note: makeNote } of WAYS)
    it(`gives what the round trip gives, for every patch of the table, reusing the parts shared, ${way}`, () => {
      const note = makeNote();
      let record = roundTrip({
        state: { outputs: { start: { ok: true, list: [1, 2] } }, vars: { a: 1 } },
        cursor: { nodeId: 'start', ordinals: {} },
        metadata: { contentTrust: 'untrusted' },
      }) as RunRecord;
      for (const { name, patch } of PATCH_CASES) {
        const p = patch(record) as Json;
        const next = { ...record } as Json;
        for (const field of FIELDS) {
          if (!(field in p)) continue;
          const value = p[field];
          if (value === undefined) {
            delete next[field];
            continue;
          }
          const prev = (record as unknown as Json)[field];
          const got = normalized(value, prev, note);
          assertSameJson(got, roundTrip(value), `${name}: ${field}`);
          assertReuse(got, value, prev, `${name}: ${field}`);
          next[field] = got;
        }
        record = next as unknown as RunRecord;
      }
      if (note) assert.ok(note.told > 10, `the note was told of ${note.told} entries`);
    });

  it('reuses a subtree the new value holds at the same place, and only there', () => {
    const prev = roundTrip({ outputs: { a: { x: [1] }, b: { y: 2 } }, vars: { v: 1 } }) as {
      outputs: Json;
      vars: Json;
    };
    const value = {
      outputs: { ...prev.outputs, c: prev.outputs.a, b: { ...(prev.outputs.b as Json) } },
      vars: prev.vars,
    };
    const got = normalized(value, prev) as typeof prev;
    assert.equal(got.outputs.a, prev.outputs.a);
    assert.equal(got.vars, prev.vars);
    assert.notEqual(got.outputs.c, prev.outputs.a, 'a shared object at a new place is copied');
    assert.notEqual(got.outputs.b, value.outputs.b);
    assert.notEqual(got.outputs, value.outputs);
    assertSameJson(got, roundTrip(value));
    assert.equal(normalized(prev, prev), prev, 'the same value is itself');
  });

  for (const { way, note: makeNote } of WAYS)
    it(`fails as JSON.stringify does: a cycle, a BigInt, a function or undefined at the top, ${way}`, () => {
      const prev = roundTrip({ a: { b: { a: { b: {} } } }, c: {} }) as Json;
      const cyclic: Json = { c: {} };
      cyclic.a = { b: cyclic };
      const selfish: Json = { c: prev.c };
      selfish.c = { loop: selfish };
      const cases: Array<[unknown, unknown]> = [
        [cyclic, prev],
        [selfish, prev],
        [{ a: { b: 1n } }, prev],
        [{ n: 1n }, undefined],
        [() => 1, prev],
        [Symbol('s'), prev],
        [{ toJSON: () => undefined }, prev],
      ];
      for (const [value, p] of cases) {
        let want: unknown;
        try {
          roundTrip(value);
        } catch (err) {
          want = (err as Error).constructor;
        }
        assert.ok(want, 'the round trip throws');
        assert.throws(() => normalized(value, p, makeNote()), want as new () => Error);
      }
    });

  for (const { way, note: makeNote } of WAYS)
    it(`gives what the round trip gives on random edits of random values (seeded), ${way}`, () => {
      const note = makeNote();
      const random = mulberry32(0x5eed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
      const leaves: Array<() => unknown> = [
        () => 'text',
        () => '',
        () => Math.floor(random() * 1000) - 500,
        () => random(),
        () => true,
        () => null,
        () => undefined,
        () => NaN,
        () => -Infinity,
        () => -0,
        () => new Date(1_900_000_000_000 + Math.floor(random() * 1e6)),
        () => () => 1,
        () => Symbol('s'),
        () => Object.assign([1, 'a'], { sequence: true }),
        () => new Map([['k', 1]]),
        () => ({ toJSON: (key: string) => `at ${key}` }),
        () => ({ toJSON: () => undefined }),
        () => Object.assign(Object.create(null), { n: 1 }),
      ];
      const keys = ['a', 'b', 'c', '0', '7', 'z', '__proto__', 'toString', 'constructor'];
      const tree = (depth: number): unknown => {
        if (depth === 0 || random() < 0.3) return pick(leaves)();
        if (random() < 0.25) return Array.from({ length: Math.floor(random() * 3) }, () => tree(depth - 1));
        const out: Json = {};
        for (let i = Math.floor(random() * 4); i > 0; i--) {
          Object.defineProperty(out, pick(keys), {
            value: tree(depth - 1),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        return out;
      };
      /** A value sharing most of `prev`: shallow copies down a random path, one entry changed. */
      const edit = (prev: unknown, depth: number): unknown => {
        if (!isObject(prev) || Array.isArray(prev) || depth === 0 || random() < 0.2)
          return random() < 0.5 ? prev : tree(2);
        const out: Json = {};
        for (const key of Object.keys(prev)) {
          const v = (prev as Json)[key];
          const r = random();
          const next = r < 0.6 ? v : r < 0.85 ? edit(v, depth - 1) : r < 0.93 ? tree(2) : undefined;
          if (r < 0.97)
            Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
        }
        if (random() < 0.3)
          Object.defineProperty(out, pick(keys), {
            value: tree(2),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        return out;
      };
      for (let i = 0; i < 3000; i++) {
        let prev = roundTrip({ root: tree(4) }) as Json;
        for (let step = 0; step < 3; step++) {
          const value = edit(prev, 5);
          let want: unknown;
          try {
            want = roundTrip(value);
          } catch {
            continue; // a top-level function or undefined: covered above
          }
          const got = normalized(value, prev, note);
          assertSameJson(got, want, `case ${i}, step ${step}`);
          assertReuse(got, value, prev, `case ${i}, step ${step}`);
          if (!isObject(got) || Array.isArray(got)) break;
          prev = got as Json;
        }
      }
      if (note) assert.ok(note.told > 100, `the note was told of ${note.told} entries`);
    });
});

/** A small seeded PRNG (mulberry32), so a failing case can be replayed. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
