// A Handoff cluster for the benchmark: N `dist/src/cli/main.js serve` processes on one PostgreSQL,
// sharing a fresh throwaway schema (HANDOFF_PG_SCHEMA, dropped by stop()), the same
// HANDOFF_SECRET_KEY, each with its own --data dir, port and HANDOFF_INSTANCE_ID.
//
//   const c = await startCluster(3, { HANDOFF_LEASE_MS: '2000' });
//   c.instances[0].base            // http://127.0.0.1:port
//   const off = await c.listen((n) => …);   // every commit's NOTIFY: {origin, runId, status, lastSeq}
//   c.instances[0].kill();         // SIGKILL, for takeover measurements
//   await c.stop();                // SIGTERM the rest, drop the schema
//
// Unlike the single-server scenarios, the instances are NOT pinned to core 0: N processes on one
// core would measure nothing but that core. They (and PostgreSQL) may use every core; the
// harness's load generator stays pinned to core 1 (run.ts pinSelf), so it shares that core.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cleanEnv, ROOT } from './env.js';
import { MAIN_JS, PG_URL } from './handoff-server.js';
import { canPin, freePort, readCpuUs, startServer } from './proc.js';

export interface ClusterInstance {
  /** HANDOFF_INSTANCE_ID: what the store writes as lease owner and the bus as notice origin. */
  id: string;
  /** http://127.0.0.1:port */
  base: string;
  pid: number;
  /** Spawn → /healthz answers 2xx. */
  startMs: number;
  /** SIGKILL now (no shutdown: leases stay as they are until they expire). */
  kill(): void;
  killed: boolean;
  /** CPU time so far in µs (NaN once the process is gone). */
  cpuUs(): number;
}

/** One NOTIFY of Handoff's PostgreSQL bus (src/bus/pg.ts): one per committed run change. */
export interface Notice {
  /** Instance that committed the change. */
  origin: string;
  runId: string;
  status: string;
  lastSeq: number;
  /** performance.now() when the harness received it. */
  at: number;
}

export interface Cluster {
  schema: string;
  instances: ClusterInstance[];
  /** Wall time to start all instances (in parallel, migrations included). */
  startMs: number;
  /** A client of the shared database (search_path = the cluster's schema) for read-only probes. */
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
  /** LISTEN on the cluster's bus channel; resolves once listening; returns the unlisten. */
  listen(fn: (n: Notice) => void): Promise<() => Promise<void>>;
  /** PostgreSQL backend pids serving the instances (found by application_name). */
  backendPids(): Promise<number[]>;
  stop(): Promise<void>;
}

/** The 32-byte vault key every instance must share (base64), one per cluster. */
const secretKey = (): string => randomBytes(32).toString('base64');

async function withClient<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * startServer() pins its child to core 0 with `taskset -c 0 <cmd>`. A cluster's instances must be
 * free to use every core, so the command is itself `taskset -c 0-<n-1> node …`: the inner taskset
 * widens the affinity again and execs node (both exec, so the pid is still the server's).
 */
function unpinned(argv: string[]): { command: string; args: string[] } {
  if (!canPin()) return { command: argv[0] as string, args: argv.slice(1) };
  return { command: 'taskset', args: ['-c', `0-${cpus().length - 1}`, ...argv] };
}

/** Start `n` instances on a fresh schema (all at once), or throw after cleaning up. */
export async function startCluster(n: number, extraEnv: Record<string, string> = {}): Promise<Cluster> {
  const schema = `bench_cluster_${process.pid}_${randomBytes(4).toString('hex')}`;
  const appName = `handoff_${schema}`;
  const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${appName}`;
  const key = secretKey();
  const dirs: string[] = [];
  const stops: Array<() => Promise<void>> = [];
  const dropSchema = (): Promise<void> =>
    withClient(async (c) => void (await c.query(`drop schema if exists ${schema} cascade`)));
  const cleanup = async (): Promise<void> => {
    await Promise.allSettled(stops.map((s) => s()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await dropSchema();
  };

  const startOne = async (i: number): Promise<ClusterInstance> => {
    const id = `bench-i${i + 1}`;
    const dataDir = mkdtempSync(join(tmpdir(), `handoff-bench-cluster-${i + 1}-`));
    dirs.push(dataDir);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const t0 = performance.now();
    const proc = await startServer({
      ...unpinned([process.execPath, MAIN_JS, 'serve', '--port', String(port), '--data', dataDir]),
      cwd: ROOT,
      env: cleanEnv({
        HANDOFF_DATABASE_URL: url,
        HANDOFF_PG_SCHEMA: schema,
        HANDOFF_SECRET_KEY: key,
        HANDOFF_INSTANCE_ID: id,
        ...extraEnv,
      }),
      readyUrl: `${base}/healthz`,
      readyTimeoutMs: 30_000,
    });
    stops.push(() => proc.stop());
    const inst: ClusterInstance = {
      id,
      base,
      pid: proc.pid,
      startMs: performance.now() - t0,
      killed: false,
      kill: () => {
        inst.killed = true;
        process.kill(proc.pid, 'SIGKILL');
      },
      cpuUs: () => {
        try {
          return readCpuUs(proc.pid);
        } catch {
          return NaN;
        }
      },
    };
    return inst;
  };

  const t0 = performance.now();
  const started = await Promise.allSettled(Array.from({ length: n }, (_, i) => startOne(i)));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await cleanup().catch(() => {});
    throw failed.reason;
  }
  const startMs = performance.now() - t0;
  const instances = started
    .map((r) => (r as PromiseFulfilledResult<ClusterInstance>).value)
    .sort((a, b) => a.id.localeCompare(b.id));

  // One long-lived client for probes (not counted as Handoff's backends: other application_name).
  const probe = new pg.Client({
    connectionString: `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=bench_probe_${schema}`,
    connectionTimeoutMillis: 3000,
  });
  await probe.connect().catch(async (err: unknown) => {
    await cleanup().catch(() => {});
    throw err;
  });
  await probe.query(`set search_path to ${schema}`);
  const listeners: pg.Client[] = [];

  return {
    schema,
    instances,
    startMs,
    query: async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) =>
      (await probe.query<R>(sql, params)).rows,
    listen: async (fn) => {
      const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
      await client.connect();
      listeners.push(client);
      client.on('notification', (msg) => {
        const [origin, runId, , status, lastSeq] = (msg.payload ?? '').split('|');
        if (origin && runId && status) fn({ origin, runId, status, lastSeq: Number(lastSeq), at: performance.now() });
      });
      await client.query(`listen handoff_runs_${schema}`);
      return async () => {
        listeners.splice(listeners.indexOf(client), 1);
        await client.end().catch(() => {});
      };
    },
    backendPids: async () => {
      const r = await probe.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
        appName,
      ]);
      return r.rows.map((row) => Number(row.pid));
    },
    stop: async () => {
      await Promise.allSettled(listeners.map((c) => c.end()));
      await probe.end().catch(() => {});
      await cleanup();
    },
  };
}
