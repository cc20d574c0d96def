// Trust between organizations, the parts without a network: card signing (JCS + JWS, rotation, the
// newest key signs) and its verification against pinned keys, the registry file HANDOFF_AGENTS_FILE,
// the OIDC settings, and the redactor learning credentials obtained at run time.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CardSigner, cardPayload } from '../../src/jws/card-signing.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { verifyCard } from '../../src/peers/card-trust.js';
import { Redactor } from '../../src/secrets/redact.js';

const dir = mkdtempSync(join(tmpdir(), 'handoff-trust-'));
const pem = (type: 'ec' | 'ed25519' | 'rsa') => {
  const opts = type === 'ec' ? { namedCurve: 'P-256' } : type === 'rsa' ? { modulusLength: 2048 } : {};
  return generateKeyPairSync(type as 'ec', opts as { namedCurve: string })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
};
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const card = { name: 'B', description: 'reviews', skills: [{ id: 'approval', name: 'Approval' }], version: '1' };

describe('signed cards', () => {
  it('the newest key of the file signs; both are published; pinned keys verify, others do not', async () => {
    const signer = await CardSigner.fromFile(file('two.pem', pem('ec') + pem('ed25519')));
    const jwks = signer.jwks();
    assert.equal(jwks.keys.length, 2);
    const [old, newest] = jwks.keys;
    assert.equal(newest?.crv, 'Ed25519');
    const signed = await signer.sign(card, 'https://b.test/.well-known/jwks.json');
    assert.equal(signed.signatures.length, 1);
    const header = JSON.parse(Buffer.from(signed.signatures[0]?.protected ?? '', 'base64url').toString());
    assert.deepEqual(header, {
      alg: 'EdDSA',
      kid: newest?.kid,
      typ: 'JOSE',
      jku: 'https://b.test/.well-known/jwks.json',
    });
    assert.deepEqual(await verifyCard(signed, jwks), { ok: true, kid: newest?.kid });
    assert.equal((await verifyCard(signed, { keys: [old as never] })).ok, false, 'only the old key pinned');
    // The signature covers the card, not its spelling: the same card with members reordered verifies.
    const { skills, version, description, name } = card;
    const reordered = { signatures: signed.signatures, skills, version, description, name };
    assert.equal((await verifyCard(reordered, jwks)).ok, true);
    assert.deepEqual(cardPayload(reordered), cardPayload(card));
    for (const tampered of [
      { ...signed, description: 'pays the impostor' },
      { ...signed, signatures: [] },
      { ...card },
    ]) {
      assert.equal((await verifyCard(tampered, jwks)).ok, false);
    }
  });

  it('an ES256 card keeps its signature from request to request (its bytes, and so its ETag, stay the same)', async () => {
    const signer = await CardSigner.fromFile(file('ec.pem', pem('ec')));
    const first = await signer.sign(card, 'https://b.test/.well-known/jwks.json');
    const again = await signer.sign({ ...card }, 'https://b.test/.well-known/jwks.json');
    assert.equal(JSON.stringify(again), JSON.stringify(first));
    const other = await signer.sign({ ...card, version: '2' }, 'https://b.test/.well-known/jwks.json');
    assert.notEqual(other.signatures[0]?.signature, first.signatures[0]?.signature);
    assert.equal((await verifyCard(other, signer.jwks())).ok, true);
  });

  it('refuses a key that is not ES256 or Ed25519, and a file without a key', async () => {
    await assert.rejects(CardSigner.fromFile(file('rsa.pem', pem('rsa'))), /ES256 \(P-256\) or Ed25519/);
    await assert.rejects(CardSigner.fromFile(file('none.pem', 'nothing here')), /no PEM private key/);
  });
});

