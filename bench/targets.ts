// The servers the harness measures. Each start() launches a fresh process (pinned to core 0) so
// every run begins from an empty store and peak RSS belongs to that run alone.
//
// Adding a target: call registerTarget() with a name and a start() returning {url, pid, pinned,
// stop}; childTarget() below does that for any "command that listens on --port N" server.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, benchScript } from './lib/env.js';
import { ALL_PROTOCOLS } from './lib/protocols.js';
import { profileArgs } from './lib/handoff-server.js';
import { freePort, startServer } from './lib/proc.js';
import { registerTarget, type Running, type SkillIds, type Target } from './lib/registry.js';

export { registerTarget };

export interface Launch {
  argv: string[];
  /** Added to the harness's environment for this server. */
  env?: Record<string, string>;
  /** Runs after the process has stopped (e.g. remove its data directory). */
  cleanup?: () => void;
}

export interface ChildTargetOptions {
  name: string;
  description: string;
  skills?: Partial<SkillIds>;
  /** How to launch the server on 127.0.0.1:port; throw to report the target as not available. */
  launch(port: number): Launch;
  /** JSON-RPC endpoint path, and the GET path polled for readiness. */
  rpcPath: string;
  readyPath?: string;
  /** Where its A2A 1.0 HTTP+JSON (REST) binding is mounted, if it has one. */
  restPath?: string;
}

export function childTarget(opts: ChildTargetOptions): Target {
  return {
    name: opts.name,
    description: opts.description,
    ...(opts.skills ? { skills: opts.skills } : {}),
    async start(): Promise<Running> {
      const port = await freePort();
      const { argv, cleanup, env } = opts.launch(port);
      const base = `http://127.0.0.1:${port}`;
      const [command, ...args] = argv;
      try {
        const proc = await startServer({
          command: command as string,
          args,
          cwd: ROOT,
          ...(env ? { env: { ...process.env, ...env } } : {}),
          readyUrl: base + (opts.readyPath ?? '/.well-known/agent-card.json'),
        });
        const stop = async (): Promise<void> => {
          await proc.stop();
          cleanup?.();
        };
        const rest = opts.restPath === undefined ? {} : { restUrl: base + opts.restPath };
        return { url: base + opts.rpcPath, ...rest, pid: proc.pid, pinned: proc.pinned, stop };
      } catch (err) {
        cleanup?.();
        throw err;
      }
    },
  };
}

registerTarget(
  childTarget({
    name: 'sdk',
    description: '@a2a-js/sdk 0.3.14 + express 5, InMemoryTaskStore (bench/baselines/sdk-server.ts)',
    launch: (port) => ({ argv: [...benchScript('baselines/sdk-server'), '--port', String(port)] }),
    rpcPath: '/a2a/jsonrpc',
  }),
);

// The A2A 1.0 reference: serves only the protocol scenarios (lib/protocol-throughput.ts).
registerTarget({
  ...childTarget({
    name: 'sdk-v1',
    description:
      '@a2a-js/sdk 1.3.0 + express 5, InMemoryTaskStore, A2A 1.0 JSON-RPC and REST (bench/baselines/sdk-v1-server.ts)',
    launch: (port) => ({ argv: [...benchScript('baselines/sdk-v1-server'), '--port', String(port)] }),
    rpcPath: '/a2a/jsonrpc',
    restPath: '/a2a/rest',
  }),
  protocols: ['jsonrpc-1.0', 'rest-1.0'],
  only: ['send-v1', 'get-v1', 'approval-v1'],
});

registerTarget(
  childTarget({
    name: 'bare',
    description: 'bare node:http, tasks in a Map: the ceiling (bench/baselines/bare-server.ts)',
    launch: (port) => ({ argv: [...benchScript('baselines/bare-server'), '--port', String(port)] }),
    rpcPath: '/a2a/jsonrpc',
  }),
);

const FLOOR_SCENARIOS = ['send', 'send-c1', 'get', 'approval'];
registerTarget({
  ...childTarget({
    name: 'floor',
    description:
      'the durable floor: Fastify + better-sqlite3 writing only the rows Handoff commits ' +
      'for an echo send and for the approval flow, on its schema and SQLite settings ' +
      '(bench/baselines/sqlite-floor-server.ts)',
    launch: (port) => ({ argv: [...benchScript('baselines/sqlite-floor-server'), '--port', String(port)] }),
    rpcPath: '/a2a/jsonrpc',
  }),
  only: FLOOR_SCENARIOS,
});

// ─── HOOK: Handoff itself. Always the compiled CLI (npm run build), a fresh data dir per run. ───
// Adjust `skills` once Handoff's demo workflows have their final ids, and the argv if `serve`
// grows flags (e.g. a durability mode) worth benchmarking as separate targets.
function handoffTarget(name: string, description: string, env: Record<string, string>, root = ROOT): Target {
  return childTarget({
    name,
    description,
    skills: { echo: 'echo', approval: 'approval' },
    launch: (port) => {
      const main = join(root, 'dist/src/cli/main.js');
      if (!existsSync(main)) throw new Error(`${main} not built (npm run build)`);
      const data = mkdtempSync(join(tmpdir(), 'handoff-bench-'));
      return {
        argv: [process.execPath, ...profileArgs(), main, 'serve', '--port', String(port), '--data', data],
        env: { HANDOFF_LOG_LEVEL: 'warn', ...env },
        cleanup: () => rmSync(data, { recursive: true, force: true }),
      };
    },
    rpcPath: '/v1/a2a',
    restPath: '/v1/a2a/rest',
  });
}

// `handoff` is also measured over every A2A binding it serves (the protocol scenarios);
// `handoff-full` is not: an fsync per commit costs the same whatever the wire.
registerTarget({
  ...handoffTarget(
    'handoff',
    'Handoff `serve` (dist/src/cli/main.js), SQLite in a fresh temp dir (WAL, synchronous=NORMAL)',
    {},
  ),
  protocols: ALL_PROTOCOLS,
});
// Every commit fsynced (survives power loss, not only a crash): group commit shares each fsync.
registerTarget(
  handoffTarget(
    'handoff-full',
    'the same with HANDOFF_SQLITE_SYNCHRONOUS=FULL (an fsync per commit; group commit shares it)',
    {
      HANDOFF_SQLITE_SYNCHRONOUS: 'FULL',
    },
  ),
);

// Another build of Handoff beside this one, in the same run (a change measured against its base):
// HANDOFF_BENCH_BEFORE=<checkout with a built dist/> adds the target `handoff-before`.
const before = process.env.HANDOFF_BENCH_BEFORE;
if (before) {
  registerTarget({
    ...handoffTarget('handoff-before', `Handoff built in ${before}, same settings as \`handoff\``, {}, before),
    protocols: ALL_PROTOCOLS,
  });
  // The floor of that build (its rows, on its migrations' schema): a change to the schema or to
  // the floor is measured against it.
  registerTarget({
    ...childTarget({
      name: 'floor-before',
      description: `the floor built in ${before}`,
      launch: (port) => {
        const script = join(before, 'dist/bench/baselines/sqlite-floor-server.js');
        if (!existsSync(script)) throw new Error(`${script} not built (npx tsc -p tsconfig.json)`);
        return { argv: [process.execPath, script, '--port', String(port)] };
      },
      rpcPath: '/a2a/jsonrpc',
    }),
    only: FLOOR_SCENARIOS,
  });
}
