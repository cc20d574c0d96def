// The `survey` demo end to end: a core.forEach over inputs.agents, each child a `survey-ask` run
// that asks one agent through a2a.invoke — here two plain @a2a-js/sdk agents (0.3 and 1.x) from
// the registry, and a name that is not in it. The answers come back in the order given; the agent
// that cannot be asked is reported, not fatal.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';
import { type SdkSampleServer, startSdkSampleServer } from '../support/sdk-sample-server.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';

for (const dialect of DIALECTS) {
  describe(`the survey demo (${dialect})`, () => {
    let v03: SdkSampleServer;
    let v1: SdkV1Agent;
    let t: TestHost;

    before(async () => {
      [v03, v1] = await Promise.all([startSdkSampleServer(), startSdkV1Agent()]);
      t = await startTestHost({
        pg: dialect === 'postgres',
        env: {
          HANDOFF_AGENTS: `old=${v03.url},new=${v1.url}`,
          HANDOFF_AGENT_POLL_MIN_MS: '50',
          HANDOFF_AGENT_POLL_MAX_MS: '250',
          HANDOFF_CHILD_POLL_MS: '3600000',
        },
      });
    });
    after(async () => {
      await t?.close();
      await Promise.all([v03?.close(), v1?.close()]);
    });

    it('asks every agent in its own child run and collects the answers in the order given', async () => {
      const runId = await t.createRun('survey', { agents: ['new', 'nobody', 'old'], question: 'Ship on Friday?' });
      const done = await t.waitForStatus(runId, ['completed', 'failed']);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      const { question, answered, results } = done.nodeStates.answers;
      assert.equal(question, 'Ship on Friday?');
      assert.equal(answered, 2);
      assert.deepEqual(
        (results as Json[]).map((r) => [r.status, r.output?.agent ?? null, r.output?.answer ?? null]),
        [
          ['completed', 'new', 'Ship on Friday?'],
          ['failed', null, null],
          ['completed', 'old', 'Ship on Friday?'],
        ],
      );
      assert.equal(results[1].error.code, 'external_call_refused');
      for (const r of results as Json[]) {
        const child = (await t.get(`/v1/runs/${r.runId}`)).body;
        assert.equal(child.workflowId, 'survey-ask');
        assert.equal(child.parentRunId, runId);
        assert.equal(child.parentNodeId, 'asked');
      }
    });
  });
}
