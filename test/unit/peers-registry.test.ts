// The agent registry (HANDOFF_AGENTS + HANDOFF_AGENT_TOKEN_<NAME>) and the other peer settings:
// what they accept, and clear refusals naming the setting (never echoing a token).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  type AgentEntry,
  cardUrlFor,
  parseAgentRegistry,
  tokenSetting,
  trustedOrigins,
} from '../../src/peers/registry.js';

const refuses = (env: Record<string, string>, ...mentions: string[]) =>
  assert.throws(
    () => loadConfig({}, env),
    (err: Error) => err instanceof ConfigError && mentions.every((m) => err.message.includes(m)),
    JSON.stringify(env),
  );

describe('agent registry', () => {
  it('reads name=url pairs: a base URL gets the well-known card path, a .json URL is the card', () => {
    const { registry } = loadConfig(
      {},
      {
        HANDOFF_AGENTS:
          ' reviewer=https://b.example.com , translator=https://c.example.com/a2a/,local=http://127.0.0.1:8081,' +
          'card=http://10.0.0.5:9000/agents/x.json',
      },
    ).agents;
    assert.deepEqual(
      [...registry.values()],
      [
        { name: 'reviewer', cardUrl: 'https://b.example.com/.well-known/agent-card.json' },
        { name: 'translator', cardUrl: 'https://c.example.com/a2a/.well-known/agent-card.json' },
        { name: 'local', cardUrl: 'http://127.0.0.1:8081/.well-known/agent-card.json' },
        { name: 'card', cardUrl: 'http://10.0.0.5:9000/agents/x.json' },
      ],
    );
  });

  it('is empty without HANDOFF_AGENTS', () => {
    assert.equal(loadConfig({}, {}).agents.registry.size, 0);
    assert.equal(loadConfig({}, { HANDOFF_AGENTS: ' , ' }).agents.registry.size, 0);
  });

  it('gives an agent the token of HANDOFF_AGENT_TOKEN_<NAME> (upper-cased, other characters as _)', () => {
    assert.equal(tokenSetting('code-review_2'), 'HANDOFF_AGENT_TOKEN_CODE_REVIEW_2');
    const { registry } = loadConfig(
      {},
      {
        HANDOFF_AGENTS: 'code-review=https://r.example.com,open=https://o.example.com',
        HANDOFF_AGENT_TOKEN_CODE_REVIEW: 'tok.en-123',
      },
    ).agents;
    assert.equal(registry.get('code-review')?.token, 'tok.en-123');
    assert.equal(registry.get('open')?.token, undefined);
  });

  it("redacts every agent's token like a secret (a peer may echo it), without making it a secret by name", () => {
    const config = loadConfig(
      {},
      {
        HANDOFF_AGENTS: 'a=https://a.example.com,b=https://b.example.com',
        HANDOFF_AGENT_TOKEN_A: 'tok~A+/=',
        HANDOFF_AGENT_TOKEN_B: 'tok~B+/=',
        HANDOFF_SECRET_OTHER: 'other-secret',
      },
    );
    const echo = `A tok~A+/= B ${encodeURIComponent('tok~B+/=')} other-secret`;
    assert.equal(config.secrets.redact(echo), 'A [redacted] B [redacted] [redacted]');
    assert.equal(config.secrets.has('A'), false);
  });

  it('refuses a bad name, a bad URL, a name given twice, and names that would share a token setting', () => {
    refuses({ HANDOFF_AGENTS: 'Reviewer=https://b.example.com' }, 'HANDOFF_AGENTS', 'Reviewer');
    refuses({ HANDOFF_AGENTS: '9lives=https://b.example.com' }, 'HANDOFF_AGENTS', '9lives');
    refuses({ HANDOFF_AGENTS: 'has space=https://b.example.com' }, 'HANDOFF_AGENTS');
    refuses({ HANDOFF_AGENTS: '=https://b.example.com' }, 'HANDOFF_AGENTS');
    refuses({ HANDOFF_AGENTS: 'reviewer' }, 'HANDOFF_AGENTS', 'reviewer');
    refuses({ HANDOFF_AGENTS: 'reviewer=b.example.com' }, 'HANDOFF_AGENTS', 'b.example.com');
    refuses({ HANDOFF_AGENTS: 'reviewer=ftp://b.example.com' }, 'HANDOFF_AGENTS', 'ftp://');
    refuses({ HANDOFF_AGENTS: 'reviewer=https://' }, 'HANDOFF_AGENTS');
    refuses({ HANDOFF_AGENTS: 'a=https://a.example.com,a=https://b.example.com' }, 'HANDOFF_AGENTS', "'a'", 'twice');
    refuses({ HANDOFF_AGENTS: 'a-b=https://a.example.com,a_b=https://b.example.com' }, 'HANDOFF_AGENT_TOKEN_A_B');
  });

  it('refuses credentials in a URL without echoing them', () => {
    assert.throws(
      () => loadConfig({}, { HANDOFF_AGENTS: 'r=https://user:s3cret@b.example.com' }),
      (err: Error) =>
        err instanceof ConfigError && err.message.includes('HANDOFF_AGENT_TOKEN_R') && !err.message.includes('s3cret'),
    );
  });

  it('refuses a token for no registered agent, and an empty or multi-word token, never echoing it', () => {
    refuses({ HANDOFF_AGENT_TOKEN_GHOST: 'x' }, 'HANDOFF_AGENT_TOKEN_GHOST', 'HANDOFF_AGENTS');
    for (const bad of ['', 'two words', 'line\r\nbreak']) {
      assert.throws(
        () => loadConfig({}, { HANDOFF_AGENTS: 'r=https://b.example.com', HANDOFF_AGENT_TOKEN_R: bad }),
        (err: Error) =>
          err instanceof ConfigError &&
          err.message.includes('HANDOFF_AGENT_TOKEN_R') &&
          (bad === '' || !err.message.includes(bad)),
        JSON.stringify(bad),
      );
    }
  });

  it("trusts the entry URL's origin and those it lists with ;origin= (normalized), nothing else", () => {
    const { registry } = loadConfig(
      {},
      {
        HANDOFF_AGENTS:
          'b=https://b.example.com/card.json; origin=https://API.b.example.com:443 ;origin=http://10.0.0.7:8080/,' +
          'c=https://c.example.com',
      },
    ).agents;
    assert.deepEqual(registry.get('b'), {
      name: 'b',
      cardUrl: 'https://b.example.com/card.json',
      origins: ['https://api.b.example.com', 'http://10.0.0.7:8080'],
    });
    assert.deepEqual(
      [...trustedOrigins(registry.get('b') as AgentEntry)],
      ['https://b.example.com', 'https://api.b.example.com', 'http://10.0.0.7:8080'],
    );
    assert.deepEqual([...trustedOrigins(registry.get('c') as AgentEntry)], ['https://c.example.com']);
  });

  it('refuses an ;origin= that is not a bare http(s) origin, and any other option', () => {
    for (const bad of [
      'https://x.example.com/a2a',
      'https://x.example.com?q=1',
      'ftp://x.example.com',
      'x.example.com',
      '',
    ]) {
      refuses({ HANDOFF_AGENTS: `b=https://b.example.com;origin=${bad}` }, 'HANDOFF_AGENTS', "agent 'b'", ';origin=');
    }
    assert.throws(
      () => loadConfig({}, { HANDOFF_AGENTS: 'b=https://b.example.com;origin=https://u:s3cret@x.example.com' }),
      (err: Error) =>
        err instanceof ConfigError && err.message.includes("agent 'b'") && !err.message.includes('s3cret'),
    );
    refuses({ HANDOFF_AGENTS: 'b=https://b.example.com;trust=all' }, "agent 'b'", "unknown option 'trust=all'");
  });

  it('parses to a verdict, so callers other than loadConfig can report it their way', () => {
    const v = parseAgentRegistry({ HANDOFF_AGENTS: 'x=nope' });
    assert.equal(v.ok, false);
    assert.equal(
      cardUrlFor('https://h.example.com/base?q=1#f'),
      'https://h.example.com/base/.well-known/agent-card.json',
    );
    assert.equal(cardUrlFor('mailto:a@b.c'), null);
  });
});

