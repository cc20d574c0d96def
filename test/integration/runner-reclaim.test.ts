// The worker and a run claimed again while its drive is ending. On a busy host (and more with
// several instances) a claim pass can lease a run to this instance between the commit of its
// sleep and the end of the drive that committed it. That lease is ours: the run must be driven,
// not left leased and idle until the lease expires. The interleaving is made to happen here by
// running that claim from inside the transaction path, right after the sleep commits.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunRecord } from '../../src/store/model.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { until } from '../support/until.js';

const LEASE_MS = 60_000;

describe('worker: a run re-claimed while its drive ends', () => {
  let t: TestHost;
  before(async () => {
    t = await startTestHost({ env: { HANDOFF_LEASE_MS: String(LEASE_MS) } });
  });
  after(async () => t?.close());

  it('is driven again at once, not after the lease expires', async () => {
    const store = t.host.store;
    const real = store.transaction.bind(store);
    let target: string | undefined;
    let reclaimed: RunRecord | undefined;
    store.transaction = (async (fn: Parameters<typeof real>[0]) => {
      const out = (await real(fn)) as { kind?: string; run?: RunRecord } | undefined;
      const run = out?.run;
      if (
        !reclaimed &&
        run !== undefined &&
        run.runId === target &&
        out?.kind === 'settled' &&
        run.wakeAt !== undefined
      ) {
        // The sleep is committed and its lease handed back; the drive has not returned yet.
        const due = run.wakeAt;
        await until('the timer to be due', () => Date.now() > due, { intervalMs: 2 });
        const claimed = await store.runs.claim(t.config.instanceId, LEASE_MS, 10);
        reclaimed = claimed.find((r) => r.runId === target);
        assert.ok(reclaimed, 'the due run was claimed by this instance');
        for (const r of claimed) t.host.runner.adopt(r);
      }
      return out;
    }) as typeof store.transaction;

    try {
      // The first sleep commits with the run's creation; the worker commits the second.
      const created = await t.post('/v1/runs', { workflowId: 'steps', inputs: { steps: 2, stepMs: 1 } });
      assert.equal(created.status, 201, created.text);
      target = created.body.runId as string;
      // Far less than the lease: a run left leased and idle cannot finish in time.
      const run = await t.waitForStatus(target, ['completed', 'failed']);
      assert.equal(run.status, 'completed');
      assert.ok(reclaimed, 'the interleaving under test happened');
    } finally {
      store.transaction = real;
    }
  });
});
