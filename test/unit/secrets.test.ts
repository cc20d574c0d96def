// Secrets by reference: where values come from, which names are secrets, and redaction.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { loadSecrets, SecretStore } from '../../src/secrets/store.js';

const dir = mkdtempSync(join(tmpdir(), 'handoff-secrets-'));
let files = 0;
function secretsFile(content: string): string {
  const file = join(dir, `secrets-${++files}.json`);
  writeFileSync(file, content);
  return file;
}

describe('loadSecrets', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads HANDOFF_SECRET_<NAME> variables and the secrets file; a variable overrides the file', () => {
    const file = secretsFile(JSON.stringify({ API_TOKEN: 'from-file', OTHER_1: 'o' }));
    const secrets = loadSecrets({
      env: { HANDOFF_SECRET_API_TOKEN: 'from-env', HANDOFF_SECRET_OPENAI: 'sk-1', PATH: '/bin', HANDOFF_PORT: '1' },
      file,
    });
    assert.equal(secrets.get('API_TOKEN'), 'from-env');
    assert.equal(secrets.get('OPENAI'), 'sk-1');
    assert.equal(secrets.get('OTHER_1'), 'o');
    assert.equal(secrets.has('PATH'), false);
    assert.equal(secrets.has('PORT'), false);
  });

  it('does not take HANDOFF_SECRET_KEY (the host key) as a secret named KEY; the file may define KEY', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    assert.equal(loadSecrets({ env: { HANDOFF_SECRET_KEY: key } }).has('KEY'), false);
    const withFile = loadSecrets({ env: { HANDOFF_SECRET_KEY: key }, file: secretsFile('{"KEY":"file-key"}') });
    assert.equal(withFile.get('KEY'), 'file-key');
    assert.equal(withFile.redact(`key ${key}`), `key ${key}`, 'the host key is not a secret to redact either');
    // HANDOFF_SECRETS_FILE does not start with HANDOFF_SECRET_ (S, not _): it is no secret either.
    assert.equal(loadSecrets({ env: { HANDOFF_SECRETS_FILE: '/x' } }).has('S_FILE'), false);
  });

  it('refuses a bad name or an empty value, naming where it came from and never a value', () => {
    const refuses = (opts: Parameters<typeof loadSecrets>[0], pattern: RegExp) =>
      assert.throws(
        () => loadSecrets(opts),
        (err: Error) => pattern.test(err.message) && !err.message.includes('hunter2'),
        pattern.source,
      );
    refuses({ env: { HANDOFF_SECRET_api_token: 'hunter2' } }, /^HANDOFF_SECRET_api_token: secret names are A-Z/);
    refuses({ env: { 'HANDOFF_SECRET_A-B': 'hunter2' } }, /HANDOFF_SECRET_A-B: secret names/);
    refuses({ env: { HANDOFF_SECRET_: 'hunter2' } }, /HANDOFF_SECRET_: secret names/);
    refuses({ env: { HANDOFF_SECRET_EMPTY: '' } }, /HANDOFF_SECRET_EMPTY: a secret must be a non-empty string/);
    refuses({ env: {}, file: secretsFile('{"lower": "hunter2"}') }, /HANDOFF_SECRETS_FILE \(.*\): secret names/);
    refuses({ env: {}, file: secretsFile('{"N": 42}') }, /HANDOFF_SECRETS_FILE \(.*\), N: a secret must be/);
    refuses({ env: {}, file: secretsFile('["hunter2"]') }, /HANDOFF_SECRETS_FILE: .* must hold a JSON object/);
    refuses({ env: {}, file: secretsFile('{"A": "hunter2",') }, /HANDOFF_SECRETS_FILE: cannot read .*: not valid JSON/);
    refuses({ env: {}, file: join(dir, 'missing.json') }, /HANDOFF_SECRETS_FILE: cannot read .*: ENOENT/);
  });
});

