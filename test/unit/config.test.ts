// loadConfig: defaults, environment twins, and clear refusals of bad values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
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
    const refuses = (env: Record<string, string>, name: string) =>
      assert.throws(
        () => loadConfig({}, env),
        (err: Error) => err instanceof ConfigError && err.message.includes(name),
        JSON.stringify(env),
      );
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
});