describe('peer call settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-peers-config-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('times peer calls out after 30 s unless HANDOFF_AGENT_TIMEOUT_MS says otherwise', () => {
    assert.equal(loadConfig({}, {}).agents.timeoutMs, 30_000);
    assert.equal(loadConfig({}, { HANDOFF_AGENT_TIMEOUT_MS: '2500' }).agents.timeoutMs, 2500);
    for (const bad of ['0', '99', '1.5', 'soon'])
      refuses({ HANDOFF_AGENT_TIMEOUT_MS: bad }, 'HANDOFF_AGENT_TIMEOUT_MS');
  });

  it('takes an extra CA file for peers, refusing one that does not exist', () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, 'pem');
    assert.equal(loadConfig({}, { HANDOFF_AGENT_CA_FILE: ca }).agents.caFile, ca);
    refuses({ HANDOFF_AGENT_CA_FILE: join(dir, 'missing.pem') }, 'HANDOFF_AGENT_CA_FILE', 'missing.pem');
  });
});

describe('TLS settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-tls-config-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  writeFileSync(cert, 'cert');
  writeFileSync(key, 'key');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves plain HTTP without them, HTTPS with both (flags win over the environment)', () => {
    assert.equal(loadConfig({}, {}).tls, undefined);
    assert.deepEqual(loadConfig({}, { HANDOFF_TLS_CERT: cert, HANDOFF_TLS_KEY: key }).tls, {
      certFile: cert,
      keyFile: key,
    });
    assert.deepEqual(
      loadConfig({ tlsCert: cert, tlsKey: key }, { HANDOFF_TLS_CERT: '/nope', HANDOFF_TLS_KEY: '/nope' }).tls,
      { certFile: cert, keyFile: key },
    );
  });

  it('refuses one without the other, and files that do not exist or are directories', () => {
    refuses({ HANDOFF_TLS_CERT: cert }, '--tls-cert', '--tls-key');
    refuses({ HANDOFF_TLS_KEY: key }, '--tls-cert', '--tls-key');
    refuses({ HANDOFF_TLS_CERT: join(dir, 'none.pem'), HANDOFF_TLS_KEY: key }, '--tls-cert', 'none.pem');
    refuses({ HANDOFF_TLS_CERT: cert, HANDOFF_TLS_KEY: dir }, '--tls-key');
    assert.throws(() => loadConfig({ tlsCert: cert }, {}), ConfigError);
  });
});
