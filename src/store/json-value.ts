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
export function normalized(value: unknown, prev: unknown, note?: Note): unknown {
  if (value === prev && value !== undefined) return prev;
  if (isPlain(value) && isRecord(prev)) return rebuilt(value, prev, note);
  return JSON.parse(JSON.stringify(value));
}

/**
 * Told of each entry (an object or array) whose JSON text is `minChars` long or longer (a lower
 * bound of it: `longerThan`), with the value and its copy. Such an entry is copied from the value
 * (`copied`), not by a round trip through its text: no text of it is made, and its strings are
 * the value's own, not copies of them.
 */
export interface Note {
  readonly minChars: number;
  keep(original: object, copy: object): void;
}

/** One entry of a plain object, at `key`: as `normalized`, or OMITTED. */
function entry(value: unknown, prev: unknown, key: string, note: Note | undefined): unknown {
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
      if (isPlain(value) && isRecord(prev)) return rebuilt(value, prev, note);
      return roundTrip(value, key, note);
    default:
      return roundTrip(value, key, undefined); // a BigInt: JSON's TypeError, unless BigInt.prototype.toJSON
  }
}

function rebuilt(value: Record<string, unknown>, prev: Record<string, unknown>, note: Note | undefined) {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key === '__proto__') {
      // An own `__proto__` (JSON.parse makes one): assigning it would set the prototype instead,
      // and `prev.__proto__`, unless `prev` has one of its own, is the inherited prototype.
      const read = entry(value[key], Object.hasOwn(prev, key) ? prev[key] : undefined, key, note);
      if (read !== OMITTED)
        Object.defineProperty(out, key, { value: read, writable: true, enumerable: true, configurable: true });
      continue;
    }
    const read = entry(value[key], prev[key], key, note);
    if (read !== OMITTED) out[key] = read;
  }
  return out;
}

/** The round trip of one entry at `key`, or OMITTED where JSON leaves it out. */
function roundTrip(value: unknown, key: string, note: Note | undefined): unknown {
  if (typeof (value as { toJSON?: unknown }).toJSON !== 'function') {
    if (note && typeof value === 'object' && value !== null && longerThan(value, note.minChars)) {
      const copy = copied(value, key, new Set()) as object;
      note.keep(value, copy);
      return copy;
    }
    return JSON.parse(JSON.stringify(value));
  }
  // JSON calls toJSON with the entry's key, and leaves the entry out if it gives undefined: write
  // the entry under its key, as the whole value would.
  const holder: Record<string, unknown> = Object.create(null);
  holder[key] = value;
  const read = JSON.parse(JSON.stringify(holder)) as Record<string, unknown>;
  return Object.hasOwn(read, key) ? read[key] : OMITTED;
}

/**
 * `value` as `JSON.parse(JSON.stringify(value))` gives it (or OMITTED, as an object's entry at
 * `key`), for a value JSON.stringify has just written: made from the value, not from its text.
 * Objects and arrays are new; strings are the value's own (a string cannot change), where parsing
 * the text would copy each again: for a long answer, a second copy of all of it. What is neither
 * a plain object, a plain array nor a primitive takes the round trip itself.
 */
function copied(value: unknown, key: string, within: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value + 0 : null;
    case 'undefined':
    case 'function':
    case 'symbol':
      return OMITTED;
    case 'object': {
      if (value === null) return null;
      if (!isPlainArray(value) && !isPlain(value)) return roundTrip(value, key, undefined);
      if (within.has(value)) throw new TypeError('Converting circular structure to JSON');
      within.add(value);
      const out = isPlainArray(value) ? copiedArray(value, within) : copiedObject(value, within);
      within.delete(value);
      return out;
    }
    default:
      return roundTrip(value, key, undefined);
  }
}

function copiedArray(value: unknown[], within: Set<object>): unknown[] {
  const out: unknown[] = new Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const item = copied(value[i], String(i), within);
    out[i] = item === OMITTED ? null : item;
  }
  return out;
}

function copiedObject(value: Record<string, unknown>, within: Set<object>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) {
    const item = copied(value[k], k, within);
    if (item === OMITTED) continue;
    // An own `__proto__` (JSON.parse makes one): assigning it would set the prototype instead.
    if (k === '__proto__') {
      Object.defineProperty(out, k, { value: item, writable: true, enumerable: true, configurable: true });
    } else out[k] = item;
  }
  return out;
}

/**
 * Whether `value`'s JSON text is at least `min` characters long, by a lower bound of its length
 * (strings counted as if nothing needed escaping), stopping as soon as it is reached: no text is
 * made, and a short value is walked once.
 */
export function longerThan(value: unknown, min: number): boolean {
  let left = min;
  const walk = (v: unknown): boolean => {
    if (typeof v === 'string') left -= v.length + 2;
    else if (typeof v !== 'object' || v === null) left -= 1;
    else if (Array.isArray(v)) {
      left -= 2;
      for (let i = 0; i < v.length && left > 0; i++) walk(v[i]);
    } else {
      left -= 2;
      for (const k in v) {
        if (left <= 0) break;
        if (Object.hasOwn(v, k)) {
          left -= k.length + 3;
          walk((v as Record<string, unknown>)[k]);
        }
      }
    }
    return left <= 0;
  };
  return walk(value);
}

/** An array JSON writes element by element (no toJSON, not a subclass). */
function isPlainArray(value: object): value is unknown[] {
  return (
    Array.isArray(value) &&
    Object.getPrototypeOf(value) === Array.prototype &&
    typeof (value as { toJSON?: unknown }).toJSON !== 'function'
  );
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
