// Large parts of a run's JSON, stored once. A call's answer is held by the run's snapshot (the
// node's output), by its node.completed (the replay cache), and often by artifact.created and
// run.completed too; and the snapshot is written again at every later commit of the run. So a part
// whose JSON text is RECORDED_MIN_CHARS long or longer is written once to `run_values`, keyed by
// the run and the sha256 of its text, and every place that holds it holds a reference instead.
//
// A column written this way (a run's `state` and `error`, a batch of events) holds an envelope:
//
//   {"$refs": [[["outputs","fetch"], "<sha256>"], …], "value": <the JSON, null at each path>}
//
// The store reads it back whole (RunValues, Events): nothing above the store sees a reference.
// Only the top level of such a column can be an envelope (a state and an error are objects the
// engine builds, a batch is an array), so nothing a caller or a peer sends can pose as one.
//
// Which parts: a new entry of a commit's state or error whose text is that long (a node's output,
// found while normalizing it: json-value.ts) as one part, and, in what holds no such entry, the
// smallest subtrees that long (a long string; an object or array of shorter entries). The same
// objects recur: a commit's events hold the very output its state holds (or the object the state's
// copy was made from), and later commits reuse the state's objects. Each is remembered with its
// part (`Mark`), so its text is made and hashed once, and a later commit writes only a reference.
// A part's text is never made whole on the way in: it is made, hashed and stored in slices.
import { createHash } from 'node:crypto';
import { longerThan, type Note } from './json-value.js';

/** A part of a JSON column this long (in characters of its JSON text) or longer is stored by reference. */
export const RECORDED_MIN_CHARS = 64 * 1024;

/** A part to store before the row that refers to it: its JSON text, made again slice by slice. */
export interface NewValue {
  runId: string;
  hash: string;
  slices: () => Iterable<string>;
}

type Path = Array<string | number>;

interface Envelope {
  $refs: Array<[Path, string]>;
  value: unknown;
}

/**
 * A part, by the objects that are it or the slot (holder and key) that holds it. `noted`: found
 * while normalizing, not stored yet. Once stored, its hash and run, and while the transaction that
 * stored it has not committed, that transaction (`pending`): only it may then refer to the part
 * without storing it.
 */
interface Mark {
  noted?: true;
  hash?: string;
  runId?: string;
  pending?: ValueWriter;
}

const byValue = new WeakMap<object, Mark>();
const bySlot = new WeakMap<object, Map<string, Mark>>();
/** Column values (a run's state, its error) known to hold parts: written without a first JSON.stringify. */
const holding = new WeakSet<object>();

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;

function slotMark(holder: object, key: string): Mark | undefined {
  return bySlot.get(holder)?.get(key);
}

function setSlotMark(holder: object, key: string, mark: Mark): void {
  let byKey = bySlot.get(holder);
  if (!byKey) {
    byKey = new Map();
    bySlot.set(holder, byKey);
  }
  byKey.set(key, mark);
}

/**
 * While normalizing a commit's state or error (json-value.ts): `copy`, the round trip of
 * `original`, has a long JSON text. Both are remembered as one part, which the commit's write
 * stores.
 */
export const noteLarge: Note = {
  minChars: RECORDED_MIN_CHARS,
  keep(original, copy) {
    const mark: Mark = { noted: true };
    byValue.set(original, mark);
    byValue.set(copy, mark);
    noted++;
  },
};

let noted = 0;
/** How many texts `noteLarge` kept so far: a commit compares it before and after normalizing. */
export const notedSoFar = (): number => noted;

/** What one transaction stores, and the marks it made, relied on by others once it commits. */
export class ValueWriter {
  /** This transaction wrote or referred to a part: its other JSON columns are split without a first stringify. */
  seen = false;
  // Made on first use: most transactions store no part.
  private sent?: Set<string>;
  private made?: Mark[];

  /** Remember `mark` as stored by this transaction; false when its part is already among its writes. */
  stored(mark: Mark, runId: string, hash: string): boolean {
    mark.hash = hash;
    mark.runId = runId;
    mark.pending = this;
    this.made ??= [];
    this.made.push(mark);
    this.sent ??= new Set();
    const key = `${runId}\u0000${hash}`;
    if (this.sent.has(key)) return false;
    this.sent.add(key);
    return true;
  }

  /** The transaction committed: what it stored may be referred to by every later one. */
  committed(): void {
    if (!this.made) return;
    for (const m of this.made) if (m.pending === this) delete m.pending;
    this.made = undefined;
  }
}

/** Whether a parsed column value is an envelope (see the header). */
export function isEnvelope(v: unknown): v is Envelope {
  return isObject(v) && !Array.isArray(v) && Object.hasOwn(v, '$refs');
}

/**
 * `next` (a commit's new state or error) holds parts when `prev` did (the commit reuses the
 * objects it did not change) or when normalizing it noted one (`noted`): its write then looks
 * for them without stringifying it whole first.
 */
