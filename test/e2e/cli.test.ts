// The `handoff` client commands end to end: the COMPILED CLI (dist/src/cli/main.js) in child
// processes against (1) a real Handoff server process with an API key configured, including a
// `watch` that survives a SIGKILL and restart of the server, and (2) a plain @a2a-js/sdk 0.3.14
// agent (test/support/sdk-sample-server.ts), so the client is shown to speak A2A, not just Handoff.
//
// Exit codes (docs/protocol/openwop.md#cli-exit-codes): 0 completed; 3 submitted/working/input-required/auth-required;
// 1 failed/canceled/rejected or any error. Everything binds to 127.0.0.1; every child process is
// bounded by a timeout and killed in the after hooks.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSdkSampleServer, SAMPLE_QUESTION, type SdkSampleServer } from '../support/sdk-sample-server.js';
import {
  cliPath,
  getJson,
  killAllServers,
  postJson,
  repoRoot,
  type ServerProcess,
  sleep,
  startServer,
} from '../support/server-process.js';
import { until } from '../support/until.js';

const KEY = 'key-cli-alice-123';
const ENV = { HANDOFF_API_KEYS: `${KEY}=acme:alice` };
/** One CLI invocation (the machine may be loaded: node start-up alone can take seconds). */
const CLI_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 170_000;
/** A watch outlives the CLI calls made while it runs (each may take CLI_TIMEOUT_MS on a loaded machine). */
const WATCH_TIMEOUT_MS = 150_000;
/** A server start on a busy machine (the default 20 s is not always enough). */
const READY_TIMEOUT_MS = 60_000;

type Rec = Record<string, any>;

const dirs: string[] = [];
const freshDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'handoff-cli-'));
  dirs.push(d);
  return d;
};

// ---------------------------------------------------------------------------------------------
// Running the CLI

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface CliProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
  stdout(): string;
  stderr(): string;
}

const children = new Set<ChildProcess>();

function killAllCli(): void {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
  children.clear();
}

interface CliOptions {
  /** HANDOFF_API_KEY for the child; null: none. */
  apiKey?: string | null;
  timeoutMs?: number;
}

/** Start `handoff <args>`; killed with SIGKILL after `timeoutMs`. No HANDOFF_* leaks in from the shell. */
function spawnCli(args: string[], opts: CliOptions = {}): CliProcess {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANDOFF_')) env[k] = v;
  const key = opts.apiKey === undefined ? KEY : opts.apiKey;
  if (key !== null) env.HANDOFF_API_KEY = key;
  const child = spawn(process.execPath, [cliPath(), ...args], {
    cwd: repoRoot(),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString('utf8')));
  child.stderr?.on('data', (b: Buffer) => (err += b.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? CLI_TIMEOUT_MS);
  const done = new Promise<CliResult>((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, signal, stdout: out, stderr: err });
    });
  });
  return { child, done, stdout: () => out, stderr: () => err };
}

const cli = (args: string[], opts?: CliOptions): Promise<CliResult> => spawnCli(args, opts).done;