describe('HANDOFF_AGENTS_FILE', () => {
  const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' };
  const oauth = {
    type: 'oauth2-client-credentials',
    tokenUrl: 'https://idp.test/token',
    clientId: 'a-host',
    clientSecret: '{{ secrets.B_SECRET }}',
    scopes: ['runs:create'],
    resource: 'https://b.test',
    audience: 'b',
  };
  const env = (agents: unknown, extra: Record<string, string> = {}) => ({
    HANDOFF_AGENTS_FILE: file(`agents-${Math.random()}.json`, JSON.stringify(agents)),
    HANDOFF_SECRET_B_SECRET: 'the-client-secret',
    HANDOFF_SECRET_C_TOKEN: 'c-static-token',
    ...extra,
  });
  const refuses = (e: Record<string, string>, ...mentions: string[]) =>
    assert.throws(
      () => loadConfig({}, e),
      (err: Error) =>
        err instanceof ConfigError &&
        mentions.every((m) => err.message.includes(m)) &&
        !err.message.includes('the-client-secret'),
      JSON.stringify(e),
    );

  it('reads agents with client credentials, a bearer token and pinned card keys, secrets filled in', () => {
    const { agents, secrets } = loadConfig(
      {},
      env(
        {
          reviewer: { url: 'https://b.test', auth: oauth, cardKeys: { keys: [publicJwk] } },
          other: { url: 'https://c.test/card.json', auth: { type: 'bearer', token: '{{ secrets.C_TOKEN }}' } },
        },
        { HANDOFF_AGENTS: 'legacy=https://d.test' },
      ),
    );
    const reviewer = agents.registry.get('reviewer');
    assert.equal(reviewer?.cardUrl, 'https://b.test/.well-known/agent-card.json');
    assert.deepEqual(reviewer?.clientCredentials, { ...oauth, clientSecret: 'the-client-secret' });
    assert.deepEqual(reviewer?.cardKeys, { keys: [publicJwk] });
    assert.equal(agents.registry.get('other')?.token, 'c-static-token');
    assert.ok(agents.registry.has('legacy'), 'HANDOFF_AGENTS keeps working beside the file');
    assert.equal(secrets.redact('x the-client-secret y'), 'x [redacted] y');
  });

  it('refuses, naming the agent and field, never a value', () => {
    refuses(
      env({ r: { url: 'https://b.test', auth: { ...oauth, clientSecret: 'the-client-secret' } } }),
      "agent 'r'",
      'auth.clientSecret',
      'secrets.NAME',
    );
    refuses(
      env({ r: { url: 'https://b.test', auth: { ...oauth, clientSecret: '{{ secrets.NOPE }}' } } }),
      'NOPE',
      'not defined',
    );
    refuses(env({ r: { url: 'https://b.test', auth: { ...oauth, type: 'basic' } } }), 'auth.type');
    refuses(env({ r: { url: 'https://b.test', extra: 1 } }), "no field 'extra'");
    refuses(env({ r: { url: 'ftp://b.test' } }), 'http(s) url');
    refuses(
      env({ r: { url: 'https://b.test', cardKeys: { keys: [{ ...publicJwk, d: 'secret' }] } } }),
      'public keys only',
    );
    refuses(env({ r: { url: 'https://b.test', cardKeys: { keys: [] } } }), 'at least one key');
    refuses(
      env({ legacy: { url: 'https://b.test' } }, { HANDOFF_AGENTS: 'legacy=https://d.test' }),
      'also named in HANDOFF_AGENTS',
    );
  });
});

describe('HANDOFF_OIDC_*', () => {
  const refuses = (e: Record<string, string>, mention: string) =>
    assert.throws(
      () => loadConfig({}, e),
      (err: Error) => err instanceof ConfigError && err.message.includes(mention),
    );

  it('needs an audience, an https issuer (http on loopback only), and no companion without the issuer', () => {
    refuses({ HANDOFF_OIDC_ISSUER: 'https://idp.test' }, 'HANDOFF_OIDC_AUDIENCE');
    refuses({ HANDOFF_OIDC_ISSUER: 'http://idp.test', HANDOFF_OIDC_AUDIENCE: 'b' }, 'https');
    refuses({ HANDOFF_OIDC_AUDIENCE: 'b' }, 'HANDOFF_OIDC_ISSUER is not');
    const { oidc } = loadConfig({}, { HANDOFF_OIDC_ISSUER: 'http://127.0.0.1:9/', HANDOFF_OIDC_AUDIENCE: 'b' });
    assert.deepEqual(oidc, {
      issuer: 'http://127.0.0.1:9/',
      audience: 'b',
      tenantClaim: 'tenant',
      jwksCooldownMs: 30_000,
    });
  });

  it('an issuer is authentication enough to listen beyond loopback', () => {
    const env = { HANDOFF_OIDC_ISSUER: 'https://idp.test', HANDOFF_OIDC_AUDIENCE: 'b' };
    assert.equal(loadConfig({ host: '0.0.0.0' }, env).host, '0.0.0.0');
    assert.throws(() => loadConfig({ host: '0.0.0.0' }, {}), /HANDOFF_OIDC_ISSUER/);
  });
});

describe('Redactor.learn', () => {
  it('a credential obtained at run time is redacted from then on, in its spellings', () => {
    const r = new Redactor(['fixed-secret-1']);
    const token = 'eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl';
    assert.equal(r.text(`a ${token}`), `a ${token}`);
    r.learn(token);
    assert.equal(r.text(`a ${token} fixed-secret-1`), 'a [redacted] [redacted]');
    assert.equal(r.text(Buffer.from(`x:${token}`).toString('base64')).includes('[redacted]'), true);
  });
});
