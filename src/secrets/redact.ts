// Redaction of every credential the host holds, in every spelling it takes on the way out. A
// server or peer that echoes what it was sent does not echo it raw: a query parameter comes back
// percent-encoded (`~` `+` `/` `=` and spaces change), a JSON body escapes `/` as `\/` (PHP) or
// characters as \uXXXX, and Basic credentials or tokens travel in base64. The spellings of each
// value are computed once, when the set of values is known; redacting a text is then one pass
// of one regular expression of literals (V8 runs such alternations at memory speed).
//
//   const redactor = new Redactor(['s3cr~t+/=']);
//   redactor.text('https://x/?k=s3cr%7Et%2B%2F%3D')   // 'https://x/?k=[redacted]'
//   redactor.deep({ body: { echo: 's3cr~t+\\/=' } })  // { body: { echo: '[redacted]' } }, a copy
import { Buffer } from 'node:buffer';

export const REDACTED = '[redacted]';

/**
 * A base64 run shorter than this, cut out of the middle of a longer encoding, is not looked for:
 * a short run would match unrelated base64 text (a value's own full encoding always is).
 */
const MIN_BASE64_RUN = 8;

/** Run-time credentials a redactor keeps (each access token of each client, as it is renewed). */
const MAX_LEARNT = 32;

export class Redactor {
  // Private: the pattern spells out every value, so it must stay out of JSON.stringify and inspect.
  #pattern: RegExp | null = null;
  readonly #fixed: Set<string>;
  /** Values learnt at run time (access tokens fetched by client credentials), oldest first, bounded. */
  readonly #learnt = new Set<string>();

  constructor(values: Iterable<string>) {
    this.#fixed = new Set([...values].filter((v) => v !== ''));
    this.#compile();
  }

  /**
   * Redact `value` from now on too: a credential the host obtained while running (an OAuth2 access
   * token). At most MAX_LEARNT are kept, the oldest forgotten first (long expired by then).
   */
  learn(value: string): void {
    if (value === '' || this.#fixed.has(value) || this.#learnt.has(value)) return;
    this.#learnt.add(value);
    if (this.#learnt.size > MAX_LEARNT) this.#learnt.delete(this.#learnt.values().next().value as string);
    this.#compile();
  }

  #compile(): void {
    const spellings = new Set<string>();
    for (const value of [...this.#fixed, ...this.#learnt]) for (const s of spellingsOf(value)) spellings.add(s);
    // Longest first: a spelling that contains another (a value that contains another) goes whole.
    const alternatives = [...spellings].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.#pattern = alternatives.length === 0 ? null : new RegExp(alternatives.join('|'), 'g');
  }

  /** `text` with every spelling of every value replaced by `[redacted]`. Bound: pass it as a callback. */
  readonly text = (text: string): string => (this.#pattern === null ? text : text.replace(this.#pattern, REDACTED));

  /**
   * `value` (JSON data) with every string scrubbed, keys included. Copy on write: what holds no
   * value comes back as the same object, and an object met twice gives the same copy twice.
   */
  readonly deep = <T>(value: T): T => (this.#pattern === null ? value : (this.#walk(value, new Map()) as T));

  #walk(value: unknown, seen: Map<object, unknown>): unknown {
    if (typeof value === 'string') return this.text(value);
    if (typeof value !== 'object' || value === null) return value;
    if (seen.has(value)) return seen.get(value);
    let out: unknown = value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = this.#walk(value[i], seen);
        if (item === value[i]) continue;
        if (out === value) out = value.slice();
        (out as unknown[])[i] = item;
      }
    } else {
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record);
      // Entries are gathered only from the first change on: most data holds no credential.
      let entries: [string, unknown][] | undefined;
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        const key = this.text(k);
        const item = this.#walk(record[k], seen);
        if (entries === undefined && (key !== k || item !== record[k])) {
          entries = keys.slice(0, i).map((before) => [before, record[before]]);
        }
        entries?.push([key, item]);
      }
      if (entries !== undefined) out = Object.fromEntries(entries);
    }
    seen.set(value, out);
    return out;
  }
}