describe('SecretStore', () => {
  const secrets = new SecretStore(
    new Map([
      ['TOKEN', 'tok-123'],
      ['LONG', 'tok-123-and-more'],
      ['ODD', 'p@ss/w"rd'],
    ]),
  );

  it('get throws naming an undefined secret', () => {
    assert.throws(() => secrets.get('MISSING'), /^Error: secret MISSING is not defined$/);
  });

  it('redacts every occurrence of every value, a longer one whole', () => {
    assert.equal(
      secrets.redact('a tok-123 b tok-123 c tok-123-and-more d'),
      'a [redacted] b [redacted] c [redacted] d',
    );
    assert.equal(secrets.redact('nothing here'), 'nothing here');
    const { redact } = secrets;
    assert.equal(redact('a tok-123'), 'a [redacted]', 'works detached, as a callback');
  });

  it('redacts a value as it appears in a URL or inside a JSON string', () => {
    assert.equal(secrets.redact(`https://x/?k=${encodeURIComponent('p@ss/w"rd')}`), 'https://x/?k=[redacted]');
    assert.equal(secrets.redact(JSON.stringify({ password: 'p@ss/w"rd' })), '{"password":"[redacted]"}');
    assert.equal(secrets.redact('raw p@ss/w"rd'), 'raw [redacted]');
  });

  it('treats regular-expression characters in values literally', () => {
    const odd = new SecretStore(new Map([['RE', 'a.c']]));
    assert.equal(odd.redact('abc a.c'), 'abc [redacted]');
  });

  it('shows no value when serialized or inspected', () => {
    assert.equal(JSON.stringify(secrets), '{}');
    assert.ok(!inspect(secrets, { depth: 5 }).includes('tok-123'));
  });

  it('an empty store redacts nothing', () => {
    assert.equal(new SecretStore(new Map()).redact('tok-123'), 'tok-123');
  });

  it('redacts credentials it holds besides its secrets, which it does not give out by name', () => {
    const store = new SecretStore(new Map([['TOKEN', 'tok-123']]), ['agent~token+/=']);
    assert.equal(store.redact('a tok-123 b agent~token+/= c'), 'a [redacted] b [redacted] c');
    assert.equal(store.has('agent~token+/='), false);
    assert.ok(!inspect(store, { depth: 5 }).includes('agent'));
  });
});

describe('redaction: every spelling of a value', () => {
  // `~ + / = " \` and spaces change under some encoding; é is not ASCII.
  const value = 'p~a+s/s= w"0\\rd é~+/=';
  const secrets = new SecretStore(new Map([['ODD', value]]));
  const bytes = Buffer.from(value);
  const lowerHex = (s: string) => s.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase());
  const json = JSON.stringify(value).slice(1, -1);
  const form = new URLSearchParams({ v: value }).toString().slice(2);
  const spellings: Record<string, string> = {
    raw: value,
    encodeURIComponent: encodeURIComponent(value),
    'encodeURIComponent, lower-case hex': lowerHex(encodeURIComponent(value)),
    'URLSearchParams (+ for a space)': form,
    'URLSearchParams, lower-case hex': lowerHex(form),
    'RFC 3986 (a normalising server decodes ~ back)': encodeURIComponent(value).replaceAll('%7E', '~'),
    'JSON.stringify': json,
    'JSON with / as \\/ (PHP)': json.replaceAll('/', '\\/'),
    'JSON with \\/ and \\u00e9 (PHP)': json.replaceAll('/', '\\/').replace('é', '\\u00e9'),
    'JSON with \\u00E9 (upper-case hex)': json.replace('é', '\\u00E9'),
    'JSON with = as \\u003d (Gson)': json.replaceAll('=', '\\u003d'),
    base64: bytes.toString('base64'),
    'base64 without padding': bytes.toString('base64').replace(/=+$/, ''),
    base64url: bytes.toString('base64url'),
  };
  for (const [name, spelling] of Object.entries(spellings)) {
    it(`${name}: ${spelling}`, () => {
      assert.equal(secrets.redact(`<${spelling}>`), '<[redacted]>');
    });
  }

  it('base64 of a longer text that holds the value (Basic credentials), at every byte offset', () => {
    for (const prefix of ['user:', 'user1:', 'user12:']) {
      const basic = Buffer.from(`${prefix}${value}`).toString('base64');
      const out = secrets.redact(`Authorization: Basic ${basic}`);
      assert.match(out, /^Authorization: Basic [A-Za-z0-9+/]{0,12}\[redacted\][A-Za-z0-9+/=]{0,4}$/, prefix);
      const left = out.replace(/^Authorization: Basic /, '').replace('[redacted]', '');
      assert.ok(left.length <= 12, `only the prefix's characters and the ends are left: ${left}`);
    }
  });

  it('a body excerpt that escapes / as \\/ is redacted before it is cut', () => {
    const body = JSON.stringify({ error: 'bad key', key: value }).replaceAll('/', '\\/');
    assert.equal(secrets.redact(body), '{"error":"bad key","key":"[redacted]"}');
  });

  it('deep: every string and key of JSON data; what holds no value comes back as the same object', () => {
    const shared = { echo: `Bearer ${value}` };
    const data = { a: shared, b: shared, clean: { n: 1, s: ['x'] }, [value]: true };
    const out = secrets.redactor.deep(data);
    assert.deepEqual(out, {
      a: { echo: 'Bearer [redacted]' },
      b: { echo: 'Bearer [redacted]' },
      clean: { n: 1, s: ['x'] },
      '[redacted]': true,
    });
    assert.equal(out.clean, data.clean, 'untouched parts are not copied');
    assert.equal(out.a, out.b, 'an object met twice gives one copy');
    assert.equal(data.a.echo, `Bearer ${value}`, 'the input is not changed');
    const clean = { x: [1, 'two', { three: null }] };
    assert.equal(secrets.redactor.deep(clean), clean);
  });

  it('leaves unrelated base64 and text alone', () => {
    const other = `${Buffer.from('some other value entirely').toString('base64')} p~a+s plain`;
    assert.equal(secrets.redact(other), other);
  });
});
