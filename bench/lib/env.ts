// Where we are (repo root, compiled or via tsx) and what we run on (machine, Node, package
// versions) — the header of RESULTS.md, so figures from different days can be told apart.
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** True when running the .ts sources through tsx (development) instead of dist/ (npm run bench). */
export const FROM_SOURCE = import.meta.url.endsWith('.ts');

function findRoot(dir: string): string {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, 'package.json'))) return d;
    if (dirname(d) === d) throw new Error(`no package.json above ${dir}`);
  }
}

/** The repository root (where package.json and node_modules live). */
export const ROOT = findRoot(here);
/** The bench/ sources directory, whichever way we run: RESULTS.md is written there. */
export const BENCH_SRC = join(ROOT, 'bench');
/** The directory holding this run's bench modules (bench/ via tsx, dist/bench/ compiled). */
export const BENCH_RUN = dirname(here);

/** argv to run a bench module (path relative to bench/, no extension) as its own Node process. */
export function benchScript(relative: string): string[] {
  return FROM_SOURCE
    ? [process.execPath, '--import', 'tsx', join(BENCH_RUN, `${relative}.ts`)]
    : [process.execPath, join(BENCH_RUN, `${relative}.js`)];
}

const PACKAGES = ['@a2a-js/sdk', 'a2a-js-sdk-v03', 'express', 'autocannon', 'undici', 'typescript', 'tsx'];

function packageVersion(name: string): string {
  try {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '?';
  } catch {
    return 'not installed';
  }
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    return line?.split(':')[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export interface Machine {
  date: string;
  nproc: number;
  cpuModel: string;
  node: string;
  packages: Record<string, string>;
}

export function machine(): Machine {
  return {
    date: new Date().toISOString(),
    nproc: cpus().length, // online CPUs; our own affinity is pinned to one
    cpuModel: cpuModel(),
    node: process.version,
    packages: Object.fromEntries(PACKAGES.map((p) => [p, packageVersion(p)])),
  };
}

/** The harness environment minus every HANDOFF_* setting (they would change what is measured), plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('HANDOFF_')) env[k] = v;
  return { ...env, ...extra };
}
