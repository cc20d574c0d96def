// A gate's deadline survives a crash: a real server process is SIGKILLed while a run waits at a
// gate with `timeoutMs`, a new process starts on the same database before the deadline, and that
// second incarnation expires the gate at the original deadline (not a fresh one) exactly once.
// The deadline is real time here (a separate process has no test clock); the test waits for it
// with the polling helper. SQLite always, PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

/** Long enough that the crash surely comes first, even on a loaded machine. */
const TIMEOUT_MS = 8_000;
const PG_URL = pgTestUrl();
const pgSchemas = PG_URL ? pgTestSchemas(PG_URL, 'deadline') : undefined;
const dirs: string[] = [];

const position = { x: 0, y: 0 };
const WORKFLOW = {
  id: 'late-accept',
  name: 'Approve, or go on at the deadline',
  version: '1.0.0',
  nodes: [
    { id: 'draft', typeId: 'core.transform', name: 'Draft', position, config: { output: { text: 'hi' } }, inputs: {} },
    {
      id: 'review',
      typeId: 'core.approvalGate',
      name: 'Review',
      position,
      config: { title: 'Review', artifactFrom: 'draft', timeoutMs: TIMEOUT_MS, onTimeout: 'accept' },
      inputs: {},
    },
  ],
  edges: [{ id: 'e1', sourceNodeId: 'draft', targetNodeId: 'review' }],
  triggers: [{ id: 'manual', type: 'manual', enabled: true }],
  variables: [],
  metadata: {},
  settings: {},
};

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

after(async () => {
  await killAllServers();
  await pgSchemas?.dropAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// Event payloads are read field by field.
type Json = any;

async function events(srv: ServerProcess, runId: string): Promise<Json[]> {
  const res = await getJson(`${srv.url}/v1/runs/${runId}/events/poll?lastSequence=-1&timeout=0&limit=1000`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.events;
}

for (const dialect of PG_URL ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  describe(`a gate deadline across SIGKILL (${dialect})`, () => {
    it('the restarted host expires the gate at its original deadline, once', async () => {
      const workflows = tempDir('handoff-deadline-wf-');
      writeFileSync(join(workflows, 'late-accept.json'), JSON.stringify(WORKFLOW));
      const env: Record<string, string> = { HANDOFF_WORKFLOWS: workflows };
      if (dialect === 'postgres' && pgSchemas) {
        Object.assign(env, { HANDOFF_DATABASE_URL: pgSchemas.url, HANDOFF_PG_SCHEMA: pgSchemas.fresh() });
      }
      const dataDir = tempDir('handoff-deadline-data-');
      let srv = await startServer({ dataDir, env });
      const created = await postJson(`${srv.url}/v1/runs`, { workflowId: 'late-accept', inputs: {} });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const runId = created.body.runId as string;
      const waiting = await until('the run waits at the gate', async () => {
        const r = (await getJson(`${srv.url}/v1/runs/${runId}`)).body;
        return r.status === 'waiting-approval' && r;
      });
      const expiresAt = waiting.interrupt.expiresAt as string;
      assert.ok(Date.now() < Date.parse(expiresAt) - 500, 'the crash must come before the deadline');
      await srv.kill();

      const restartedAt = Date.now();
      srv = await startServer({ dataDir, env });
      const restarted = (await getJson(`${srv.url}/v1/runs/${runId}`)).body;
      if (Date.now() < Date.parse(expiresAt)) {
        assert.equal(restarted.status, 'waiting-approval', 'before the deadline the gate still waits');
        assert.equal(restarted.interrupt.expiresAt, expiresAt, 'the restart did not move the deadline');
      }
      const done = await until(
        'the gate to expire after the restart',
        async () => {
          const r = (await getJson(`${srv.url}/v1/runs/${runId}`)).body;
          return r.status === 'completed' && r;
        },
        { deadlineMs: TIMEOUT_MS + 30_000, intervalMs: 100, detail: () => srv.logs().slice(-2000) },
      );
      assert.equal(done.nodeStates.review.decidedBy, 'system:timeout');

      const log = await events(srv, runId);
      assert.deepEqual(
        log.map((e) => e.sequence),
        log.map((_, i) => i),
      );
      const of = (type: string) => log.filter((e) => e.type === type);
      assert.equal(of('interrupt.requested').length, 1, 'the gate opened once');
      assert.equal(of('interrupt.resolved').length, 1, 'and was resolved once');
      const [expired] = of('interrupt.expired');
      assert.equal(expired.payload.expiresAt, expiresAt);
      const at = Date.parse(expired.timestamp);
      assert.ok(at >= Date.parse(expiresAt), `expired at ${expired.timestamp}, before ${expiresAt}`);
      assert.ok(at >= restartedAt, 'the second incarnation expired it');
    });
  });
}
