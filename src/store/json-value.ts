// A value as a JSON round trip gives it back (`JSON.parse(JSON.stringify(value))`), reusing the
// parts an earlier such value already holds. A transaction commits to one run several times, each
// time with a new `state` that shares most of its subtrees with the previous one (the engine copies
// the state shallowly and sets one node's output): a round trip of the whole value at every commit
// was the largest JavaScript item of the approval path's profile.
//
//   normalized(patch.state, before.state)   // before.state: itself a value as read back
//
// Where the answer is not plainly the same as JSON's, the subtree takes the round trip itself.

/** An entry JSON leaves out of an object (undefined, a function, a symbol, a toJSON giving undefined). */
const OMITTED = Symbol('omitted');

/**
 * `value` as `JSON.parse(JSON.stringify(value))` gives it, failing with the same kinds of error
 * (a cycle, a BigInt, a function or undefined at the top), where `prev` is a value as a round trip
 * gives it, which this reuses as is where `value` holds the very same object at the same place:
 * - a value identical (===) to `prev` is `prev`;
 * - a plain object (prototype Object.prototype or null, no toJSON) compared with an object `prev`
 *   is rebuilt key by key, in its key order, each entry compared with `prev`'s entry of that key;
 * - strings, booleans, null and finite numbers are themselves (-0 is 0); other numbers are null;
 *   undefined, functions and symbols are left out of an object, as JSON leaves them out;
 * - anything else (arrays, other objects, a BigInt, an object that was not in `prev`) takes the
 *   round trip on its own.
 * The parts not taken from `prev` are new objects: the result shares nothing with `value` but them.
 */
export function normalized(value: unknown, prev: unknown): unknown {
  if (value === prev && value !== undefined) return prev;
  if (isPlain(value) && isRecord(prev)) return rebuilt(value, prev);
  return JSON.parse(JSON.stringify(value));
}

/** One entry of a plain object, at `key`: as `normalized`, or OMITTED. */
function entry(value: unknown, prev: unknown, key: string): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // JSON writes -0 as 0, and NaN and ±Infinity as null.
      return Number.isFinite(value) ? value + 0 : null;
    case 'undefined':
    case 'function':
    case 'symbol':
      return OMITTED;
    case 'object':
      if (value === null) return null;
      if (value === prev) return prev;
      if (isPlain(value) && isRecord(prev)) return rebuilt(value, prev);
      return roundTrip(value, key);
    default:
      return roundTrip(value, key); // a BigInt: JSON's TypeError, unless BigInt.prototype.toJSON
  }
}

function rebuilt(value: Record<string, unknown>, prev: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key === '__proto__') {
      // An own `__proto__` (JSON.parse makes one): assigning it would set the prototype instead,
      // and `prev.__proto__`, unless `prev` has one of its own, is the inherited prototype.
      const read = entry(value[key], Object.hasOwn(prev, key) ? prev[key] : undefined, key);
      if (read !== OMITTED)
        Object.defineProperty(out, key, { value: read, writable: true, enumerable: true, configurable: true });
      continue;
    }
    const read = entry(value[key], prev[key], key);
    if (read !== OMITTED) out[key] = read;
  }
  return out;
}

/** The round trip of one entry at `key`, or OMITTED where JSON leaves it out. */
function roundTrip(value: unknown, key: string): unknown {
  if (typeof (value as { toJSON?: unknown }).toJSON !== 'function') return JSON.parse(JSON.stringify(value));
  // JSON calls toJSON with the entry's key, and leaves the entry out if it gives undefined: write
  // the entry under its key, as the whole value would.
  const holder: Record<string, unknown> = Object.create(null);
  holder[key] = value;
  const read = JSON.parse(JSON.stringify(holder)) as Record<string, unknown>;
  return Object.hasOwn(read, key) ? read[key] : OMITTED;
}

/** An object JSON writes as its own enumerable string keys, with nothing of its own to say about it. */
function isPlain(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

/** A JSON object (not an array), as `prev` holds them. */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
