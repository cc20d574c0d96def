// `handoff` client commands in both A2A versions: the COMPILED CLI (dist/src/cli/main.js) in child
// processes against a real Handoff server process, whose card offers 1.0 and 0.3. Each version runs
// send → push set/list → approve → get, and a task waiting at two nodes at once (two-reviewers)
// decided one --node at a time; without --a2a-version the CLI speaks 1.0 (and `tasks` uses
// ListTasks); an unknown --a2a-version is a usage error before any request. The 0.3-only agent case
// (a card without supportedInterfaces) is in test/e2e/cli.test.ts beside the other SDK-agent tests.
// A file of its own so that neither file's CLI processes crowd the other's on a 2-core machine.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cliPath, killAllServers, repoRoot, type ServerProcess, startServer } from '../support/server-process.js';

const KEY = 'key-cli-versions-1';
const CLI_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 170_000;

type Rec = Record<string, any>;

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const dirs: string[] = [];
const running = new Set<ReturnType<typeof spawn>>();
after(async () => {
  for (const c of running) c.kill('SIGKILL');
  await killAllServers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** `handoff <args>` with the API key; no HANDOFF_* leaks in from the shell; SIGKILL after a minute. */
function cli(args: string[]): Promise<CliResult> {
  const env: Record<string, string> = { HANDOFF_API_KEY: KEY };
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANDOFF_')) env[k] = v;
  const child = spawn(process.execPath, [cliPath(), ...args], {
    cwd: repoRoot(),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, stdout, stderr });
    }),
  );
}

const show = (r: CliResult): string => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
const expectExit = (r: CliResult, code: number): void => assert.equal(r.code, code, show(r));

function json(r: CliResult): Rec {
  try {
    return JSON.parse(r.stdout) as Rec;
  } catch {
    assert.fail(`stdout is not JSON: ${show(r)}`);
  }
}

const dataOf = (task: Rec): Rec => {
  const part = (task.artifacts ?? []).flatMap((a: Rec) => a.parts).find((p: Rec) => p.kind === 'data');
  assert.ok(part, `no data artifact in ${JSON.stringify(task)}`);
  return part.data as Rec;
};