export function carryHolding(prev: unknown, next: unknown, noted: boolean): void {
  if (isObject(next) && (noted || (isObject(prev) && holding.has(prev)))) holding.add(next);
}

/**
 * The JSON text to write for a column value that may hold large parts (`text`: its plain JSON
 * text, if already made). The parts not stored yet are pushed on `out`, to be written first.
 */
export function encodeRecorded(
  value: unknown,
  runId: string,
  writer: ValueWriter,
  out: NewValue[],
  text?: string,
): string {
  if (!writer.seen && !(isObject(value) && holding.has(value))) {
    const plain = text ?? JSON.stringify(value);
    if (plain.length < RECORDED_MIN_CHARS && !isEnvelope(value)) return plain;
  }
  const split = splitLarge(value, runId, writer, out);
  // A value that holds nothing large is written plainly, unless it would read back as an envelope.
  if (split.refs.length === 0 && !isEnvelope(value)) return split.text;
  if (isObject(value)) holding.add(value);
  writer.seen = true;
  return `{"$refs":${JSON.stringify(split.refs)},"value":${split.text}}`;
}

/** A part chosen to be stored by reference. */
interface Pick {
  holder: object;
  key: string;
  path: Path;
  mark?: Mark;
}

/** Returned by `measure` for a subtree that is, or holds, a part. */
const PART = -1;

/** A mark this writer may refer to for `runId`: stored and committed (or stored by this writer), or not stored yet. */
function usable(mark: Mark | undefined, runId: string, writer: ValueWriter): mark is Mark {
  if (mark === undefined) return false;
  if (mark.noted) return true;
  return mark.runId === runId && (mark.pending === undefined || mark.pending === writer);
}

/**
 * `value`'s JSON text with its parts taken out (see the header). Subtree sizes are estimated
 * (strings as if nothing needed escaping) without making any text: the only text made whole is
 * what is left; a new part's text is made slice by slice (`jsonSlices`), to hash and to store.
 */
function splitLarge(
  value: unknown,
  runId: string,
  writer: ValueWriter,
  out: NewValue[],
): { text: string; refs: Array<[Path, string]> } {
  const picks: Pick[] = [];
  const path: Path = [];
  const pick = (holder: object, key: string, mark?: Mark): number => {
    picks.push(mark ? { holder, key, path: [...path], mark } : { holder, key, path: [...path] });
    return PART;
  };
  const measure = (v: unknown, holder: object | undefined, key: string): number => {
    if (holder) {
      const slot = slotMark(holder, key);
      if (usable(slot, runId, writer)) return pick(holder, key, slot);
      const whole = isObject(v) ? byValue.get(v) : undefined;
      if (usable(whole, runId, writer)) return pick(holder, key, whole);
    }
    let size = 8;
    if (typeof v === 'string') size = v.length + 2;
    else if (Array.isArray(v)) {
      size = 2;
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        const s = measure(v[i], v, String(i));
        path.pop();
        size = s === PART || size === PART ? PART : size + s + 1;
      }
    } else if (isObject(v)) {
      size = 2;
      for (const k of Object.keys(v)) {
        path.push(k);
        const s = measure((v as Record<string, unknown>)[k], v, k);
        path.pop();
        size = s === PART || size === PART ? PART : size + s + k.length + 4;
      }
    }
    return holder && size >= RECORDED_MIN_CHARS ? pick(holder, key) : size;
  };
  measure(value, undefined, '');
  if (picks.length === 0) return { text: JSON.stringify(value), refs: [] };
  const taken = new Map<object, Set<string>>();
  const refs: Array<[Path, string]> = [];
  for (const p of picks) {
    let keys = taken.get(p.holder);
    if (!keys) {
      keys = new Set();
      taken.set(p.holder, keys);
    }
    keys.add(p.key);
    const hash = p.mark?.noted ? undefined : p.mark?.hash;
    refs.push([p.path, hash ?? storeNew(p, runId, writer, out)]);
  }
  const text = JSON.stringify(value, function (this: object, key: string, v: unknown) {
    return taken.get(this)?.has(key) ? null : v;
  });
  return { text, refs };
}

/** Store a part not stored yet: hashed by its text's slices, queued once per transaction. */
function storeNew(p: Pick, runId: string, writer: ValueWriter, out: NewValue[]): string {
  const mark: Mark = p.mark ?? {};
  delete mark.noted;
  if (!p.mark) setSlotMark(p.holder, p.key, mark);
  const value = (p.holder as Record<string, unknown>)[p.key];
  const slices = () => jsonSlices(value);
  const hash = createHash('sha256');
  for (const slice of slices()) hash.update(slice);
  const hex = hash.digest('hex');
  if (writer.stored(mark, runId, hex)) out.push({ runId, hash: hex, slices });
  return hex;
}

/**
 * Longest slice of a part's text: a statement carries one slice. A driver copies what it binds two
 * or three times over (UTF-8, SQLite's own copy, the row it builds), and a text made whole is one
 * more copy of the part: by slices, those copies are of one slice.
 */
export const RECORDED_SLICE_CHARS = 60_000;

