// A real Handoff server in a child process, for end-to-end tests that crash and restart it.
// It runs the COMPILED CLI (dist/src/cli/main.js), so `npm test` exercises what ships.
//
//   const srv = await startServer({ dataDir });        // free port, waits for GET /healthz → 200
//   const { body } = await getJson(`${srv.url}/v1/runs/${id}`);
//   await srv.kill();                                   // SIGKILL: a crash, nothing drains
//   const exit = await srv.stop();                      // SIGTERM: graceful drain; exit.code 0
//   after(() => killAllServers());                      // no orphan processes, whatever failed
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { until } from './until.js';

/** The directory holding package.json, found by walking up from this (compiled) file. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 10; i++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
}

/** The compiled CLI entry point; `npx tsc -p tsconfig.json` must have run. */
export function cliPath(): string {
  const main = join(repoRoot(), 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx tsc -p tsconfig.json\` first`);
  return main;
}

/**
 * A loopback port nothing listens on, for "connection refused" tests. It is below the kernel's
 * ephemeral range (which starts at 32768 by default), which every `listen(0)` is given a port
 * from: no server a test starts later can take it, as one can take a port `freePort` found free
 * a moment before.
 */
export async function closedPort(): Promise<number> {
  const low = Math.min(ephemeralLow(), 32768);
  for (let tries = 0; tries < 100; tries++) {
    const port = 20000 + Math.floor(Math.random() * (low - 20000));
    if (await canListen(port)) return port;
  }
  throw new Error(`no port between 20000 and ${low} is free on 127.0.0.1`);
}

/** The first port of Linux's ephemeral range (32768 where it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 20001 ? low : 32768;
  } catch {
    return 32768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A loopback port that was free a moment ago (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port assigned'))));
    });
  });
}

export interface StartServerOptions {
  /** SQLite lives here (`--data`); also required with PostgreSQL, where it stays empty. */
  dataDir: string;
  /** Added to the child's environment (after HANDOFF_LOG_LEVEL=warn and HANDOFF_PG_POOL_SIZE=4, so it may
   * override them). */
  env?: Record<string, string | undefined>;
  /** Fixed port; by default a free one is picked. */
  port?: number;
  /** How long to wait for GET /healthz → 200 (default 20 s). */
  readyTimeoutMs?: number;
  /** The server serves https (HANDOFF_TLS_CERT/KEY in `env`): its URL and health check use it, trusting `ca`. */
  https?: { ca: string };
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  pid: number;
  child: ChildProcess;
  /** Resolves when the process has exited (never rejects). */
  exited: Promise<ExitInfo>;
  /** Send `signal` (default SIGTERM) and wait for the exit; SIGKILL after `timeoutMs` (default 20 s). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitInfo>;
  /** SIGKILL — a crash — and wait for the exit. */
  kill(): Promise<ExitInfo>;
  /** The child's captured stdout and stderr (the last 256 KiB). */
  logs(): string;
}

const live = new Set<ServerProcess>();
const LOG_CAP = 256 * 1024;

/** SIGKILL every server this process started that is still running. For `after` hooks. */
export async function killAllServers(): Promise<void> {
  await Promise.all([...live].map((s) => s.kill()));
}

