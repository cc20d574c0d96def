// Server child processes for the benchmark: start pinned to one core, wait until they answer, read
// their CPU time and peak RSS from /proc, stop them. Pinning matters because the figures are "per
// busy core": the server gets core 0, the load generator (this process) core 1, so neither steals
// cycles from the other and /proc CPU time maps one-to-one to server work.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import { http } from './http.js';

const SERVER_CPU = 0;
const LOADGEN_CPU = 1;

export interface ServerProcess {
  pid: number;
  pinned: boolean;
  /** Last few KiB of the child's stdout+stderr, for "why did it not start" reports. */
  output(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  command: string;
  args: string[];
  readyUrl: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  readyTimeoutMs?: number;
}

let tasksetCache: boolean | undefined;
function hasTaskset(): boolean {
  tasksetCache ??= spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
  return tasksetCache;
}

// Online CPUs, not this process's affinity mask (availableParallelism() drops to 1 once
// pinSelf() has run, which would silently turn server pinning off).
const CPU_COUNT = cpus().length;

/** Pinning only makes sense with a core for each side; on 1 CPU everything shares core 0. */
export function canPin(): boolean {
  return hasTaskset() && CPU_COUNT >= 2;
}

let ticksCache: number | undefined;
function clockTicks(): number {
  if (ticksCache === undefined) {
    const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    ticksCache = Number(out.stdout?.trim()) || 100; // 100 on every Linux we care about
  }
  return ticksCache;
}

/** Pin every thread of this process (the load generator) to one core; returns whether it worked. */
export function pinSelf(cpu = LOADGEN_CPU): boolean {
  if (!canPin()) return false;
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' });
  return r.status === 0;
}

/** A free loopback port. Tiny race with other processes, acceptable for a benchmark. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Server CPU time so far (user + system, all threads incl. GC) in microseconds. */
export function readCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // comm (field 2) may contain spaces; fields after the closing paren start at field 3 (state).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime = field 14, stime = field 15
  return (ticks / clockTicks()) * 1e6;
}

export interface SystemCpu {
  /** user+nice+system+irq+softirq of all CPUs, µs. */
  busyUs: number;
  /** Time the hypervisor gave our vCPUs to someone else, µs. */
  stealUs: number;
}

/** Machine-wide CPU counters: busy minus server minus load generator = someone else's work (noise). */
export function readSystemCpu(): SystemCpu {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  const us = (ticks: number): number => (ticks / clockTicks()) * 1e6;
  return {
    busyUs: us((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0)),
    stealUs: us(steal ?? 0),
  };
}

function readStatusKb(pid: number, key: 'VmHWM' | 'VmRSS'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(key + ':'));
  return line ? Number(line.replace(/\D+/g, '')) : NaN;
}

/** The load averages over 1, 5 and 15 minutes (NaN where unreadable): how busy the box was. */
export function loadAverages(): [number, number, number] {
  try {
    const [a, b, c] = readFileSync('/proc/loadavg', 'utf8').split(' ').map(Number);
    return [a ?? NaN, b ?? NaN, c ?? NaN];
  } catch {
    return [NaN, NaN, NaN];
  }
}

/** Peak resident set size (VmHWM) in MiB. */
export const readPeakRssMiB = (pid: number): number => readStatusKb(pid, 'VmHWM') / 1024;
/** Current resident set size (VmRSS) in MiB. */
export const readRssMiB = (pid: number): number => readStatusKb(pid, 'VmRSS') / 1024;

// Children still running when the harness dies (exception, Ctrl-C) must not outlive it.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => process.exit(130));
}

function keepTail(child: ChildProcess): () => string {
  let tail = '';
  const add = (b: Buffer): void => {
    tail = (tail + b.toString('utf8')).slice(-4096);
  };
  child.stdout?.on('data', add); // draining also keeps a chatty child from blocking on a full pipe
  child.stderr?.on('data', add);
  return () => tail;
}

/** HTTP status of a GET, or 0 if nothing answered. */
const httpStatus = (url: string): Promise<number> =>
  http('GET', url, { timeoutMs: 1000 }).then(
    (r) => r.status,
    () => 0,
  );

/** The line of a crashed child's output most likely to say why (first "Error", else the last line). */
function why(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return (lines.find((l) => /error/i.test(l)) ?? lines.at(-1) ?? '(no output)').slice(0, 300);
}

// A server that already answers HTTP but not 2xx at readyUrl (e.g. 404: route not built yet) gets
// this much longer, then counts as not available — no need to sit out the whole start timeout.
const SETTLE_MS = 3000;

async function waitReady(child: ChildProcess, url: string, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let answeredAt = 0;
  let status = 0;
  while (Date.now() < deadline && !(answeredAt && Date.now() - answeredAt > SETTLE_MS)) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`exited (${child.exitCode ?? child.signalCode}) before ready: ${why(output())}`);
    }
    status = await httpStatus(url);
    if (status >= 200 && status < 300) return;
    if (status && !answeredAt) answeredAt = Date.now();
    await new Promise((r) => setTimeout(r, 100));
  }
  const seen = status ? `GET ${url} answered HTTP ${status}` : `nothing answered at ${url} within ${timeoutMs} ms`;
  throw new Error(`${seen}; last output: ${why(output())}`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000); // SIGTERM ignored or hung
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Spawn a server (pinned to SERVER_CPU when possible) and resolve once readyUrl answers 2xx. */
export async function startServer(opts: StartOptions): Promise<ServerProcess> {
  const pinned = canPin();
  // taskset execs the command, so child.pid is the server's own pid (what /proc readings need).
  const [cmd, args] = pinned
    ? ['taskset', ['-c', String(SERVER_CPU), opts.command, ...opts.args]]
    : [opts.command, opts.args];
  const child = spawn(cmd as string, args as string[], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const output = keepTail(child);
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  try {
    await spawned;
    await waitReady(child, opts.readyUrl, opts.readyTimeoutMs ?? 15_000, output);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return { pid: child.pid as number, pinned, output, stop: () => stopChild(child) };
}

/**
 * Start a CPU window: the returned function gives the server's (`pid`), this harness process's
 * and the rest of the machine's busy time since the start, each in % of one core.
 */
export function cpuWindow(pid: number): () => { serverCpuPct: number; harnessCpuPct: number; otherCpuPct: number } {
  const t0 = performance.now();
  const s0 = readCpuUs(pid);
  const m0 = readSystemCpu();
  const p0 = process.cpuUsage();
  return () => {
    const wallUs = (performance.now() - t0) * 1000;
    const p = process.cpuUsage(p0);
    const server = ((readCpuUs(pid) - s0) / wallUs) * 100;
    const self = ((p.user + p.system) / wallUs) * 100;
    const machine = ((readSystemCpu().busyUs - m0.busyUs) / wallUs) * 100;
    return { serverCpuPct: server, harnessCpuPct: self, otherCpuPct: Math.max(0, machine - server - self) };
  };
}