describe('handoff CLI in A2A 0.3 and 1.0 against a real Handoff server', { timeout: 3 * TEST_TIMEOUT_MS }, () => {
  let srv: ServerProcess;
  let url: string;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-cli-versions-'));
    dirs.push(dir);
    srv = await startServer({ dataDir: dir, env: { HANDOFF_API_KEYS: `${KEY}=acme:alice` }, readyTimeoutMs: 60_000 });
    url = srv.url;
  });

  // --json prints what the agent sent: a 0.3 Task, or a 1.0 SendMessageResponse / Task.
  const v03 = {
    task: (r: CliResult) => json(r),
    state: (t: Rec) => t.status.state as string,
    data: (t: Rec) => dataOf(t),
  };
  const v10 = {
    task: (r: CliResult) => (json(r).task ?? json(r)) as Rec,
    state: (t: Rec) =>
      (t.status.state as string)
        .replace(/^TASK_STATE_/, '')
        .toLowerCase()
        .replace(/_/g, '-'),
    data: (t: Rec) => (t.artifacts ?? []).flatMap((a: Rec) => a.parts).find((p: Rec) => 'data' in p)?.data as Rec,
  };

  for (const [version, shape] of [
    ['0.3', v03],
    ['1.0', v10],
  ] as const) {
    it(`--a2a-version ${version}: send → approve → get, each over ${version}`, {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const v = ['--a2a-version', version];
      const sent = await cli(['send', url, `plan ${version}`, '--skill', 'approval', '--json', ...v]);
      expectExit(sent, 3);
      const task = shape.task(sent);
      assert.equal(shape.state(task), 'input-required', show(sent));
      if (version === '1.0') assert.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED');
      else assert.equal(task.kind, 'task');
      // A webhook for the task, registered and listed in the same version.
      const hook = `https://caller.example.com/${version}`;
      const set = await cli(['push', 'set', url, task.id, hook, '--token', 'tok-1', '--json', ...v]);
      expectExit(set, 0);
      const listed = await cli(['push', 'list', url, task.id, '--json', ...v]);
      expectExit(listed, 0);
      const configs = version === '1.0' ? (json(listed).configs as Rec[]) : (json(listed) as unknown as Rec[]);
      const urlOf = (c: Rec) => (version === '1.0' ? c.url : c.pushNotificationConfig.url);
      assert.equal(urlOf((json(set) as unknown as Rec[])[0] as Rec), hook);
      assert.deepEqual(configs.map(urlOf), [hook]);
      assert.doesNotMatch(set.stdout + listed.stdout, /tok-1/, 'the token is never echoed');
      const approved = await cli(['approve', url, task.id, '--action', 'accept', '--json', ...v]);
      expectExit(approved, 0);
      const done = shape.task(approved);
      assert.equal(shape.state(done), 'completed', show(approved));
      assert.deepEqual(shape.data(done), { text: `Draft: plan ${version}`, approvedBy: 'alice' });
      // get: the text output is the same whatever the version spoken.
      const human = await cli(['get', url, task.id, ...v]);
      expectExit(human, 0);
      assert.match(human.stdout, /state\s+completed/);
      assert.match(
        human.stdout,
        new RegExp(`\\{"text":"Draft: plan ${version.replace('.', '\\.')}","approvedBy":"alice"\\}`),
      );
    });
  }

  for (const [version, shape] of [
    ['0.3', v03],
    ['1.0', v10],
  ] as const) {
    it(`--a2a-version ${version}: a task waiting at two nodes is decided one --node at a time`, {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const v = ['--a2a-version', version];
      const sent = await cli(['send', url, `both ${version}`, '--skill', 'two-reviewers', '--json', ...v]);
      expectExit(sent, 3);
      const id = shape.task(sent).id as string;
      const got = await cli(['get', url, id, ...v]);
      expectExit(got, 3);
      assert.match(got.stdout, /state\s+input-required \(2 open\)/);
      assert.match(
        got.stdout,
        /open\s+legal\s+approval\s+Legal: review the draft\n\s+finance\s+approval\s+Finance: review the draft/,
      );
      assert.match(got.stdout, new RegExp(`handoff approve \\S+ ${id} --node legal\\|finance --action`));

      // No --node: the host's refusal, naming the open nodes; nothing is decided.
      const unnamed = await cli(['approve', url, id, '--action', 'accept', ...v]);
      expectExit(unnamed, 1);
      assert.match(unnamed.stderr, /JSON-RPC error -32602: .*several nodes \((legal, finance|finance, legal)\)/);
      assert.equal(unnamed.stdout, '');

      const finance = await cli(['approve', url, id, '--action', 'accept', '--node', 'finance', '--json', ...v]);
      expectExit(finance, 3);
      const waiting = shape.task(finance);
      assert.deepEqual(
        waiting.metadata.openwop.interrupts.map((i: Rec) => i.nodeId),
        ['legal'],
      );
      const legal = await cli(['approve', url, id, '--action', 'accept', '--node', 'legal', '--json', ...v]);
      expectExit(legal, 0);
      const done = shape.task(legal);
      assert.equal(shape.state(done), 'completed', show(legal));
      assert.deepEqual(shape.data(done).approvedBy, { legal: 'alice', finance: 'alice' });
    });
  }

  it('without --a2a-version the CLI speaks 1.0, which the card offers; tasks uses ListTasks', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const sent = await cli(['send', url, 'default', '--skill', 'echo', '--json']);
    expectExit(sent, 0);
    const res = json(sent);
    assert.equal(res.task?.status?.state, 'TASK_STATE_COMPLETED', show(sent));
    const id = res.task.id as string;
    const watched = await cli(['watch', url, id]);
    expectExit(watched, 0);
    assert.match(watched.stdout, /watching \S+ at \S+ \(A2A 1\.0\)/);
    const [listed, listed03] = await Promise.all([
      cli(['tasks', url, '--json', '--limit', '100', '--state', 'completed']),
      cli(['tasks', url, '--json', '--limit', '100', '--state', 'completed', '--a2a-version', '0.3']),
    ]);
    expectExit(listed, 0);
    assert.ok(
      (json(listed).tasks as Rec[]).some((t) => t.id === id && t.status.state === 'TASK_STATE_COMPLETED'),
      listed.stdout,
    );
    expectExit(listed03, 0);
    assert.ok((json(listed03).tasks as Rec[]).some((t) => t.taskId === id && t.state === 'completed'));
  });

  it('--a2a-version: an unknown value is a usage error (exit 1) that reaches no server', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const [bad, empty] = await Promise.all([
      cli(['get', url, 'run_x', '--a2a-version', '2.0']),
      cli(['send', 'http://127.0.0.1:9', 'x', '--a2a-version', '']),
    ]);
    expectExit(bad, 1);
    assert.match(bad.stderr, /--a2a-version must be one of 0\.3, 1\.0, got '2\.0'/);
    assert.equal(bad.stdout, '');
    // Checked before the card is fetched: the unreachable host is never dialled.
    expectExit(empty, 1);
    assert.match(empty.stderr, /--a2a-version must be one of 0\.3, 1\.0, got ''/);
  });
});
