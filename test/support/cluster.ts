// Several real Handoff server processes on ONE PostgreSQL schema, for end-to-end tests of the
// multi-instance deployment (docs/operations.md): stateless host processes share the database,
// claim runs with leases, and fan events out with LISTEN/NOTIFY.
//
//   const cluster = await startCluster({ pgUrl, schema, names: ['a', 'b', 'c'], env: pushEnv });
//   const [a, b, c] = cluster.nodes;                    // ClusterNode: ServerProcess + its name
//   await rpcOk(b, 'tasks/get', { id });                 // JSON-RPC with the cluster's API key
//   const held = await cluster.leasesHeldBy('a', runIds); // white-box: runs.lease_owner in PG
//   await cluster.close();                               // SIGKILL all, end the PG client
//
// Every instance gets the same database URL, schema, vault key (HANDOFF_SECRET_KEY: any instance
// must decrypt a push token another one stored) and API keys, its own HANDOFF_INSTANCE_ID and data
// dir, and a short lease and poll so a dead instance's runs are retaken within seconds.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { getJson, httpJson, type ServerProcess, startServer } from './server-process.js';
import { until } from './until.js';

/** Polling with a deadline, re-exported for the cluster tests. */
export { until };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** The one API key of the cluster's tests (tenant t1, principal alice). */
export const CLUSTER_KEY = 'key-multi-alice-0001';
export const CLUSTER_API_KEYS = `${CLUSTER_KEY}=t1:alice`;

export interface ClusterNode extends ServerProcess {
  /** The HANDOFF_INSTANCE_ID of this process (also the lease owner it writes). */
  name: string;
}

export interface ClusterOptions {
  pgUrl: string;
  /** The PostgreSQL schema every instance shares (made unique by the caller, dropped by it). */
  schema: string;
  /** Instance ids, one process each, started in parallel. */
  names: string[];
  /** Extra environment for every instance (after the defaults below, so it may override them). */
  env?: Record<string, string>;
}

export interface Cluster {
  nodes: ClusterNode[];
  node(name: string): ClusterNode;
  /** The vault key all instances share (base64 of 32 bytes). */
  secretKey: string;
  /** Runs of `runIds` whose lease `owner` holds now (lease_owner = owner), with status. */
  leasesHeldBy(
    owner: string,
    runIds: readonly string[],
  ): Promise<Array<{ runId: string; status: string; leaseExpiresAt: number }>>;
  /** Push outbox rows of `taskIds` leased by `owner`. */
  pushLeasesHeldBy(
    owner: string,
    taskIds: readonly string[],
  ): Promise<Array<{ deliveryId: string; taskId: string; state: string }>>;
  /** SIGKILL every instance still running and release the PG client (the schema stays). */
  close(): Promise<void>;
}

/** Default environment of every instance; HANDOFF_INSTANCE_ID is added per instance. */
export function clusterEnv(opts: { pgUrl: string; schema: string; secretKey: string }): Record<string, string> {
  return {
    HANDOFF_DATABASE_URL: opts.pgUrl,
    HANDOFF_PG_SCHEMA: opts.schema,
    HANDOFF_SECRET_KEY: opts.secretKey,
    HANDOFF_API_KEYS: CLUSTER_API_KEYS,
    // A crashed holder's runs are retaken 1.5 s after its last renewal; due timers and expired
    // leases are looked for at least every 200 ms even when no NOTIFY arrives.
    HANDOFF_LEASE_MS: '1500',
    HANDOFF_POLL_MS: '200',
    HANDOFF_SSE_KEEPALIVE_MS: '500',
  };
}

export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const secretKey = randomBytes(32).toString('base64');
  const base = clusterEnv({ pgUrl: opts.pgUrl, schema: opts.schema, secretKey });
  const dirs: string[] = [];
  const client = new pg.Client({ connectionString: opts.pgUrl });
  await client.connect();
  const started = await Promise.allSettled(
    opts.names.map(async (name): Promise<ClusterNode> => {
      const dataDir = mkdtempSync(join(tmpdir(), `handoff-multi-${name}-`));
      dirs.push(dataDir);
      const srv = await startServer({ dataDir, env: { ...base, ...(opts.env ?? {}), HANDOFF_INSTANCE_ID: name } });
      return Object.assign(srv, { name });
    }),
  );
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const close = async () => {
    await Promise.all(nodes.map((n) => n.kill()));
    await client.end().catch(() => {});
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  };
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await close();
    throw failed.reason;
  }
  const table = (t: string) => `${pg.escapeIdentifier(opts.schema)}.${pg.escapeIdentifier(t)}`;
  return {
    nodes,
    node(name) {
      const n = nodes.find((x) => x.name === name);
      assert.ok(n, `no instance ${name}`);
      return n;
    },
    secretKey,
    async leasesHeldBy(owner, runIds) {
      const res = await client.query(
        `select run_id, status, lease_expires_at from ${table('runs')}` +
          ' where lease_owner = $1 and run_id = any($2::text[])',
        [owner, [...runIds]],
      );
      return res.rows.map((r) => ({
        runId: String(r.run_id),
        status: String(r.status),
        leaseExpiresAt: Number(r.lease_expires_at),
      }));
    },
    async pushLeasesHeldBy(owner, taskIds) {
      const res = await client.query(
        `select delivery_id, task_id, state from ${table('push_outbox')}` +
          ' where lease_owner = $1 and task_id = any($2::text[])',
        [owner, [...taskIds]],
      );
      return res.rows.map((r) => ({
        deliveryId: String(r.delivery_id),
        taskId: String(r.task_id),
        state: String(r.state),
      }));
    },
    close,
  };
}

// ---------------------------------------------------------------------------------------------
// REST and A2A calls with the cluster's key

