// A forEach survives crashes: a real server process is SIGKILLed twice while a core.forEach has
// children running (each a durable timer), and restarted on the same database each time. Every
// item must then have exactly one child run, each child run once, and the parent complete with
// every result in item order. The poll floor is short (HANDOFF_CHILD_POLL_MS): a child that ended
// just before a crash woke no one, and its parent finds it at its timer.
// Runs on SQLite always, and on PostgreSQL when HANDOFF_TEST_PG_URL is set (own schema per test).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import { writeChildWorkflows } from '../support/child-workflows.js';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

const PG_URL = pgTestUrl();
const pgSchemas = PG_URL ? pgTestSchemas(PG_URL, 'kids') : undefined;
const DIALECTS: Array<'sqlite' | 'postgres'> = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
const ITEMS = 12;

const dirs: string[] = [];
const workflowDir = writeChildWorkflows();

afterEach(async () => {
  await killAllServers();
});
after(async () => {
  await killAllServers();
  await pgSchemas?.dropAll();
  for (const d of [...dirs.splice(0), workflowDir]) rmSync(d, { recursive: true, force: true });
});

/** Response bodies, read field by field. */
type Json = any;

async function get(srv: ServerProcess, path: string): Promise<Json> {
  const res = await getJson(`${srv.url}${path}`);
  assert.equal(res.status, 200, `GET ${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The whole event log of a run (timeout=0 pages). */
async function allEvents(srv: ServerProcess, runId: string): Promise<Json[]> {
  const out: Json[] = [];
  for (let last = -1; ; ) {
    const page = (await get(srv, `/v1/runs/${runId}/events/poll?lastSequence=${last}&timeout=0&limit=1000`))
      .events as Json[];
    if (page.length === 0) return out;
    out.push(...page);
    last = page.at(-1).sequence;
  }
}

/** Every run of the (only) tenant, page by page. */
async function allRuns(srv: ServerProcess): Promise<Json[]> {
  const out: Json[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await get(srv, `/v1/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    out.push(...page.runs);
    if (!page.nextCursor) return out;
    cursor = page.nextCursor;
  }
}

/** A gap-free log with one run.started, and each node's (nodeId, ordinal) completed at most once. */
function assertLog(runId: string, events: Json[]): void {
  assert.deepEqual(
    events.map((e) => e.sequence),
    events.map((_, i) => i),
    `${runId}: sequences 0..n-1`,
  );
  assert.equal(events.filter((e) => e.type === 'run.started').length, 1, `${runId}: one run.started`);
  const completions = events.filter((e) => e.type === 'node.completed').map((e) => `${e.nodeId}#${e.payload.ordinal}`);
  assert.equal(new Set(completions).size, completions.length, `${runId}: no node completed twice`);
}

for (const dialect of DIALECTS) {
  describe(`child runs across crashes (${dialect})`, () => {
    it('SIGKILL twice in the middle of a forEach: one child per item, and the parent completes with \
every result', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'handoff-kids-'));
      dirs.push(dataDir);
      const env: Record<string, string> = {
        HANDOFF_WORKFLOWS: workflowDir,
        HANDOFF_CHILD_POLL_MS: '300',
        ...(dialect === 'postgres' && pgSchemas
          ? { HANDOFF_DATABASE_URL: pgSchemas.url, HANDOFF_PG_SCHEMA: pgSchemas.fresh(), HANDOFF_LEASE_MS: '1500' }
          : {}),
      };
      let srv = await startServer({ dataDir, env });
      const created = await postJson(`${srv.url}/v1/runs`, {
        workflowId: 'each-delay',
        inputs: { items: Array.from({ length: ITEMS }, (_, i) => `item-${i}`), ms: 250 },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const runId = created.body.runId as string;

      for (const startedAtLeast of [4, 8]) {
        await until(`${startedAtLeast} children started`, async () => {
          const started = (await allEvents(srv, runId)).filter((e) => e.type === 'child.started').length;
          return started >= startedAtLeast;
        });
        const snap = await get(srv, `/v1/runs/${runId}`);
        assert.notEqual(snap.status, 'completed', 'the crash lands in the middle of the forEach');
        await srv.kill();
        srv = await startServer({ dataDir, env });
      }

      const done = await until(
        'the parent to complete',
        async () => {
          const snap = await get(srv, `/v1/runs/${runId}`);
          assert.ok(!['failed', 'cancelled'].includes(snap.status), JSON.stringify(snap));
          return snap.status === 'completed' && snap;
        },
        { deadlineMs: 60_000, intervalMs: 50, detail: () => srv.logs().slice(-4000) },
      );
      const results = done.nodeStates.each.results as Json[];
      assert.equal(results.length, ITEMS);
      assert.deepEqual(
        results.map((r) => [r.status, r.output]),
        results.map((_, i) => ['completed', { index: i }]),
      );

      const children = (await allRuns(srv)).filter((r) => r.parentRunId === runId);
      assert.equal(children.length, ITEMS, 'exactly one child run per item');
      assert.deepEqual(new Set(children.map((c) => c.runId)), new Set(results.map((r) => r.runId)));
      for (const child of children) {
        assert.equal(child.status, 'completed');
        assertLog(child.runId, await allEvents(srv, child.runId));
      }
      const log = await allEvents(srv, runId);
      assertLog(runId, log);
      assert.deepEqual(
        log
          .filter((e) => e.type === 'child.started')
          .map((e) => e.payload.index)
          .sort((a: number, b: number) => a - b),
        results.map((_, i) => i),
        'each item started once in the committed log',
      );
    });
  });
}