const show = (r: CliResult): string =>
  `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

function expectExit(r: CliResult, code: number): void {
  assert.equal(r.code, code, show(r));
}

/** `--json` output of a one-shot command. */
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

const textOf = (task: Rec): string =>
  (task.artifacts ?? [])
    .flatMap((a: Rec) => a.parts)
    .filter((p: Rec) => p.kind === 'text')
    .map((p: Rec) => p.text)
    .join('\n');

const waitUntil = (what: string, fn: () => boolean, timeoutMs: number): Promise<boolean> =>
  until(what, fn, { deadlineMs: timeoutMs, intervalMs: 50 });

after(async () => {
  killAllCli();
  await killAllServers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------

// The three suites run side by side, and so do the tests inside each (every test owns its tasks):
// the wall time is what a loaded CI machine can afford.
describe('handoff client commands', { concurrency: true }, () => {
  describe('handoff CLI against a real Handoff server', { timeout: 2 * TEST_TIMEOUT_MS, concurrency: true }, () => {
    let srv: ServerProcess;
    let url: string;

    before(async () => {
      srv = await startServer({ dataDir: freshDir(), env: ENV, readyTimeoutMs: READY_TIMEOUT_MS });
      url = srv.url;
    });
    after(async () => {
      await srv?.kill();
    });

    /** These tests read the 0.3 shapes of --json; test/e2e/cli-versions.test.ts speaks both. */
    const cli03 = (args: string[], opts?: CliOptions) => cli([...args, '--a2a-version', '0.3'], opts);

    /** Start a task with one raw JSON-RPC call (faster than a CLI round trip for set-up). */
    async function startTask(skillId: string, parts: Rec[], blocking = true): Promise<Rec> {
      const res = await postJson(
        `${url}/v1/a2a`,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: {
            message: { kind: 'message', role: 'user', messageId: randomUUID(), parts, metadata: { skillId } },
            configuration: { blocking },
          },
        },
        { token: KEY, timeoutMs: CLI_TIMEOUT_MS },
      );
      assert.ok(res.body?.result?.id, JSON.stringify(res.body));
      return res.body.result as Rec;
    }

    it('send echo: exit 0 with the echo artifact (human and --json)', { timeout: TEST_TIMEOUT_MS }, async () => {
      const [human, machine] = await Promise.all([
        cli03(['send', url, 'hello cli', '--skill', 'echo']),
        cli03(['send', url, 'hello json', '--skill', 'echo', '--json']),
      ]);
      expectExit(human, 0);
      assert.match(human.stdout, /state\s+completed/);
      assert.match(human.stdout, /\{"echo":"hello cli"\}/);
      assert.match(human.stdout, /task\s+run_/);
      assert.doesNotMatch(
        human.stdout,
        new RegExp(`${String.fromCharCode(27)}\\[`),
        'no colour when stdout is not a TTY',
      );
      expectExit(machine, 0);
      const task = json(machine);
      assert.equal(task.kind, 'task');
      assert.equal(task.status.state, 'completed');
      assert.deepEqual(dataOf(task), { echo: 'hello json' });
    });

    it('approval: send --no-wait exits 3, get shows input-required, approve accept completes (exit 0)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const sent = await cli03(['send', url, 'launch plan', '--skill', 'approval', '--no-wait', '--json']);
      expectExit(sent, 3);
      const task = json(sent);
      assert.ok(['submitted', 'working', 'input-required'].includes(task.status.state), show(sent));
      const id = task.id as string;

      // The run reaches the gate asynchronously: ask again until it is there (bounded).
      let got: CliResult | undefined;
      for (let i = 0; i < 20; i++) {
        got = await cli03(['get', url, id, '--json']);
        expectExit(got, 3);
        if (json(got).status.state === 'input-required') break;
        await sleep(250);
      }
      const waiting = json(got!);
      assert.equal(waiting.status.state, 'input-required');
      assert.equal(waiting.metadata.openwop.interrupt.kind, 'approval');

      const human = await cli03(['get', url, id]);
      expectExit(human, 3);
      assert.match(human.stdout, /input-required \(approval at review\)/);
      assert.match(human.stdout, new RegExp(`handoff approve ${url} ${id} --action`));

      const approved = await cli03(['approve', url, id, '--action', 'accept', '--json']);
      expectExit(approved, 0);
      const done = json(approved);
      assert.equal(done.status.state, 'completed');
      assert.deepEqual(dataOf(done), { text: 'Draft: launch plan', approvedBy: 'alice' });
    });

    it('approve refine keeps the task waiting (exit 3); reject ends it failed (exit 1)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = await startTask('approval', [{ kind: 'text', text: 'draft' }]);
      assert.equal(task.status.state, 'input-required');
      const refined = await cli03(['approve', url, task.id, '--action', 'refine', '--feedback', 'shorter', '--json']);
      expectExit(refined, 3);
      assert.equal(json(refined).metadata.openwop.interrupt.artifact.text, 'Draft: draft [revised: shorter]');

      const rejected = await cli03(['approve', url, task.id, '--action', 'reject', '--feedback', 'no']);
      expectExit(rejected, 1);
      assert.match(rejected.stdout, /state\s+failed/);
      assert.match(rejected.stdout, /rejected at 'review'/);

      // A usage slip never reaches the server.
      const bad = await cli03(['approve', url, task.id, '--action', 'edit-accept']);
      expectExit(bad, 1);
      assert.match(bad.stderr, /edit-accept needs --data/);

      // The audit log: both decisions came from the CLI, each bound to the draft it read first.
      const audit = await getJson(`${url}/v1/audit?runId=${task.id}`, { token: KEY, timeoutMs: CLI_TIMEOUT_MS });
      assert.deepEqual(
        audit.body.entries.map((e: Rec) => [e.act, e.principal, e.surface]),
        [
          ['refine', 'alice', 'cli'],
          ['reject', 'alice', 'cli'],
        ],
      );
      for (const e of audit.body.entries as Rec[]) {
        assert.match(String(e.subjectHash), /^sha256:[0-9a-f]{64}$/);
        assert.equal((e.values as Rec).expectedArtifactHash, e.subjectHash, 'the CLI sent the hash it read');
      }
      assert.notEqual(
        audit.body.entries[0].subjectHash,
        audit.body.entries[1].subjectHash,
        'the refine changed the draft',
      );
    });

    it('answer a clarification: the task completes with the answer (exit 0)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const sent = await cli03(['send', url, 'hi', '--skill', 'clarify', '--json']);
      expectExit(sent, 3);
      const task = json(sent);
      assert.equal(task.metadata.openwop.interrupt.kind, 'clarification');
      const answered = await cli03(['answer', url, task.id, 'Ada', '--json']);
      expectExit(answered, 0);
      const done = json(answered);
      assert.equal(done.status.state, 'completed');
      assert.deepEqual(dataOf(done), { answer: 'Ada' });
    });

    it('cancel: the task ends canceled (exit 1); a second cancel is JSON-RPC -32002 (exit 1)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = await startTask('steps', [{ kind: 'data', data: { steps: 100, stepMs: 1000 } }], false);
      const canceled = await cli03(['cancel', url, task.id, '--json']);
      expectExit(canceled, 1);
      assert.equal(json(canceled).status.state, 'canceled');
      const again = await cli03(['cancel', url, task.id]);
      expectExit(again, 1);
      assert.equal(again.stdout, '');
      assert.match(again.stderr, /JSON-RPC error -32002: /);
    });

    it('push set/list/delete; a refused webhook URL exits 1 with the guard reason', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = await startTask('approval', [{ kind: 'text', text: 'p' }]);
      const hook = 'https://caller.example.com/hook';
      const set = await cli03([
        'push',
        'set',
        url,
        task.id,
        hook,
        '--id',
        'hook-1',
        '--token',
        'secret-token-1',
        '--json',
      ]);
      expectExit(set, 0);
      const saved = json(set);
      assert.equal(saved[0].taskId, task.id);
      assert.equal(saved[0].pushNotificationConfig.url, hook);
      assert.equal(saved[0].pushNotificationConfig.id, 'hook-1');
      assert.doesNotMatch(set.stdout, /secret-token-1/, 'the token is never echoed');

      const [refusedScheme, refusedHost] = await Promise.all([
        cli03(['push', 'set', url, task.id, 'http://127.0.0.1:9/hook']),
        cli03(['push', 'set', url, task.id, 'https://169.254.169.254/latest/meta-data']),
      ]);
      expectExit(refusedScheme, 1);
      assert.match(
        refusedScheme.stderr,
        new RegExp(
          String.raw`JSON-RPC error -32602: pushNotificationConfig\.url refused \(insecure_scheme\): ` +
            'push URLs must use https',
        ),
      );
      expectExit(refusedHost, 1);
      assert.match(refusedHost.stderr, /JSON-RPC error -32602: pushNotificationConfig\.url refused/);

      const listed = await cli03(['push', 'list', url, task.id]);
      expectExit(listed, 0);
      assert.match(listed.stdout, /^hook-1\s+https:\/\/caller\.example\.com\/hook$/m);
      assert.equal(listed.stdout.trim().split('\n').length, 1, 'refused URLs were not stored');

      const deleted = await cli03(['push', 'delete', url, task.id, 'hook-1']);
      expectExit(deleted, 0);
      const empty = await cli03(['push', 'list', url, task.id, '--json']);
      expectExit(empty, 0);
      assert.deepEqual(json(empty), []);
    });

    it("tasks lists the caller's tasks from GET /v1/a2a/tasks", { timeout: TEST_TIMEOUT_MS }, async () => {
      const task = await startTask('echo', [{ kind: 'text', text: 'listed' }]);
      const machine = await cli03(['tasks', url, '--json', '--limit', '100']);
      expectExit(machine, 0);
      const listed = (json(machine).tasks as Rec[]).find((t) => t.taskId === task.id);
      assert.equal(listed?.state, 'completed', machine.stdout);
      const human = await cli03(['tasks', url, '--state', 'completed']);
      expectExit(human, 0);
      assert.match(human.stdout, new RegExp(`^${task.id}\\s+completed`, 'm'));
    });

    it('watch shows every open interrupt of a task waiting at two nodes; approve --node decides each', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = await startTask('two-reviewers', [{ kind: 'text', text: 'watched' }]);
      assert.equal(task.status.state, 'input-required');
      const w = spawnCli(['watch', url, task.id, '--a2a-version', '0.3'], { timeoutMs: WATCH_TIMEOUT_MS });
      await waitUntil(
        'the watch shows the open interrupts',
        () => w.stdout().includes('Finance: review the draft') || w.child.exitCode !== null,
        60_000,
      );
      expectExit(await cli03(['approve', url, task.id, '--action', 'accept', '--node', 'finance']), 3);
      expectExit(await cli03(['approve', url, task.id, '--action', 'accept', '--node', 'legal']), 0);
      const watched = await w.done;
      expectExit(watched, 0);
      assert.match(watched.stdout, /input-required \(2 open\)/);
      assert.match(
        watched.stdout,
        /open\s+legal\s+approval\s+Legal: review the draft\n\s+finance\s+approval\s+Finance/,
      );
      assert.match(watched.stdout, new RegExp(`next: handoff approve \\S+ ${task.id} --node legal\\|finance --action`));
      assert.match(watched.stdout, /completed\s*$/);
    });

    it('watch: an interrupt reopened after a refine is shown whole (the Task read once)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = await startTask('approval', [{ kind: 'text', text: 'reopened' }]);
      const w = spawnCli(['watch', url, task.id, '--a2a-version', '0.3'], { timeoutMs: WATCH_TIMEOUT_MS });
      await waitUntil(
        'the watch shows the gate',
        () => w.stdout().includes('asks') || w.child.exitCode !== null,
        60_000,
      );
      const refined = await cli03(['approve', url, task.id, '--action', 'refine', '--feedback', 'shorter']);
      expectExit(refined, 3);
      await waitUntil(
        'the watch shows the revised draft',
        () => w.stdout().includes('[revised: shorter]') || w.child.exitCode !== null,
        60_000,
      );
      expectExit(await cli03(['approve', url, task.id, '--action', 'accept']), 0);
      const watched = await w.done;
      expectExit(watched, 0);
      // The status update into input-required names only the kind; the draft comes from the Task.
      assert.match(
        watched.stdout,
        /input-required \(approval\)\n\s+asks\s+Review the draft\n\s+draft\s+\{"text":"Draft: reopened \[revised: shorter\]"\}/,
      );
    });

    it('answer --node names the node answered (message metadata); an unknown node is refused (exit 1)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const task = await startTask('clarify', [{ kind: 'text', text: 'hi' }]);
      assert.equal(task.status.state, 'input-required');
      const [wrong, blank] = await Promise.all([
        cli03(['answer', url, task.id, 'Ada', '--node', 'nope']),
        cli03(['answer', url, task.id, 'Ada', '--node', ' ']),
      ]);
      expectExit(wrong, 1);
      assert.match(wrong.stderr, /JSON-RPC error -32602: .*no open interrupt at node 'nope'; open: ask/);
      expectExit(blank, 1);
      assert.match(blank.stderr, /--node needs a node id/);
      const answered = await cli03(['answer', url, task.id, 'Ada', '--node', 'ask', '--json']);
      expectExit(answered, 0);
      assert.deepEqual(dataOf(json(answered)), { answer: 'Ada' });
    });

    it('errors: unknown task (-32001), no API key (401), unreachable host, bad URL — all exit 1 on stderr', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const [unknown, anonymous, unreachable, badUrl] = await Promise.all([
        cli03(['get', url, 'run_does-not-exist']),
        cli03(['get', url, 'run_x'], { apiKey: null }),
        cli03(['get', 'http://127.0.0.1:9', 'run_x']),
        cli03(['send', 'ftp://example.com', 'x']),
      ]);
      expectExit(unknown, 1);
      assert.match(unknown.stderr, /JSON-RPC error -32001: Task not found: run_does-not-exist/);
      assert.equal(unknown.stdout, '');
      expectExit(anonymous, 1);
      assert.match(anonymous.stderr, /HTTP 401 .*--api-key/);
      expectExit(unreachable, 1);
      assert.match(unreachable.stderr, /cannot reach http:\/\/127\.0\.0\.1:9/);
      expectExit(badUrl, 1);
      assert.match(badUrl.stderr, /must be an http:\/\/ or https:\/\/ URL/);
    });
  });

  // ---------------------------------------------------------------------------------------------

  describe('handoff validate', { timeout: TEST_TIMEOUT_MS, concurrency: true }, () => {
    const demo = (id: string): Rec => JSON.parse(readFileSync(join(repoRoot(), 'workflows', `${id}.json`), 'utf8'));
    /** A directory holding `files` (name → JSON value, or raw text). */
    const dirOf = (files: Record<string, unknown>): string => {
      const dir = freshDir();
      for (const [name, body] of Object.entries(files))
        writeFileSync(join(dir, name), typeof body === 'string' ? body : JSON.stringify(body, null, 2));
      return dir;
    };
    /** echo with a join that no core.parallel feeds. */
    const strayJoin = (): Rec => {
      const wf = demo('echo');
      wf.id = 'stray-join';
      wf.nodes.push({ ...wf.nodes[0], id: 'merge', typeId: 'core.join', config: { mode: 'all' } });
      wf.edges.push({ id: 'echo-merge', sourceNodeId: 'echo', targetNodeId: 'merge' });
      return wf;
    };

    it('a clean directory: one line naming the workflows, exit 0; the demo workflows are clean', async () => {
      const dir = dirOf({ 'a.json': demo('echo'), 'b.json': demo('two-reviewers'), 'notes.txt': 'not a workflow' });
      const [clean, demos, one] = await Promise.all([
        cli(['validate', dir]),
        cli(['validate', join(repoRoot(), 'workflows')]),
        cli(['validate', join(dir, 'b.json')]),
      ]);
      expectExit(clean, 0);
      assert.equal(clean.stdout, '2 workflows valid: echo, two-reviewers\n');
      assert.equal(clean.stderr, '');
      expectExit(demos, 0);
      assert.match(demos.stdout, /^\d+ workflows valid: .*\btwo-reviewers\b/);
      expectExit(one, 0);
      assert.equal(one.stdout, '1 workflow valid: two-reviewers\n');
    });

    it('a join no core.parallel feeds: the file, the node and the problem, exit 1', async () => {
      const dir = dirOf({ 'stray.json': strayJoin() });
      const file = join(dir, 'stray.json');
      const [single, inDir] = await Promise.all([cli(['validate', file]), cli(['validate', dir])]);
      for (const r of [single, inDir]) {
        expectExit(r, 1);
        assert.equal(
          r.stdout,
          `${file}: node "merge": no core.parallel leads into this join\n1 problem in 1 of 1 file\n`,
        );
      }
    });

    it('every problem of every file: malformed JSON, a bad node, a duplicate id; secrets count as defined', async () => {
      const secretCall = demo('echo');
      secretCall.id = 'secret-call';
      secretCall.nodes[0] = {
        ...secretCall.nodes[0],
        typeId: 'http.request',
        config: {
          method: 'GET',
          url: 'https://example.com/x',
          headers: { authorization: 'Bearer {{ secrets.TOKEN }}' },
        },
      };
      const badNode = demo('echo');
      badNode.id = 'bad-node';
      badNode.nodes[0].typeId = 'core.nothing';
      badNode.edges.push({ id: 'to-nowhere', sourceNodeId: 'echo', targetNodeId: 'nowhere' });
      const dir = dirOf({
        '1-broken.json': '{ "id": "broken", ',
        '2-bad-node.json': badNode,
        '3-echo.json': demo('echo'),
        '4-echo-again.json': demo('echo'),
        '5-secret-call.json': secretCall,
      });
      const r = await cli(['validate', dir]);
      expectExit(r, 1);
      const lines = r.stdout.trimEnd().split('\n');
      assert.match(lines[0]!, new RegExp(`^${join(dir, '1-broken.json')}: invalid JSON: `));
      assert.match(r.stdout, new RegExp(`${join(dir, '2-bad-node.json')}: node "echo": unknown typeId "core.nothing"`));
      assert.match(
        r.stdout,
        new RegExp(`${join(dir, '2-bad-node.json')}: edge "to-nowhere": targetNodeId "nowhere" is not a node`),
      );
      assert.match(
        r.stdout,
        new RegExp(
          `${join(dir, '4-echo-again.json')}: workflow id "echo" is already defined in ${join(dir, '3-echo.json')}`,
        ),
      );
      assert.doesNotMatch(r.stdout, /secret-call|TOKEN/, 'a secret the host would hold is not a problem here');
      assert.equal(lines.at(-1), '4 problems in 3 of 5 files');
    });

    it('nothing to check is an error (exit 1), not a clean set', async () => {
      const [missing, empty] = await Promise.all([
        cli(['validate', join(freshDir(), 'no-such.json')]),
        cli(['validate', dirOf({ 'readme.txt': 'no workflows here' })]),
      ]);
      expectExit(missing, 1);
      assert.match(missing.stderr, /handoff: cannot read .*no-such\.json: ENOENT/);
      expectExit(empty, 1);
      assert.match(empty.stderr, /holds no workflow files \(\*\.json\)/);
    });
  });

  // ---------------------------------------------------------------------------------------------

  describe('handoff watch across a server crash and restart', { timeout: 2 * TEST_TIMEOUT_MS }, () => {
    let srv: ServerProcess | undefined;
    after(async () => {
      await srv?.kill();
    });

    it('reconnects with Last-Event-ID, shows every event once in order, and exits 0 at completed', {
      timeout: 2 * TEST_TIMEOUT_MS,
    }, async () => {
      const dataDir = freshDir();
      let server = await startServer({ dataDir, env: ENV, readyTimeoutMs: READY_TIMEOUT_MS });
      srv = server;
      const { port, url } = server;

      // {steps: 6, stepMs: 1000} takes ~6 s: long enough that the crash, a moment after the watch
      // attached, hits a run still working (with 300 ms steps a run sometimes ended first). If the
      // watch is not attached before the run ends (a slow machine), try again with longer steps.
      let watch: CliProcess | undefined;
      let snapshot: Rec | undefined;
      for (const stepMs of [1_000, 3_000, 10_000]) {
        const res = await postJson(
          `${url}/v1/a2a`,
          {
            jsonrpc: '2.0',
            id: 1,
            method: 'message/send',
            params: {
              message: {
                kind: 'message',
                role: 'user',
                messageId: randomUUID(),
                parts: [{ kind: 'data', data: { steps: 6, stepMs } }],
                metadata: { skillId: 'steps' },
              },
              configuration: { blocking: false },
            },
          },
          { token: KEY },
        );
        const taskId = res.body.result.id as string;
        const w = spawnCli(['watch', url, taskId, '--json', '--reconnect-for', '120', '--a2a-version', '0.3'], {
          timeoutMs: 150_000,
        });
        await waitUntil('the first watch event', () => w.stdout().includes('\n') || w.child.exitCode !== null, 60_000);
        const first = JSON.parse(w.stdout().split('\n')[0] ?? 'null') as Rec;
        if (first?.result?.status?.state === 'working') {
          watch = w;
          snapshot = first;
          break;
        }
        await w.done;
      }
      assert.ok(watch && snapshot, 'the watch never attached to a run that was still working');
      assert.equal(snapshot.result.kind, 'task', 'without a cursor the first event is the Task snapshot');

      // Crash mid-watch, then the same port and data directory again.
      await server.kill();
      await sleep(300);
      server = await startServer({ dataDir, env: ENV, port, readyTimeoutMs: READY_TIMEOUT_MS });
      srv = server;

      const result = await watch.done;
      expectExit(result, 0);
      const lines = result.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Rec);
      const ids = lines.map((l) => l.id as number);
      assert.ok(
        ids.every((id) => Number.isSafeInteger(id)),
        `every event carries its sequence: ${ids}`,
      );
      for (let i = 1; i < ids.length; i++)
        assert.ok(ids[i]! > ids[i - 1]!, `event ids strictly increase, no duplicate: ${ids}`);
      assert.equal(new Set(ids).size, ids.length);
      const last = lines.at(-1)!.result as Rec;
      assert.equal(last.kind, 'status-update');
      assert.equal(last.status.state, 'completed');
      assert.equal(last.final, true);
      assert.ok(
        lines.some((l) => l.result.kind === 'artifact-update' && l.result.artifact.parts[0].data.steps === 6),
        result.stdout,
      );
      // It really lost the connection, and resumed after an event it had shown.
      assert.match(result.stderr, /connection lost/);
      const resumedAfter = /reconnected, resuming after event (\d+)/.exec(result.stderr)?.[1];
      assert.ok(resumedAfter !== undefined && ids.includes(Number(resumedAfter)), result.stderr);
      assert.ok(ids.at(-1)! > Number(resumedAfter), 'events arrived after the reconnection');

      // The restarted server agrees.
      const taskId = snapshot.result.id as string;
      const got = await postJson(
        `${url}/v1/a2a`,
        { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: taskId } },
        { token: KEY },
      );
      assert.equal(got.body.result.status.state, 'completed', JSON.stringify(got.body));
    });
  });

  // ---------------------------------------------------------------------------------------------

  describe('handoff CLI against a plain @a2a-js/sdk 0.3.14 agent', {
    timeout: 2 * TEST_TIMEOUT_MS,
    concurrency: true,
  }, () => {
    let sdk: SdkSampleServer;

    before(async () => {
      sdk = await startSdkSampleServer();
    });
    after(async () => {
      await sdk?.close();
    });

    it('send echo exits 0 with the artifact; get returns the task', { timeout: TEST_TIMEOUT_MS }, async () => {
      const sent = await cli(['send', sdk.url, 'hello sdk', '--json'], { apiKey: null });
      expectExit(sent, 0);
      const task = json(sent);
      assert.equal(task.status.state, 'completed');
      assert.equal(textOf(task), 'hello sdk');

      const [got, human] = await Promise.all([
        cli(['get', sdk.url, task.id, '--json'], { apiKey: null }),
        cli(['get', sdk.url, task.id], { apiKey: null }),
      ]);
      expectExit(got, 0);
      assert.equal(json(got).id, task.id);
      assert.equal(json(got).status.state, 'completed');
      expectExit(human, 0);
      assert.match(human.stdout, /artifact\s+echo\n\s+hello sdk/);

      // A finished task watched: the snapshot is terminal, exit 0.
      const watched = await cli(['watch', sdk.url, task.id, '--json'], { apiKey: null });
      expectExit(watched, 0);
      assert.equal(JSON.parse(watched.stdout.trim().split('\n').at(-1)!).result.status.state, 'completed');
    });

    it('the input-required skill exits 3; an answer completes it (exit 0)', { timeout: TEST_TIMEOUT_MS }, async () => {
      const sent = await cli(['send', sdk.url, 'start', '--skill', 'clarify'], { apiKey: null });
      expectExit(sent, 3);
      assert.match(sent.stdout, /state\s+input-required/);
      assert.match(sent.stdout, new RegExp(`message\\s+${SAMPLE_QUESTION}`));
      const id = /task\s+(\S+)/.exec(sent.stdout)?.[1];
      assert.ok(id, sent.stdout);

      const got = await cli(['get', sdk.url, id, '--json'], { apiKey: null });
      expectExit(got, 3);
      assert.equal(json(got).status.state, 'input-required');

      const answered = await cli(['answer', sdk.url, id, 'Ada', '--json'], { apiKey: null });
      expectExit(answered, 0);
      assert.equal(textOf(json(answered)), 'Hello, Ada!');
    });

    it('Handoff-only features fail cleanly: no task list, no push (exit 1)', { timeout: TEST_TIMEOUT_MS }, async () => {
      const [tasks, push] = await Promise.all([
        cli(['tasks', sdk.url], { apiKey: null }),
        cli(['push', 'list', sdk.url, 'some-task'], { apiKey: null }),
      ]);
      expectExit(tasks, 1);
      assert.match(tasks.stderr, /this host offers no task list/);
      expectExit(push, 1);
      assert.match(push.stderr, /JSON-RPC error -3200[13]/);
    });

    it('its card lists no supportedInterfaces: 0.3 by default, and --a2a-version 1.0 is refused (exit 1)', {
      timeout: TEST_TIMEOUT_MS,
    }, async () => {
      const [v1, watched] = await Promise.all([
        cli(['send', sdk.url, 'x', '--a2a-version', '1.0'], { apiKey: null }),
        cli(['send', sdk.url, 'hello 0.3', '--json'], { apiKey: null }),
      ]);
      expectExit(v1, 1);
      assert.match(v1.stderr, /offers no A2A 1\.0 JSON-RPC interface/);
      expectExit(watched, 0);
      assert.equal(json(watched).kind, 'task');
    });
  });
});
