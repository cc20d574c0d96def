// Handoff servers the scenarios start themselves, when the harness's `handoff` target (a fresh,
// empty SQLite dir, no extra settings) is not what they need: on SQLite with a given data dir
// (seeded beforehand) or extra HANDOFF_* settings, or on PostgreSQL in a throwaway schema that is
// dropped afterwards. Same binary and pinning as the harness target: compiled dist/src/cli/main.js
// `serve`, core 0, ready when /healthz answers 2xx.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cleanEnv, ROOT } from './env.js';
import { freePort, startServer } from './proc.js';

export interface HandoffServer {
  /** http://127.0.0.1:port */
  base: string;
  pid: number;
  pinned: boolean;
  /** PostgreSQL backend pids serving this server (empty on SQLite). */
  backendPids(): Promise<number[]>;
  stop(): Promise<void>;
}

/** PostgreSQL the scenarios use (the URL; override with HANDOFF_BENCH_PG_URL). */
export const PG_URL = process.env.HANDOFF_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const MAIN_JS = join(ROOT, 'dist/src/cli/main.js');

/**
 * HANDOFF_BENCH_CPU_PROF=<dir>: every Handoff server the bench starts writes a V8 CPU profile
 * there when it stops (`node --cpu-prof`; open it in Chrome DevTools). Off by default: profiling
 * costs CPU and would skew the figures it sits beside.
 */
export function profileArgs(): string[] {
  const dir = process.env.HANDOFF_BENCH_CPU_PROF;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

async function spawnHandoff(
  dataDir: string,
  env: Record<string, string>,
  tls?: TlsFiles,
): Promise<{ base: string; pid: number; pinned: boolean; stop(): Promise<void> }> {
  if (!existsSync(MAIN_JS)) throw new Error('dist/src/cli/main.js not built (npm run build)');
  const port = await freePort();
  const base = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  // Served over https, the server's public URL is its own https address (push callbacks need one).
  const tlsEnv: Record<string, string> = tls
    ? { HANDOFF_TLS_CERT: tls.certFile, HANDOFF_TLS_KEY: tls.keyFile, HANDOFF_PUBLIC_URL: base }
    : {};
  const proc = await startServer({
    command: process.execPath,
    args: [...profileArgs(), MAIN_JS, 'serve', '--port', String(port), '--data', dataDir],
    cwd: ROOT,
    env: cleanEnv({ ...env, ...tlsEnv }),
    readyUrl: `${base}/healthz`,
    readyTimeoutMs: 30_000,
  });
  return { base, pid: proc.pid, pinned: proc.pinned, stop: () => proc.stop() };
}

/** A PEM certificate and key for 127.0.0.1, of a CA the harness trusts (lib/http.ts trustCa). */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface SqliteOptions {
  /** Serve https with this certificate (base is then https://…, and so is HANDOFF_PUBLIC_URL). */
  tls?: TlsFiles;
  /** A data dir to use as it is (e.g. seeded beforehand), left alone by stop(); default: a fresh
   * temp dir, removed by stop(). */
  dataDir?: string;
  /** HANDOFF_* settings for this server (every other HANDOFF_* variable is removed). */
  env?: Record<string, string>;
}

/** Handoff on SQLite (its file is `<dataDir>/handoff.db`). */
export async function startHandoffSqlite(opts: SqliteOptions = {}): Promise<HandoffServer> {
  const own = opts.dataDir === undefined ? mkdtempSync(join(tmpdir(), 'handoff-bench-')) : undefined;
  const removeOwn = (): void => {
    if (own) rmSync(own, { recursive: true, force: true });
  };
  try {
    const s = await spawnHandoff(opts.dataDir ?? (own as string), opts.env ?? {}, opts.tls);
    const stop = async (): Promise<void> => {
      try {
        await s.stop();
      } finally {
        removeOwn();
      }
    };
    return { ...s, backendPids: async () => [], stop };
  } catch (err) {
    removeOwn();
    throw err;
  }
}

export interface PgInfo {
  version: string;
  settings: string;
}

/** Version and durability settings of the PostgreSQL at PG_URL; throws if unreachable. */
export async function probePg(): Promise<PgInfo> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const v = await client.query<{ v: string }>('select version() as v');
    const settings: string[] = [];
    for (const name of ['synchronous_commit', 'fsync', 'wal_sync_method']) {
      const r = await client.query<Record<string, string>>(`show ${name}`);
      settings.push(`${name}=${Object.values(r.rows[0] ?? {})[0] ?? '?'}`);
    }
    return { version: (v.rows[0]?.v ?? '?').split(' on ')[0] ?? '?', settings: settings.join(', ') };
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(`drop schema if exists ${schema} cascade`);
  } finally {
    await client.end();
  }
}

/**
 * Handoff on PostgreSQL (HANDOFF_DATABASE_URL = PG_URL, HANDOFF_PG_SCHEMA = a fresh
 * `bench_…` schema). Its connections carry a unique application_name so the backends serving it
 * can be found in pg_stat_activity (their CPU is part of the cost of a request). stop() stops the
 * server, then drops the schema.
 */
export async function startHandoffPg(): Promise<HandoffServer & { schema: string }> {
  const schema = `bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const appName = `handoff_${schema}`;
  const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${appName}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'handoff-bench-pg-'));
  const cleanup = async (): Promise<void> => {
    rmSync(dataDir, { recursive: true, force: true });
    await dropSchema(schema);
  };
  let s: Awaited<ReturnType<typeof spawnHandoff>>;
  try {
    s = await spawnHandoff(dataDir, { HANDOFF_DATABASE_URL: url, HANDOFF_PG_SCHEMA: schema });
  } catch (err) {
    await cleanup().catch(() => {});
    throw err;
  }
  const server = s;
  const backendPids = async (): Promise<number[]> => {
    const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
    await client.connect();
    try {
      const r = await client.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
        appName,
      ]);
      return r.rows.map((row) => Number(row.pid));
    } finally {
      await client.end();
    }
  };
  return {
    ...server,
    schema,
    backendPids,
    stop: async () => {
      try {
        await server.stop();
      } finally {
        await cleanup();
      }
    },
  };
}

/**
 * Handoff on an existing PostgreSQL schema (created by an earlier server or a seeding), left in
 * place by stop(): several servers may join the same schema, one after another or together.
 */
export async function startHandoffOnPgSchema(schema: string, env: Record<string, string> = {}): Promise<HandoffServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'handoff-bench-pg-'));
  try {
    const s = await spawnHandoff(dataDir, { ...env, HANDOFF_DATABASE_URL: PG_URL, HANDOFF_PG_SCHEMA: schema });
    const stop = async (): Promise<void> => {
      try {
        await s.stop();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    };
    return { ...s, backendPids: async () => [], stop };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
