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
      assert.throws(() => loadConfig({}, { HANDOFF_PG_POOL_SIZE: bad }), (err: Error) => err instanceof ConfigError && /HANDOFF_PG_POOL_SIZE/.test(err.message));
    }
  });

  it('takes the instance id from HANDOFF_INSTANCE_ID, else makes a unique one', () => {
    assert.equal(loadConfig({}, { HANDOFF_INSTANCE_ID: 'handoff-a' }).instanceId, 'handoff-a');
    assert.notEqual(loadConfig({}, {}).instanceId, loadConfig({}, {}).instanceId);
  });
});