// Last resort when a test file dies without running its hooks: never leave a server behind.
process.once('exit', () => {
  for (const s of live) {
    try {
      s.child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Start the compiled `handoff serve` and wait until it answers GET /healthz with 200. */
export async function startServer(opts: StartServerOptions): Promise<ServerProcess> {
  // A port picked by us may be taken by someone else before the child binds it: retry with a
  // fresh one when that is why the child died (never when the caller fixed the port).
  const attempts = opts.port === undefined ? 3 : 1;
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const port = opts.port ?? (await freePort());
    try {
      return await startOnce(opts, port);
    } catch (err) {
      lastError = err as Error;
      if (!/EADDRINUSE/.test(lastError.message)) throw lastError;
    }
  }
  throw lastError ?? new Error('server did not start');
}

async function startOnce(opts: StartServerOptions, port: number): Promise<ServerProcess> {
  // The test decides the configuration: drop HANDOFF_* inherited from the caller's shell.
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANDOFF_')) env[k] = v;
  env.HANDOFF_LOG_LEVEL = 'warn';
  // Test files run two at a time, some with several servers: keep well under max_connections.
  env.HANDOFF_PG_POOL_SIZE = '4';
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }

  const child = spawn(process.execPath, [cliPath(), 'serve', '--port', String(port), '--data', opts.dataDir], {
    cwd: repoRoot(),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const capture = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    if (output.length > LOG_CAP) output = output.slice(-LOG_CAP);
  };
  child.stdout?.on('data', capture);
  child.stderr?.on('data', capture);

  let exitInfo: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
    child.once('error', (err) => {
      capture(Buffer.from(`\n[spawn error] ${err.message}\n`));
      exitInfo ??= { code: null, signal: null };
      resolve(exitInfo);
    });
  });

  const url = `${opts.https ? 'https' : 'http'}://127.0.0.1:${port}`;
  const dispatcher = opts.https ? new Agent({ connect: { ca: opts.https.ca } }) : undefined;
  const server: ServerProcess = {
    url,
    port,
    pid: child.pid ?? -1,
    child,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000) {
      if (exitInfo) return exitInfo;
      child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
      const result = await Promise.race([exited, timedOut]);
      clearTimeout(timer);
      if (result === 'timeout') {
        child.kill('SIGKILL');
        await exited;
        throw new Error(
          `server pid ${child.pid} did not exit within ${timeoutMs} ms of ${signal}; killed.\n${tail(output)}`,
        );
      }
      return result;
    },
    async kill() {
      if (exitInfo) return exitInfo;
      child.kill('SIGKILL');
      return exited;
    },
    logs: () => output,
  };
  live.add(server);
  void exited.then(() => live.delete(server));

  // Generous: a cold start on a busy 2-core CI machine (TypeScript-free, but Fastify, Kysely and
  // better-sqlite3 to load) has been seen to take over 20 s.
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const ready = async (): Promise<boolean> => {
    if (exitInfo) {
      throw new Error(
        `server exited before it was ready (code ${exitInfo.code}, signal ${exitInfo.signal}):\n${tail(output)}`,
      );
    }
    return healthy(url, dispatcher);
  };
  try {
    await until(`server on port ${port} to be healthy`, ready, {
      deadlineMs: timeoutMs,
      intervalMs: 50,
      detail: () => `killed. Output:\n${tail(output)}`,
    });
  } catch (err) {
    await server.kill();
    throw err;
  }
  return server;
}

/** GET /healthz answers 200 (false while the server is not listening yet). */
async function healthy(url: string, dispatcher?: Agent): Promise<boolean> {
  try {
    const res = await request(`${url}/healthz`, {
      method: 'GET',
      headersTimeout: 1_000,
      bodyTimeout: 1_000,
      ...(dispatcher ? { dispatcher } : {}),
    });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

function tail(s: string, n = 8_000): string {
  return s.length > n ? `…${s.slice(-n)}` : s || '(no output)';
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// A tiny JSON HTTP client.

export interface JsonResponse<T = any> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
}

export interface RequestOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  headers?: Record<string, string>;
  /** Whole-request bound (default 30 s). */
  timeoutMs?: number;
}

export async function httpJson<T = any>(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  body?: unknown,
  opts: RequestOptions = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(url, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
  });
  const text = await res.body.text();
  let parsed: unknown = text;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: hand back the text
    }
  }
  return { status: res.statusCode, headers: res.headers, body: parsed as T };
}

export const getJson = <T = any>(url: string, opts?: RequestOptions): Promise<JsonResponse<T>> =>
  httpJson<T>('GET', url, undefined, opts);
export const postJson = <T = any>(url: string, body: unknown, opts?: RequestOptions): Promise<JsonResponse<T>> =>
  httpJson<T>('POST', url, body, opts);
