// The metrics registry labels every exported sample with the instance id (setInstanceLabel, called
// by createHost), including prom-client's default process metrics and labelled Handoff metrics.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { metrics, registry, setInstanceLabel } from '../../src/metrics.js';

/** The sample lines of the text exposition (no HELP/TYPE comments). */
async function samples(): Promise<string[]> {
  return (await registry.metrics()).split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

describe('metrics instance label', () => {
  it('every sample carries instance="<id>", next to its own labels', async () => {
    setInstanceLabel('unit-a');
    metrics.runsStarted.inc({ workflow: 'echo' });
    metrics.httpDuration.observe({ route: '/healthz', method: 'GET', status: '200' }, 0.002);
    const lines = await samples();
    assert.ok(
      lines.some((l) => l.startsWith('process_')),
      'default process metrics are exported',
    );
    assert.deepEqual(
      lines.filter((l) => !l.includes('instance="unit-a"')),
      [],
    );
    assert.ok(
      lines.some(
        (l) =>
          l.startsWith('handoff_runs_started_total{') &&
          l.includes('workflow="echo"') &&
          l.includes('instance="unit-a"'),
      ),
    );
  });

  it('the last id set names the instance (one registry per process)', async () => {
    setInstanceLabel('unit-b');
    const lines = await samples();
    assert.deepEqual(
      lines.filter((l) => !l.includes('instance="unit-b"')),
      [],
    );
    assert.ok(!lines.some((l) => l.includes('unit-a')));
  });
});
