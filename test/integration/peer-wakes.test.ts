// PeerWakes (src/peers/wakes.ts) on a real store, bus and worker: wakes of one wait are coalesced
// to one read in flight (or due) and at most one queued behind it, which goes once that read
// commits — and only while the node still waits. The run here sleeps on a long core.delay: a
// wake makes it due, the worker executes the delay (which sleeps again), and that commit is the
// "read" the queued wake waited for.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { PeerWakes, type WakeOutcome } from '../../src/peers/wakes.js';
import { DIALECTS, startTestHost, type TestHost } from '../support/host.js';
import { until } from '../support/until.js';

function sleeperWorkflow(): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-wakes-wf-'));
  const wf = {
    id: 'sleeper',
    name: 'sleeper',
    version: '1.0.0',
    nodes: [
      { id: 'nap', typeId: 'core.delay', name: 'Nap', position: { x: 0, y: 0 }, config: { ms: 600_000 }, inputs: {} },
    ],
    edges: [],
    triggers: [{ id: 'manual', type: 'manual', enabled: true }],
    variables: [],
    metadata: {},
    settings: {},
  };
  writeFileSync(join(dir, 'sleeper.json'), JSON.stringify(wf));
  return dir;
}

for (const dialect of DIALECTS) {
  describe(`peer wakes: one read in flight, at most one queued (${dialect})`, () => {
    let t: TestHost;
    const dir = sleeperWorkflow();

    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', workflows: [dir] });
    });
    after(() => t?.close());

    /** A sleeping run (its delay's timer ten minutes away, no lease). */
    async function sleepingRun(): Promise<string> {
      const runId = await t.createRun('sleeper');
      await until('the run sleeps', async () => {
        const r = await t.host.store.runs.get(runId);
        return r?.status === 'running' && (r.wakeAt ?? 0) > Date.now() + 60_000 && r.leaseOwner === undefined;
      });
      return runId;
    }

    const executions = async () => {
      const text = await t.host.metrics.registry.metrics();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('handoff_node_executions_total{') && l.includes('core.delay'));
      return line ? Number(line.split(' ').at(-1)) : 0;
    };

    function wakesFor(waiting: () => boolean) {
      const outcomes: WakeOutcome[] = [];
      const wakes = new PeerWakes({
        wake: (runId) => t.host.store.runs.wake(runId, 0),
        kick: () => t.host.runner.kick(),
        waiting: async () => waiting(),
        logger: pino({ level: 'silent' }),
        max: 100,
        onRequest: (_source, outcome) => outcomes.push(outcome),
      });
      const stop = t.host.bus.subscribeAll((n) => wakes.noticed(n));
      return { wakes, outcomes, stop };
    }

    it('a burst of wakes reads twice: the one woken, and one queued behind it', async () => {
      const runId = await sleepingRun();
      const before = await executions();
      const { wakes, outcomes, stop } = wakesFor(() => true);
      const target = { waitId: 'pw_test', runId };
      const burst = await Promise.all(Array.from({ length: 50 }, () => wakes.request(target, 'push')));
      assert.equal(burst.filter((o) => o === 'woken').length, 1, JSON.stringify(burst));
      assert.equal(burst.filter((o) => o === 'queued').length, 1, JSON.stringify(burst));
      assert.equal(burst.filter((o) => o === 'coalesced').length, 48, JSON.stringify(burst));
      // The woken read commits; the queued wake goes then, and its read commits too.
      await until('the queued wake went', () => outcomes.length === 51 && outcomes[50] === 'woken');
      await until('two reads, and the run asleep again', async () => {
        const r = await t.host.store.runs.get(runId);
        return (await executions()) - before === 2 && r?.leaseOwner === undefined && (r?.wakeAt ?? 0) > Date.now();
      });
      assert.equal(outcomes.length, 51, 'nothing more was asked');
      stop();
    });

    it('a queued wake is dropped when the node no longer waits', async () => {
      const runId = await sleepingRun();
      const before = await executions();
      let waiting = true;
      const { wakes, outcomes, stop } = wakesFor(() => waiting);
      const target = { waitId: 'pw_test2', runId };
      assert.equal(await wakes.request(target, 'stream'), 'woken');
      assert.equal(await wakes.request(target, 'stream'), 'queued');
      waiting = false;
      await until('the woken read', async () => (await executions()) - before === 1);
      await until('the run sleeps again', async () => (await t.host.store.runs.get(runId))?.leaseOwner === undefined);
      assert.deepEqual(outcomes, ['woken', 'queued']);
      stop();
    });
  });
}
