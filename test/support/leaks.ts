// Looking for a credential in what a host shows, in every spelling it could take there. The
// spellings are made here with the platform's own encoders (not with src/secrets/redact.ts, which
// is what is being tested), and the haystack holds both the JSON texts and every string decoded
// from them: a `\/` inside a string is `\\/` in its JSON text.
//
//   const seen = haystackOf(runBody, eventsBody, logs);
//   assertNoLeak(seen, SECRET, 'the run of the echoing server');
import assert from 'node:assert/strict';

/**
 * `value` as is; percent-encoded by encodeURIComponent and by URLSearchParams (`+` for a space),
 * with upper- and lower-case hex; inside a JSON string, with `/` as is or `\/`; and base64 and
 * base64url, whole and, for the value inside a longer encoded text (`user:token`), the middle run
 * of characters its bytes alone decide at each of the three byte offsets.
 */
export function spellingsOf(value: string): string[] {
  const lowerHex = (s: string) => s.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase());
  const form = new URLSearchParams([['v', value]]).toString().slice(2);
  const json = JSON.stringify(value).slice(1, -1);
  const out = [
    value,
    encodeURIComponent(value),
    lowerHex(encodeURIComponent(value)),
    form,
    lowerHex(form),
    json,
    json.replaceAll('/', '\\/'),
  ];
  const bytes = Buffer.from(value, 'utf8');
  for (const alphabet of ['base64', 'base64url'] as const) {
    out.push(bytes.toString(alphabet));
    for (let offset = 0; offset < 3; offset++) {
      out.push(
        Buffer.concat([Buffer.alloc(offset, 0x3a), bytes])
          .toString(alphabet)
          .slice(4, -4),
      );
    }
  }
  return [...new Set(out)];
}

/** One text to search: each value's JSON text (strings as is), then every string in it, keys too. */
export function haystackOf(...values: unknown[]): string {
  const strings: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') strings.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        strings.push(k);
        walk(item);
      }
    }
  };
  for (const v of values) {
    strings.push(typeof v === 'string' ? v : JSON.stringify(v));
    walk(v);
  }
  return strings.join('\n');
}

/** No spelling of `value` anywhere in `haystack`; the failure shows where one was found. */
export function assertNoLeak(haystack: string, value: string, where: string): void {
  for (const spelling of spellingsOf(value)) {
    const at = haystack.indexOf(spelling);
    if (at >= 0) {
      const around = haystack.slice(Math.max(0, at - 200), at + spelling.length + 100);
      assert.fail(`${where}: the value shows as ${JSON.stringify(spelling)} in …${around}…`);
    }
  }
}