/**
 * The spellings of `value` to look for: the value and its base64 forms, each as is, in a URL and
 * inside a JSON string.
 */
function spellingsOf(value: string): Set<string> {
  const out = new Set<string>();
  for (const form of textForms(value)) {
    out.add(form);
    for (const s of urlSpellings(form)) out.add(s);
    for (const s of jsonSpellings(form)) out.add(s);
  }
  return out;
}

/**
 * The value, and its base64 and base64url encodings: whole (with and without padding) and, for a
 * value inside a longer encoded text (`user:token` in Basic credentials), the run of characters
 * its bytes alone decide at each of the three byte offsets modulo 3.
 */
function textForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const forms = [value];
  for (const alphabet of ['base64', 'base64url'] as const) {
    const whole = bytes.toString(alphabet);
    forms.push(whole, whole.replace(/=+$/, ''));
    for (let offset = 0; offset < 3; offset++) {
      const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString(alphabet);
      // Character i carries bits 6i..6i+5: keep those that lie inside the value's bits.
      const run = encoded.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
      if (run.length >= MIN_BASE64_RUN) forms.push(run);
    }
  }
  return forms;
}

// What each URL encoder leaves as is: encodeURIComponent; RFC 3986's unreserved characters (what
// a server that normalises a URL decodes back); application/x-www-form-urlencoded (URLSearchParams,
// which also writes a space as `+`).
const URI_COMPONENT = /^[A-Za-z0-9\-_.!~*'()]$/;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const FORM = /^[A-Za-z0-9*\-._]$/;

/** Percent-encoded as each encoder writes it, with upper- and lower-case hex digits. */
function urlSpellings(text: string): string[] {
  return [
    percentEncoded(text, URI_COMPONENT, false),
    percentEncoded(text, UNRESERVED, false),
    percentEncoded(text, FORM, true),
  ].flatMap((s) => [s, s.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())]);
}

function percentEncoded(text: string, keep: RegExp, spaceAsPlus: boolean): string {
  let out = '';
  for (const ch of text) {
    if (keep.test(ch)) out += ch;
    else if (ch === ' ' && spaceAsPlus) out += '+';
    else for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

// Characters JSON encoders write as \uXXXX besides control characters: non-ASCII (PHP, Python's
// ensure_ascii), those HTML-safe encoders escape (Go: < > &; Gson also = and '), or both.
const NON_ASCII = /[\u0080-\u{10ffff}]/gu;
const HTML = /[<>&='\u2028\u2029]/gu;
const NON_ASCII_OR_HTML = /[\u0080-\u{10ffff}<>&=']/gu;
const NOT_ALPHANUMERIC = /[^A-Za-z0-9]/gu;

/**
 * Inside a JSON string: JSON.stringify's escapes, with `/` as `/` or `\/`, and \uXXXX escapes
 * (either case of hex digit) for non-ASCII characters, HTML-sensitive ones or both, or for every
 * character but letters and digits.
 */
function jsonSpellings(text: string): string[] {
  const plain = JSON.stringify(text).slice(1, -1);
  const out: string[] = [];
  for (const base of [plain, plain.replaceAll('/', '\\/')]) {
    out.push(base);
    for (const upper of [false, true]) {
      for (const which of [NON_ASCII, HTML, NON_ASCII_OR_HTML]) out.push(unicodeEscaped(base, which, upper));
    }
  }
  for (const upper of [false, true]) out.push(unicodeEscaped(text, NOT_ALPHANUMERIC, upper));
  return out;
}

/** Every match of `which` as \uXXXX escapes (a surrogate pair beyond the BMP). */
function unicodeEscaped(text: string, which: RegExp, upper: boolean): string {
  return text.replace(which, (ch) => {
    let out = '';
    for (let i = 0; i < ch.length; i++) {
      const hex = ch.charCodeAt(i).toString(16).padStart(4, '0');
      out += `\\u${upper ? hex.toUpperCase() : hex}`;
    }
    return out;
  });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
