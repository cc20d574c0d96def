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
});
