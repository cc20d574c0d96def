// loadConfig: defaults, environment twins, and clear refusals of bad values.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

/** loadConfig(env) throws a ConfigError whose message names the setting `name`. */
const refuses = (env: Record<string, string>, name: string) =>
  assert.throws(
    () => loadConfig({}, env),
    (err: Error) => err instanceof ConfigError && err.message.includes(name),
    JSON.stringify(env),
  );

describe('loadConfig', () => {
  it('HANDOFF_API_KEYS: an admin key is `:admin` (or `admin: true`); any other flag is refused', () => {
    const keys = loadConfig({}, { HANDOFF_API_KEYS: 'key-aaaaaaaa=t1:alice,key-bbbbbbbb=ops:root:admin' }).apiKeys;
    assert.deepEqual(keys.get('key-aaaaaaaa'), { tenantId: 't1', principalId: 'alice' });
    assert.deepEqual(keys.get('key-bbbbbbbb'), { tenantId: 'ops', principalId: 'root', admin: true });
    const json = loadConfig(
      {},
      { HANDOFF_API_KEYS: '{"key-cccccccc":{"tenant":"ops","principal":"root","admin":true}}' },
    );
    assert.equal(json.apiKeys.get('key-cccccccc')?.admin, true);
    refuses({ HANDOFF_API_KEYS: 'key-aaaaaaaa=t1:alice:root' }, 'HANDOFF_API_KEYS');
    refuses({ HANDOFF_API_KEYS: '{"key-cccccccc":{"tenant":"t","principal":"p","admin":"yes"}}' }, 'HANDOFF_API_KEYS');
  });

  it('HANDOFF_API_KEYS: a key in the JSON form may be limited to scopes; a malformed list is refused', () => {
    const keys = loadConfig(
      {},
      { HANDOFF_API_KEYS: '{"key-dddddddd":{"tenant":"t","principal":"reader","scopes":["runs:read","runs:read"]}}' },
    ).apiKeys;
    assert.deepEqual(keys.get('key-dddddddd')?.scopes, ['runs:read']);
    for (const scopes of ['"runs:read"', '["runs read"]', '[5]']) {
      refuses({ HANDOFF_API_KEYS: `{"key-dddddddd":{"tenant":"t","principal":"p","scopes":${scopes}}}` }, 'scopes');
    }
  });

  it('HANDOFF_API_KEYS: an unknown scope name (a typo) is refused at start, naming it and the known ones', () => {
    const env = {
      HANDOFF_API_KEYS: '{"key-dddddddd":{"tenant":"t","principal":"p","scopes":["runs:read","approval:respond"]}}',
    };
    assert.throws(
      () => loadConfig({}, env),
      (err: Error) =>
        err instanceof ConfigError &&
        err.message.includes('"approval:respond"') &&
        ['runs:create', 'runs:read', 'runs:cancel', 'approvals:respond', 'webhooks:manage', 'manifest:read'].every(
          (s) => err.message.includes(s),
        ),
    );
    const all = '["runs:create","runs:read","runs:cancel","approvals:respond","webhooks:manage","manifest:read"]';
    const keys = loadConfig(
      {},
      { HANDOFF_API_KEYS: `{"key-dddddddd":{"tenant":"t","principal":"p","scopes":${all}}}` },
    );
    assert.equal(keys.apiKeys.get('key-dddddddd')?.scopes?.length, 6);
  });

  it('HANDOFF_API_KEYS: a key in the JSON form may name its groups and roles; a malformed list is refused', () => {
    const keys = loadConfig(
      {},
      {
        HANDOFF_API_KEYS:
          '{"key-eeeeeeee":{"tenant":"t","principal":"ann","groups":["finance","finance"],"roles":["controller"]}}',
      },
    ).apiKeys;
    assert.deepEqual(keys.get('key-eeeeeeee'), {
      tenantId: 't',
      principalId: 'ann',
      groups: ['finance'],
      roles: ['controller'],
    });
    for (const field of ['groups', 'roles']) {
      for (const list of ['"finance"', '[""]', '["  "]', '[5]', '{}']) {
        refuses({ HANDOFF_API_KEYS: `{"key-eeeeeeee":{"tenant":"t","principal":"p","${field}":${list}}}` }, field);
      }
    }
  });

  it('HANDOFF_API_KEYS: a group or role name with white space before or after it is refused, naming it', () => {
    for (const field of ['groups', 'roles']) {
      for (const name of [' finance', 'finance ', '\\tfinance', 'finance\\n']) {
        const env = { HANDOFF_API_KEYS: `{"key-eeeeeeee":{"tenant":"t","principal":"p","${field}":["ok","${name}"]}}` };
        assert.throws(
          () => loadConfig({}, env),
          (err: Error) =>
            err instanceof ConfigError &&
            err.message.includes(`"${field}"`) &&
            err.message.includes(JSON.stringify(JSON.parse(`"${name}"`))),
          JSON.stringify(env),
        );
      }
    }
    // Inner spaces are part of the name.
    const keys = loadConfig(
      {},
      { HANDOFF_API_KEYS: '{"key-eeeeeeee":{"tenant":"t","principal":"p","groups":["Finance Admins"]}}' },
    );
    assert.deepEqual(keys.apiKeys.get('key-eeeeeeee')?.groups, ['Finance Admins']);
  });

  it('HANDOFF_OIDC_GROUPS_CLAIM and HANDOFF_OIDC_ROLES_CLAIM name the claims, with an issuer only', () => {
    const oidc = loadConfig(
      {},
      {
        HANDOFF_OIDC_ISSUER: 'https://id.example.com',
        HANDOFF_OIDC_AUDIENCE: 'handoff',
        HANDOFF_OIDC_GROUPS_CLAIM: 'groups',
        HANDOFF_OIDC_ROLES_CLAIM: 'roles',
      },
    ).oidc;
    assert.equal(oidc?.groupsClaim, 'groups');
    assert.equal(oidc?.rolesClaim, 'roles');
    assert.equal(
      loadConfig({}, { HANDOFF_OIDC_ISSUER: 'https://id.example.com', HANDOFF_OIDC_AUDIENCE: 'h' }).oidc?.groupsClaim,
      undefined,
    );
    refuses({ HANDOFF_OIDC_GROUPS_CLAIM: 'groups' }, 'HANDOFF_OIDC_GROUPS_CLAIM');
    refuses({ HANDOFF_OIDC_ROLES_CLAIM: 'roles' }, 'HANDOFF_OIDC_ROLES_CLAIM');
  });

  it('uses a PostgreSQL pool of 10 unless HANDOFF_PG_POOL_SIZE says otherwise', () => {
    assert.equal(loadConfig({}, {}).pgPoolSize, 10);
    assert.equal(loadConfig({}, { HANDOFF_PG_POOL_SIZE: '3' }).pgPoolSize, 3);
  });

  it('refuses a pool size that is not a positive integer, naming the setting', () => {
    for (const bad of ['0', '-1', '2.5', 'ten']) {
      assert.throws(
        () => loadConfig({}, { HANDOFF_PG_POOL_SIZE: bad }),
        (err: Error) => err instanceof ConfigError && /HANDOFF_PG_POOL_SIZE/.test(err.message),
      );
    }
  });

  it('takes the instance id from HANDOFF_INSTANCE_ID, else makes a unique one', () => {
    assert.equal(loadConfig({}, { HANDOFF_INSTANCE_ID: 'handoff-a' }).instanceId, 'handoff-a');
    assert.notEqual(loadConfig({}, {}).instanceId, loadConfig({}, {}).instanceId);
  });

  it('refuses an instance id that is empty or would break bus notices, naming the setting', () => {
    for (const bad of ['', 'a|b', 'has space', 'x'.repeat(129)]) {
      assert.throws(
        () => loadConfig({}, { HANDOFF_INSTANCE_ID: bad }),
        (err: Error) => err instanceof ConfigError && /HANDOFF_INSTANCE_ID/.test(err.message),
      );
    }
    assert.equal(loadConfig({}, { HANDOFF_INSTANCE_ID: 'pod-7.zone_a:1' }).instanceId, 'pod-7.zone_a:1');
  });

  it('bounds child runs at 5 levels and polls their parents every minute, unless told otherwise', () => {
    assert.deepEqual(loadConfig({}, {}).children, { maxDepth: 5, pollMs: 60_000 });
    const set = loadConfig({}, { HANDOFF_MAX_CHILD_DEPTH: '2', HANDOFF_CHILD_POLL_MS: '500' }).children;
    assert.deepEqual(set, { maxDepth: 2, pollMs: 500 });
    for (const bad of ['0', '65', '1.5', 'deep']) refuses({ HANDOFF_MAX_CHILD_DEPTH: bad }, 'HANDOFF_MAX_CHILD_DEPTH');
    for (const bad of ['0', '9', 'soon']) refuses({ HANDOFF_CHILD_POLL_MS: bad }, 'HANDOFF_CHILD_POLL_MS');
  });

  it('leases push deliveries for 60 s unless HANDOFF_PUSH_LEASE_MS says otherwise', () => {
    assert.equal(loadConfig({}, {}).push.leaseMs, 60_000);
    assert.equal(loadConfig({}, { HANDOFF_PUSH_LEASE_MS: '15000' }).push.leaseMs, 15_000);
  });

  it('refuses a push lease that does not exceed the 5 s attempt timeout, or is not an integer, \
naming the setting', () => {
    for (const bad of ['5000', '1000', '0', '-1', '7.5', 'soon']) {
      assert.throws(
        () => loadConfig({}, { HANDOFF_PUSH_LEASE_MS: bad }),
        (err: Error) => err instanceof ConfigError && /HANDOFF_PUSH_LEASE_MS/.test(err.message),
        bad,
      );
    }
    assert.equal(loadConfig({}, { HANDOFF_PUSH_LEASE_MS: '5001' }).push.leaseMs, 5001);
  });

  it('refuses a malformed push retry schedule, naming the setting', () => {
    assert.equal(
      loadConfig({}, { HANDOFF_PUSH_RETRY_SCHEDULE: '1s, 500ms,2m,1.5h' }).push.retrySchedule,
      '1s, 500ms,2m,1.5h',
    );
    for (const bad of ['', '5', '5s,,1m', '1d', '5 s', '-5s']) {
      assert.throws(
        () => loadConfig({}, { HANDOFF_PUSH_RETRY_SCHEDULE: bad }),
        (err: Error) => err instanceof ConfigError && /HANDOFF_PUSH_RETRY_SCHEDULE/.test(err.message),
        bad,
      );
    }
  });

  it('refuses a PostgreSQL schema name that is not a short lower-case identifier, naming the setting', () => {
    assert.equal(loadConfig({}, { HANDOFF_PG_SCHEMA: 'handoff_prod' }).pgSchema, 'handoff_prod');
    for (const bad of ['Prod', 'a-b', '1abc', 'x; drop table runs', 'a'.repeat(51)]) {
      assert.throws(
        () => loadConfig({}, { HANDOFF_PG_SCHEMA: bad }),
        (err: Error) => err instanceof ConfigError && /HANDOFF_PG_SCHEMA/.test(err.message),
        bad,
      );
    }
  });

  it('refuses malformed push settings and secret key, naming the setting (never echoing the key)', () => {
    refuses({ HANDOFF_PUSH_ALLOW_CIDRS: '10.0.0.0/8,10.1.0.0' }, 'HANDOFF_PUSH_ALLOW_CIDRS');
    refuses({ HANDOFF_PUSH_ALLOW_CIDRS: 'intranet' }, 'HANDOFF_PUSH_ALLOW_CIDRS');
    refuses({ HANDOFF_PUSH_CA_FILE: '/nonexistent/handoff-ca.pem' }, 'HANDOFF_PUSH_CA_FILE');
    refuses({ HANDOFF_SECRET_KEY: Buffer.alloc(16, 1).toString('base64') }, 'HANDOFF_SECRET_KEY');
    refuses({ HANDOFF_SECRET_KEY: 'not base64 at all!' }, 'HANDOFF_SECRET_KEY');
    assert.throws(
      () => loadConfig({}, { HANDOFF_SECRET_KEY: 'c2VjcmV0LXNob3J0' }),
      (err: Error) => !err.message.includes('c2VjcmV0LXNob3J0'),
    );
    const ok = loadConfig(
      {},
      { HANDOFF_PUSH_ALLOW_CIDRS: '10.0.0.0/8, fd00::/8', HANDOFF_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') },
    );
    assert.deepEqual(ok.push.allowCidrs, ['10.0.0.0/8', 'fd00::/8']);
    assert.equal(ok.push.secretKey, Buffer.alloc(32, 7).toString('base64'));
  });

  it('lets outbound calls reach nothing private unless HANDOFF_EGRESS_ALLOW_CIDRS / _HOSTS say so', () => {
    assert.deepEqual(loadConfig({}, {}).egress, { allowCidrs: [], allowHosts: [] });
    const c = loadConfig(
      {},
      {
        HANDOFF_EGRESS_ALLOW_CIDRS: '10.0.0.0/8, fd00::/8',
        HANDOFF_EGRESS_ALLOW_HOSTS: 'llm.corp, *.models.corp,localhost',
      },
    );
    assert.deepEqual(c.egress, {
      allowCidrs: ['10.0.0.0/8', 'fd00::/8'],
      allowHosts: ['llm.corp', '*.models.corp', 'localhost'],
    });
    assert.deepEqual(c.push.allowCidrs, [], 'pushes keep their own list');
  });

  it('refuses malformed egress allow lists, naming the setting', () => {
    refuses({ HANDOFF_EGRESS_ALLOW_CIDRS: '10.0.0.0/8,intranet' }, 'HANDOFF_EGRESS_ALLOW_CIDRS');
    refuses({ HANDOFF_EGRESS_ALLOW_HOSTS: 'llm.corp:8080' }, 'HANDOFF_EGRESS_ALLOW_HOSTS');
    refuses({ HANDOFF_EGRESS_ALLOW_HOSTS: 'https://llm.corp' }, 'HANDOFF_EGRESS_ALLOW_HOSTS');
    refuses({ HANDOFF_EGRESS_ALLOW_HOSTS: '*' }, 'HANDOFF_EGRESS_ALLOW_HOSTS');
  });

  it('reads secrets from HANDOFF_SECRET_<NAME> and HANDOFF_SECRETS_FILE, and LLM providers naming them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-config-'));
    try {
      const file = join(dir, 'secrets.json');
      writeFileSync(file, JSON.stringify({ OPENAI_KEY: 'sk-file' }));
      const providers = JSON.stringify({
        openai: { baseUrl: 'https://api.openai.com/v1', apiKeySecret: 'OPENAI_KEY' },
        local: { baseUrl: 'http://127.0.0.1:11434/v1' },
      });
      const c = loadConfig(
        {},
        {
          HANDOFF_SECRETS_FILE: file,
          HANDOFF_SECRET_TOKEN: 't0k3n',
          HANDOFF_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
          HANDOFF_LLM_PROVIDERS: providers,
        },
      );
      assert.equal(c.secrets.get('OPENAI_KEY'), 'sk-file');
      assert.equal(c.secrets.get('TOKEN'), 't0k3n');
      assert.equal(c.secrets.has('KEY'), false, 'the host key is not a secret');
      assert.deepEqual([...c.llmProviders.keys()], ['openai', 'local']);
      assert.equal(loadConfig({}, {}).llmProviders.size, 0);
      refuses({ HANDOFF_SECRETS_FILE: join(dir, 'missing.json') }, 'HANDOFF_SECRETS_FILE');
      refuses({ HANDOFF_SECRET_lower: 'x' }, 'HANDOFF_SECRET_lower');
      refuses({ HANDOFF_LLM_PROVIDERS: '{"a": {}}' }, 'HANDOFF_LLM_PROVIDERS');
      refuses({ HANDOFF_LLM_PROVIDERS: providers }, 'provider openai names secret OPENAI_KEY, which is not defined');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('hostile-input and quota settings: defaults, and values as written', () => {
    const d = loadConfig({}, {});
    assert.equal(d.jsonMaxDepth, 64);
    assert.equal(d.listMaxBytes, 4 * 1024 * 1024);
    assert.equal(loadConfig({}, { HANDOFF_LIST_MAX_BYTES: '65536' }).listMaxBytes, 65_536);
    assert.deepEqual(d.corsOrigins, []);
    assert.deepEqual(d.allowedHosts, []);
    assert.deepEqual(d.sse, {
      keepaliveMs: 15_000,
      maxBufferedBytes: 1024 * 1024,
      stallMs: 30_000,
      maxStreams: 1000,
      maxTotalBufferedBytes: 64 * 1024 * 1024,
    });
    assert.deepEqual(d.quotas, { pushConfigsPerTask: 10 });
    const c = loadConfig(
      {},
      {
        HANDOFF_JSON_MAX_DEPTH: '100',
        HANDOFF_CORS_ORIGINS: 'https://app.example.com, http://localhost:5173',
        HANDOFF_ALLOWED_HOSTS: 'Handoff.Internal,10.0.0.5,[fd00::5]',
        HANDOFF_SSE_MAX_STREAMS: '50',
        HANDOFF_SSE_MAX_TOTAL_BUFFER: String(8 * 1024 * 1024),
        HANDOFF_SSE_STALL_MS: '5000',
        HANDOFF_PUSH_MAX_CONFIGS_PER_TASK: '3',
        HANDOFF_TENANT_RATE: '6000/m',
        HANDOFF_TENANT_MAX_ACTIVE_RUNS: '500',
      },
    );
    assert.equal(c.jsonMaxDepth, 100);
    assert.deepEqual(c.corsOrigins, ['https://app.example.com', 'http://localhost:5173']);
    assert.deepEqual(c.allowedHosts, ['handoff.internal', '10.0.0.5', '[fd00::5]']);
    assert.equal(c.sse.maxStreams, 50);
    assert.equal(c.sse.maxTotalBufferedBytes, 8 * 1024 * 1024);
    assert.equal(c.sse.stallMs, 5000);
    assert.deepEqual(c.quotas, {
      pushConfigsPerTask: 3,
      tenantRate: { max: 6000, windowMs: 60_000 },
      tenantMaxActiveRuns: 500,
    });
    assert.deepEqual(loadConfig({}, { HANDOFF_TENANT_RATE: '100/s' }).quotas.tenantRate, { max: 100, windowMs: 1000 });
  });

  it('refuses malformed hostile-input and quota settings, naming the setting', () => {
    for (const bad of ['0', '7', '257', 'deep']) refuses({ HANDOFF_JSON_MAX_DEPTH: bad }, 'HANDOFF_JSON_MAX_DEPTH');
    for (const bad of ['0', '1023', '1.5', 'big']) refuses({ HANDOFF_LIST_MAX_BYTES: bad }, 'HANDOFF_LIST_MAX_BYTES');
    for (const bad of ['app.example.com', 'https://app.example.com/', 'https://a.example/x', 'ftp//x']) {
      refuses({ HANDOFF_CORS_ORIGINS: bad }, 'HANDOFF_CORS_ORIGINS');
    }
    // A keyless host answering every web page would hand the local user's runs to any site.
    refuses({ HANDOFF_CORS_ORIGINS: '*' }, 'HANDOFF_CORS_ORIGINS');
    assert.deepEqual(loadConfig({}, { HANDOFF_CORS_ORIGINS: '*', HANDOFF_API_KEYS: 'key-aaaaaaaa=t:p' }).corsOrigins, [
      '*',
    ]);
    for (const bad of ['host:8080', 'http://host', 'a b', '-x.example']) {
      refuses({ HANDOFF_ALLOWED_HOSTS: bad }, 'HANDOFF_ALLOWED_HOSTS');
    }
    refuses({ HANDOFF_SSE_MAX_STREAMS: '0' }, 'HANDOFF_SSE_MAX_STREAMS');
    refuses({ HANDOFF_SSE_STALL_MS: '10' }, 'HANDOFF_SSE_STALL_MS');
    refuses({ HANDOFF_SSE_MAX_TOTAL_BUFFER: '2048', HANDOFF_SSE_MAX_BUFFER: '4096' }, 'HANDOFF_SSE_MAX_TOTAL_BUFFER');
    for (const bad of ['0', '1001', 'ten']) {
      refuses({ HANDOFF_PUSH_MAX_CONFIGS_PER_TASK: bad }, 'HANDOFF_PUSH_MAX_CONFIGS_PER_TASK');
    }
    for (const bad of ['100', '100/d', '0/s', '/s', '1.5/s', '100 per second']) {
      refuses({ HANDOFF_TENANT_RATE: bad }, 'HANDOFF_TENANT_RATE');
    }
    for (const bad of ['0', '-1', 'many'])
      refuses({ HANDOFF_TENANT_MAX_ACTIVE_RUNS: bad }, 'HANDOFF_TENANT_MAX_ACTIVE_RUNS');
    refuses({ HANDOFF_PUBLIC_URL: 'handoff.example.com' }, 'HANDOFF_PUBLIC_URL');
  });

  it('notification settings: SMTP, its From, the webhook and link secrets, principals’ e-mails', () => {
    const whsec = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const c = loadConfig(
      {},
      {
        HANDOFF_SMTP_URL: 'smtps://mailer:s3cret-pw@smtp.example.com:465',
        HANDOFF_SMTP_FROM: 'Handoff <handoff@example.com>',
        HANDOFF_WEBHOOK_SECRET: whsec,
        HANDOFF_LINK_SECRET: 'x'.repeat(32),
        HANDOFF_API_KEYS: 'key-alice-000=acme:alice:alice@example.com,key-bob-00000=acme:bob',
      },
    );
    assert.equal(c.notify.smtpUrl, 'smtps://mailer:s3cret-pw@smtp.example.com:465');
    assert.equal(c.notify.smtpFrom, 'Handoff <handoff@example.com>');
    assert.equal(c.notify.webhookSecret, whsec);
    assert.equal(c.apiKeys.get('key-alice-000')?.email, 'alice@example.com');
    assert.equal(c.apiKeys.get('key-bob-00000')?.email, undefined);
    // The SMTP password and the keys are redacted wherever the host redacts secrets.
    assert.equal(c.secrets.redactor.text('auth failed for s3cret-pw'), 'auth failed for [redacted]');
    const json = loadConfig(
      {},
      { HANDOFF_API_KEYS: '{"key-carol-000":{"tenant":"t","principal":"carol","email":"c@example.com"}}' },
    );
    assert.equal(json.apiKeys.get('key-carol-000')?.email, 'c@example.com');
  });

  it('refuses malformed notification settings, naming the setting', () => {
    refuses({ HANDOFF_SMTP_URL: 'http://smtp.example.com' }, 'HANDOFF_SMTP_URL');
    refuses({ HANDOFF_SMTP_URL: 'smtp://smtp.example.com' }, 'HANDOFF_SMTP_FROM');
    refuses({ HANDOFF_WEBHOOK_SECRET: 'short' }, 'HANDOFF_WEBHOOK_SECRET');
    refuses({ HANDOFF_LINK_SECRET: 'too short' }, 'HANDOFF_LINK_SECRET');
    refuses({ HANDOFF_API_KEYS: 'key-alice-000=acme:alice:not-an-address' }, 'HANDOFF_API_KEYS');
  });
});