const auth = { token: CLUSTER_KEY };

let rpcSeq = 0;
/** One JSON-RPC call to /v1/a2a; returns the whole response body. */
export async function rpc(srv: ServerProcess, method: string, params: unknown): Promise<Json> {
  const id = ++rpcSeq;
  const res = await httpJson('POST', `${srv.url}/v1/a2a`, { jsonrpc: '2.0', id, method, params }, auth);
  assert.equal(res.status, 200, `${method} on ${srv.url}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal(res.body.id, id);
  return res.body;
}

/** A JSON-RPC call that must succeed; returns its `result`. */
export async function rpcOk(srv: ServerProcess, method: string, params: unknown): Promise<Json> {
  const body = await rpc(srv, method, params);
  assert.ok(!body.error, `${method} on ${srv.url}: ${JSON.stringify(body.error)}`);
  return body.result;
}

export const userMessage = (parts: Json[], extra: Record<string, unknown> = {}): Json => ({
  kind: 'message',
  role: 'user',
  messageId: `m-${randomUUID()}`,
  parts,
  ...extra,
});

/** A message that starts the skill `skillId` with `data` as its inputs. */
export const skillData = (skillId: string, data: Record<string, unknown>): Json =>
  userMessage([{ kind: 'data', data }], { metadata: { skillId } });

/** A reply to `task` (resolves its open interrupt), e.g. `{ action: 'accept' }`. */
export const reply = (task: Json, data: Record<string, unknown>): Json =>
  userMessage([{ kind: 'data', data }], { taskId: task.id, contextId: task.contextId });

/** POST /v1/runs; returns the run id. */
export async function startRun(
  srv: ServerProcess,
  workflowId: string,
  inputs: Record<string, unknown>,
): Promise<string> {
  const res = await httpJson('POST', `${srv.url}/v1/runs`, { workflowId, inputs }, auth);
  assert.equal(res.status, 201, `POST /v1/runs on ${srv.url}: ${JSON.stringify(res.body)}`);
  return res.body.runId as string;
}

export async function getRun(srv: ServerProcess, runId: string): Promise<Json> {
  const res = await getJson(`${srv.url}/v1/runs/${runId}`, auth);
  assert.equal(res.status, 200, `GET /v1/runs/${runId} on ${srv.url}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A run event as GET /v1/runs/{id}/events/poll returns it. */
export interface RunEventDoc {
  runId: string;
  type: string;
  sequence: number;
  nodeId?: string;
  payload: Json;
  timestamp: string;
}

/** The whole event log of a run as it is now (paged, never long-polling). */
export async function runEvents(srv: ServerProcess, runId: string): Promise<RunEventDoc[]> {
  const out: RunEventDoc[] = [];
  for (let after = -1; ; ) {
    const res = await getJson(
      `${srv.url}/v1/runs/${runId}/events/poll?lastSequence=${after}&timeout=0&limit=1000`,
      auth,
    );
    assert.equal(res.status, 200, `events of ${runId} on ${srv.url}: ${JSON.stringify(res.body)}`);
    const events = res.body.events as RunEventDoc[];
    out.push(...events);
    if (events.length < 1000) return out;
    after = events.at(-1)!.sequence;
  }
}

export async function deliveries(srv: ServerProcess, taskId: string): Promise<Json[]> {
  const res = await getJson(`${srv.url}/v1/a2a/deliveries?taskId=${encodeURIComponent(taskId)}`, auth);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.deliveries as Json[];
}

export interface MetricSample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of metric `name` whose labels include `labels`, from the instance's GET /metrics. */
export async function metricSamples(
  srv: ServerProcess,
  name: string,
  labels: Record<string, string> = {},
): Promise<MetricSample[]> {
  const res = await getJson<string>(`${srv.url}/metrics`, auth);
  assert.equal(res.status, 200);
  const out: MetricSample[] = [];
  for (const line of String(res.body).split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) out.push({ labels: got, value: Number(m[3]) });
  }
  return out;
}

/** The sum of a Prometheus counter over the label sets matching `labels`. */
export async function counter(srv: ServerProcess, name: string, labels: Record<string, string> = {}): Promise<number> {
  return (await metricSamples(srv, name, labels)).reduce((sum, s) => sum + s.value, 0);
}

/**
 * What a correct log of one run looks like whatever crashed: sequences 0..n-1, one `run.started`,
 * each (node, ordinal) started and completed at most once, one terminal event and it is last.
 * Returns the node.completed counts per node id.
 */
export function assertCleanLog(log: readonly RunEventDoc[], label: string): Map<string, number> {
  assert.deepEqual(
    log.map((e) => e.sequence),
    log.map((_, i) => i),
    `${label}: the log is gap-free from 0`,
  );
  const types = log.map((e) => e.type);
  assert.equal(types.filter((t) => t === 'run.started').length, 1, `${label}: run.started exactly once`);
  const terminal = types.filter((t) => t === 'run.completed' || t === 'run.failed' || t === 'run.cancelled');
  assert.deepEqual(terminal, ['run.completed'], `${label}: one run.completed`);
  assert.equal(types.at(-1), 'run.completed', `${label}: run.completed is the last event`);
  for (const kind of ['node.started', 'node.completed']) {
    const keys = log.filter((e) => e.type === kind).map((e) => `${e.nodeId}#${e.payload?.ordinal}`);
    const dup = keys.filter((k, i) => keys.indexOf(k) !== i);
    assert.deepEqual(dup, [], `${label}: a node execution was recorded twice as ${kind}: ${dup.join(', ')}`);
  }
  const completed = new Map<string, number>();
  for (const e of log)
    if (e.type === 'node.completed' && e.nodeId) completed.set(e.nodeId, (completed.get(e.nodeId) ?? 0) + 1);
  return completed;
}
