// A recorded outcome is stored once (issue 33, defect 7). A real `handoff serve` on SQLite and on
// PostgreSQL calls a loopback server that answers 24 MB to an http.request node, and an
// @a2a-js/sdk agent that answers with a 3 MB artifact to an a2a.invoke node (its output is the
// run's artifact: the answer is held by the node's output, node.completed, artifact.created and
// run.completed). Random text, so that PostgreSQL's compression cannot make copies look small.
// - the database grows by about the answers (SQLite: its pages; PostgreSQL: the relations' size),
//   and the snapshot and the log of each run hold a few kilobytes;
// - the server's RSS grows by less than 5× the 24 MB answer (3.4–4.1× measured: the answer's
//   bytes, its text and its parsed value, before the garbage collector takes the first two;
//   before, 14×);
// - each run reads back whole.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { node } from '../support/call-workflows.js';
import { pgTestSchemas, pgTestUrl, withClient } from '../support/pg.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

const MB = 1024 * 1024;
const ANSWER_CHARS = 24 * MB;
const ARTIFACT_CHARS = 3_000_000;
const PG_URL = pgTestUrl();
const schemas = PG_URL ? pgTestSchemas(PG_URL, 'handoff_test_recorded') : undefined;
const dirs: string[] = [];

const randomText = (chars: number) =>
  randomBytes(Math.ceil((chars * 3) / 4))
    .toString('base64')
    .slice(0, chars);

/** Answers /big with a JSON body of ANSWER_CHARS characters, /small with a short one. */
async function answering(): Promise<{ url: string; big: string; server: Server }> {
  const big = randomText(ANSWER_CHARS - 20);
  const bodies = { big: Buffer.from(JSON.stringify({ data: big })), small: Buffer.from('{"data":"warm"}') };
  const server = createServer((req, res) => {
    req.resume();
    const body = req.url?.includes('big') ? bodies.big : bodies.small;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, big, server };
}

const workflow = (id: string, nodes: object[], edges: object[] = []) => ({
  id,
  name: id,
  version: '1',
  inputSchema: { type: 'object', properties: { url: { type: 'string' } } },
  nodes,
  edges,
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});

function writeWorkflows(): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-recorded-wf-'));
  dirs.push(dir);
  const fetch = node('fetch', 'http.request', {
    method: 'GET',
    url: '{{ inputs.url }}',
    responseLimitBytes: 32 * MB,
  });
  const next = node('after', 'core.transform', { output: { ok: true } });
  writeFileSync(
    join(dir, 'fetch.json'),
    JSON.stringify(workflow('fetch', [fetch, next], [{ id: 'e', sourceNodeId: 'fetch', targetNodeId: 'after' }])),
  );
  const call = node(
    'call',
    'a2a.invoke',
    { agent: 'peer', skill: 'large', text: String(ARTIFACT_CHARS), wait: 'poll', timeoutMs: 60_000 },
    { outputRole: 'artifact' },
  );
  writeFileSync(join(dir, 'peer.json'), JSON.stringify(workflow('peer', [call])));
  return dir;
}

/** RSS now and its peak so far, in bytes, of a process of this machine. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(status.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Start a run and wait for it to complete, by the metric (reading the run would read its answer). */
async function runToEnd(srv: ServerProcess, workflowId: string, inputs: object, finished: number): Promise<string> {
  const created = await postJson(`${srv.url}/v1/runs`, { workflowId, inputs });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await until(
    `run ${created.body.runId} to end`,
    async () => {
      const metrics = (await getJson(`${srv.url}/metrics`)).body as string;
      const ended = [...metrics.matchAll(/^handoff_runs_finished_total\{[^}]*\} (\d+)/gm)];
      return ended.reduce((n, m) => n + Number(m[1]), 0) >= finished;
    },
    { deadlineMs: 120_000, intervalMs: 200 },
  );
  return created.body.runId as string;
}

/** Per run: characters of its stored parts, and of its snapshot and log rows. */
type PerRun = Map<string, { parts: number; rows: number }>;

const PER_RUN = `select r."run_id",
  (select coalesce(sum(length(v."value")), 0) from "run_values" v where v."run_id" = r."run_id") as "parts",
  length(r."state") + (select coalesce(sum(length(b."events")), 0) from "event_batches" b where b."run_id" = r."run_id")
    as "rows"
  from "runs" r`;

const perRun = (rows: Array<{ run_id: string; parts: unknown; rows: unknown }>) =>
  new Map(rows.map((r) => [r.run_id, { parts: Number(r.parts), rows: Number(r.rows) }]));

/** What a SQLite file holds: the bytes of its pages in use, and per run. */
function sqliteSizes(file: string): { total: number; runs: () => PerRun } {
  const db = new Database(file, { readonly: true });
  const pages =
    Number(db.pragma('page_count', { simple: true })) - Number(db.pragma('freelist_count', { simple: true }));
  return {
    total: pages * Number(db.pragma('page_size', { simple: true })),
    runs: () => {
      try {
        return perRun(db.prepare(PER_RUN).all() as Array<{ run_id: string; parts: unknown; rows: unknown }>);
      } finally {
        db.close();
      }
    },
  };
}

