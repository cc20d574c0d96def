// Each host's metrics: every exported sample carries instance="<id>" (default process metrics and
// labelled Handoff metrics alike), and two hosts in one process keep separate counts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metrics } from '../../src/metrics.js';

/** The sample lines of the text exposition (no HELP/TYPE comments). */
async function samples(m: Metrics): Promise<string[]> {
  return (await m.registry.metrics()).split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

describe('metrics', () => {
  it('every sample carries instance="<id>", next to its own labels', async () => {
    const m = new Metrics('unit-a');
    m.runsStarted.inc({ workflow: 'echo' });
    m.httpDuration.observe({ route: '/healthz', method: 'GET', status: '200' }, 0.002);
    const lines = await samples(m);
    assert.ok(
      lines.some((l) => l.startsWith('process_')),
      'default process metrics are exported',
    );
    assert.deepEqual(
      lines.filter((l) => !l.includes('instance="unit-a"')),
      [],
    );
    const started = lines.find((l) => l.startsWith('handoff_runs_started_total{') && l.includes('workflow="echo"'));
    assert.ok(started?.includes('instance="unit-a"'));
  });

  it('two hosts in one process count apart, each under its own instance id', async () => {
    const a = new Metrics('unit-b');
    const b = new Metrics('unit-c');
    a.runsStarted.inc({ workflow: 'echo' });
    a.runsStarted.inc({ workflow: 'echo' });
    const countOf = async (m: Metrics) =>
      (await samples(m)).find((l) => l.startsWith('handoff_runs_started_total{') && l.includes('workflow="echo"'));
    assert.match((await countOf(a)) ?? '', /instance="unit-b".* 2$/);
    assert.equal(await countOf(b), undefined);
    assert.ok(!(await samples(b)).some((l) => l.includes('unit-b')));
  });

  it('counts a run started and finished from the committed changes, once each', async () => {
    const m = new Metrics('unit-d');
    const run = (status: 'running' | 'completed') => ({ runId: 'r', workflowId: 'echo', status }) as never;
    m.runListener.committed?.([{ run: run('running'), events: [] }]);
    m.runListener.committed?.([{ before: run('running'), run: run('completed'), events: [] }]);
    m.runListener.committed?.([{ before: run('completed'), run: run('completed'), events: [] }]);
    const values = async (c: Metrics['runsStarted'] | Metrics['runsFinished']) =>
      (await c.get()).values.map((v) => [v.labels, v.value]);
    assert.deepEqual(await values(m.runsStarted), [[{ workflow: 'echo' }, 1]]);
    assert.deepEqual(await values(m.runsFinished), [[{ workflow: 'echo', status: 'completed' }, 1]]);
  });
});
