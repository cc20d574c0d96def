// The audit entry of a decision says who was counted and why: `via` (the approver group or role of
// the caller's credential that admitted it, RFC 0104) and, on a `voterIdentity: "declared"` gate,
// `voter` (whom the vote counts for) beside the entry's principal (the caller that cast it).
// SQLite always, PostgreSQL too when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bearer, DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';

const FIN = 'key-fin-ann-01';
const RELAY = 'key-relay-0001';
const gate = (id: string, config: Record<string, unknown>) => ({
  id,
  nodes: [{ id: 'review', typeId: 'core.approvalGate', config: { title: id, ...config } }],
});

for (const dialect of DIALECTS) {
  describe(`audit entries of decisions name the voter and via (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-wf-'));
      writeFileSync(join(dir, 'by-group.json'), JSON.stringify(gate('by-group', { approverGroupRefs: ['finance'] })));
      writeFileSync(
        join(dir, 'relayed.json'),
        JSON.stringify(gate('relayed', { approversList: ['dana'], voterIdentity: 'declared', relayers: ['relay'] })),
      );
      t = await startTestHost({
        pg: dialect === 'postgres',
        workflows: [dir],
        apiKeys: JSON.stringify({
          [FIN]: { tenant: 'acme', principal: 'ann', groups: ['finance'] },
          [RELAY]: { tenant: 'acme', principal: 'relay' },
        }),
      });
    });
    after(async () => {
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** The decision entries of the run (act approval.*), oldest first. */
    const decisions = async (runId: string): Promise<Json[]> => {
      const res = await t.get(`/v1/audit?runId=${runId}`, bearer(FIN));
      assert.equal(res.status, 200, res.text);
      return res.body.entries.filter((e: Json) => e.values?.interruptId !== undefined);
    };

    it('a vote admitted by a group records via; the caller is its own voter', async () => {
      const runId = await t.createRun('by-group', {}, bearer(FIN));
      await t.waitForStatus(runId, ['waiting-approval'], bearer(FIN));
      const res = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        bearer(FIN),
      );
      assert.equal(res.status, 200, res.text);
      const [entry, ...rest] = await decisions(runId);
      assert.equal(rest.length, 0);
      assert.equal(entry.principal, 'ann');
      assert.equal(entry.values.via, 'group:finance');
      assert.equal(entry.values.voter, undefined);
    });

    it('a relayed vote on a declared gate records the voter beside the caller', async () => {
      const runId = await t.createRun('relayed', {}, bearer(RELAY));
      await t.waitForStatus(runId, ['waiting-approval'], bearer(RELAY));
      const res = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept', voter: 'dana' } },
        bearer(RELAY),
      );
      assert.equal(res.status, 200, res.text);
      const [entry] = await decisions(runId);
      assert.equal(entry.principal, 'relay');
      assert.equal(entry.values.voter, 'dana');
      assert.equal(entry.values.via, undefined);
    });
  });
}