/** What a PostgreSQL schema holds: the bytes of its relations (indexes and TOAST included), and per run. */
async function pgSizes(schema: string): Promise<{ total: number; runs: () => Promise<PerRun> }> {
  const { rows } = await withClient(PG_URL as string, (client) =>
    client.query(
      `select coalesce(sum(pg_total_relation_size(c.oid)), 0) as "total" from pg_class c
        join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relkind = 'r'`,
      [schema],
    ),
  );
  return {
    total: Number(rows[0].total),
    runs: () =>
      withClient(PG_URL as string, async (client) => {
        await client.query(`set search_path = ${schema}`);
        return perRun((await client.query(PER_RUN)).rows);
      }),
  };
}

after(async () => {
  await killAllServers();
  await schemas?.dropAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

for (const dialect of ['sqlite', 'postgres'] as const) {
  const skip = dialect === 'postgres' && !PG_URL ? 'HANDOFF_TEST_PG_URL is not set' : false;

  describe(`recorded outcomes are stored once, on ${dialect}`, { skip }, () => {
    let answers: Awaited<ReturnType<typeof answering>> | undefined;
    let agent: SdkV1Agent | undefined;
    after(async () => {
      answers?.server.close();
      await agent?.close();
    });

    it('a 24 MB http.request answer and a 3 MB peer artifact: the database grows by about 1× each, RSS by < 5×', async () => {
      answers = await answering();
      agent = await startSdkV1Agent();
      const dataDir = mkdtempSync(join(tmpdir(), 'handoff-recorded-'));
      dirs.push(dataDir);
      const schema = schemas?.fresh();
      const database =
        dialect === 'postgres' ? { HANDOFF_DATABASE_URL: PG_URL as string, HANDOFF_PG_SCHEMA: schema as string } : {};
      const srv = await startServer({
        dataDir,
        env: {
          ...database,
          HANDOFF_WORKFLOWS: writeWorkflows(),
          HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1',
          HANDOFF_AGENTS: `peer=${agent.url}`,
          HANDOFF_AGENT_POLL_MIN_MS: '50',
          HANDOFF_AGENT_POLL_MAX_MS: '250',
        },
      });
      // A first call makes the server load and compile what a call needs: not counted.
      await runToEnd(srv, 'fetch', { url: `${answers.url}/small` }, 1);
      const before = dialect === 'postgres' ? await pgSizes(schema as string) : undefined;
      const rssBefore = memory(srv.pid).rss;
      const fetched = await runToEnd(srv, 'fetch', { url: `${answers.url}/big` }, 2);
      const grown = memory(srv.pid).peak - rssBefore;
      const called = await runToEnd(srv, 'peer', {}, 3);

      // Each reads back whole: the snapshot (nodeStates) and the log.
      const fetchRun = (await getJson(`${srv.url}/v1/runs/${fetched}`)).body;
      assert.equal(fetchRun.status, 'completed', JSON.stringify(fetchRun.error));
      assert.equal(fetchRun.nodeStates.fetch.body.data, answers.big);
      const log = (await getJson(`${srv.url}/v1/runs/${fetched}/events/poll?lastSequence=-1&timeout=0`)).body;
      const completed = log.events.find(
        (e: { type: string; nodeId?: string }) => e.type === 'node.completed' && e.nodeId === 'fetch',
      );
      assert.equal(completed.payload.outcome.body.data, answers.big, 'the replay cache holds the answer');
      const callRun = (await getJson(`${srv.url}/v1/runs/${called}`)).body;
      assert.equal(callRun.status, 'completed', JSON.stringify(callRun.error));
      const artifact = callRun.nodeStates.call.artifacts[0].parts[0].text as string;
      assert.equal(artifact.length, ARTIFACT_CHARS);

      await srv.stop();
      const sizes = dialect === 'postgres' ? await pgSizes(schema as string) : sqliteSizes(join(dataDir, 'handoff.db'));
      const growth = sizes.total - (before?.total ?? 0);
      const stored = ANSWER_CHARS + ARTIFACT_CHARS;
      assert.ok(growth < stored * 1.2 + 2 * MB, `the database grew by ${(growth / MB).toFixed(1)} MB`);
      assert.ok(grown < 5 * ANSWER_CHARS, `RSS grew by ${(grown / MB).toFixed(0)} MB for a 24 MB answer`);
      const runs = await sizes.runs();
      const answer = JSON.stringify({ status: 200, headers: {}, body: { data: answers.big } }).length;
      for (const [runId, chars] of [
        [fetched, answer],
        [called, ARTIFACT_CHARS],
      ] as const) {
        const run = runs.get(runId);
        assert.ok(run, `run ${runId} is stored`);
        assert.ok(run.parts >= chars && run.parts < chars * 1.01, `run ${runId}: parts of ${run.parts} for ${chars}`);
        assert.ok(run.rows < 16_000, `run ${runId}: its snapshot and log hold ${run.rows} characters`);
      }
    });
  });
}