/**
 * `value`'s JSON text, exactly as JSON.stringify writes it, in slices of about
 * RECORDED_SLICE_CHARS: never made whole. Containers whose text is longer than a slice, and long
 * strings, are written piece by piece; everything else by JSON.stringify. A long piece is a slice
 * of its own: a piece of a string that needs no escaping is a slice of that very string, no copy.
 */
export function* jsonSlices(value: unknown): Generator<string> {
  let slice = '';
  const all = piecewise(value) ? pieces(value) : [entryText(value, '') ?? 'null'];
  for (const piece of all) {
    if (piece.length >= RECORDED_SLICE_CHARS / 2) {
      if (slice !== '') yield slice;
      slice = '';
      yield piece;
      continue;
    }
    slice += piece;
    if (slice.length >= RECORDED_SLICE_CHARS) {
      yield slice;
      slice = '';
    }
  }
  if (slice !== '') yield slice;
}

/** A character JSON.stringify writes otherwise than as itself (control, quote, backslash, a surrogate). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for.
const ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** Whether `v` is written piece by piece: a long string, or a plain container with a long text. */
function piecewise(v: unknown): v is string | object {
  if (typeof v === 'string') return v.length > RECORDED_SLICE_CHARS;
  return isObject(v) && isJsonContainer(v) && longerThan(v, RECORDED_SLICE_CHARS);
}

/** The text of a piecewise value (see `piecewise`), piece by piece. */
function* pieces(v: string | object): Generator<string> {
  if (typeof v === 'string') {
    yield '"';
    // Each piece escaped on its own: JSON escapes character by character, and no piece ends
    // between the two halves of a surrogate pair.
    for (const piece of stringSlices(v)) yield ESCAPED.test(piece) ? JSON.stringify(piece).slice(1, -1) : piece;
    yield '"';
  } else if (Array.isArray(v)) {
    yield '[';
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      if (i > 0) yield ',';
      if (piecewise(item)) yield* pieces(item);
      else yield entryText(item, String(i)) ?? 'null';
    }
    yield ']';
  } else {
    yield '{';
    let first = true;
    for (const k of Object.keys(v)) {
      const item: unknown = (v as Record<string, unknown>)[k];
      const whole = piecewise(item);
      const text = whole ? undefined : entryText(item, k);
      if (!whole && text === undefined) continue;
      yield `${first ? '' : ','}${JSON.stringify(k)}:`;
      first = false;
      if (whole) yield* pieces(item);
      else yield text as string;
    }
    yield '}';
  }
}

/**
 * The JSON text of `item` as the entry at `key` of an object or array, as JSON.stringify writes
 * it there, or undefined where it leaves the entry out (an array writes null for it). A toJSON is
 * called with the entry's key, as JSON.stringify calls it.
 */
function entryText(item: unknown, key: string): string | undefined {
  if (!isObject(item) || typeof (item as { toJSON?: unknown }).toJSON !== 'function') return JSON.stringify(item);
  const text = JSON.stringify({ [key]: item });
  return text === '{}' ? undefined : text.slice(JSON.stringify(key).length + 2, -1);
}

/** A plain object or array: JSON writes its entries and nothing else of it. */
function isJsonContainer(v: object): boolean {
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
  const proto = Object.getPrototypeOf(v);
  return Array.isArray(v) ? proto === Array.prototype : proto === Object.prototype || proto === null;
}

/** `text` in slices of RECORDED_SLICE_CHARS at most, none ending inside a surrogate pair. */
function* stringSlices(text: string): Generator<string> {
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + RECORDED_SLICE_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield text.slice(at, end);
    at = end;
  }
}

/**
 * The value an envelope stands for, its parts read with `fetch`: each distinct part is parsed once
 * and shared by every place that holds it (records the store hands out are not changed in place),
 * and remembered as stored. `wanted` limits the parts read to the paths it accepts (the others
 * stay null).
 */
export async function readRefs(
  envelope: Envelope,
  runId: string,
  fetch: (hash: string) => Promise<string | undefined>,
  wanted?: (path: Path) => boolean,
): Promise<unknown> {
  const { value } = envelope;
  const parts = new Map<string, unknown>();
  for (const [path, hash] of envelope.$refs) {
    if (wanted && !wanted(path)) continue;
    let part = parts.get(hash);
    if (part === undefined) {
      const text = await fetch(hash);
      if (text === undefined) throw new Error(`run ${runId}: the recorded value ${hash} is missing`);
      part = JSON.parse(text);
      parts.set(hash, part);
      if (isObject(part)) byValue.set(part, { hash, runId });
    }
    let holder = value as Record<string | number, unknown>;
    for (let i = 0; i < path.length - 1; i++) holder = holder[path[i] as string | number] as typeof holder;
    const key = path[path.length - 1] as string | number;
    holder[key] = part;
    if (!isObject(part)) setSlotMark(holder, String(key), { hash, runId });
  }
  if (isObject(value)) holding.add(value);
  return value;
}
