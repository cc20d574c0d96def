// The README's commands as a new user types them, through npm: `npm start -- … --pid-file <file>`
// and `kill -9 $(cat <file>)` kill the server itself (killing the backgrounded npm left the server
// holding the database, and a restart refused "database in use"), and `npm run handoff -- …` runs
// the client without a rebuild, its hints naming that same command.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort, killAllServers, repoRoot, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

/** A cold start on a loaded machine, npm's own start-up included. */
const READY_MS = 90_000;

const dirs: string[] = [];
const freshDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'handoff-readme-'));
  dirs.push(d);
  return d;
};

/** The environment of a new user's shell: nothing HANDOFF_* and nothing an enclosing `npm test` set. */
function userEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('HANDOFF_') && !k.startsWith('npm_')) env[k] = v;
  }
  return env;
}

const npmChildren: ChildProcess[] = [];

/** `npm <args>` in the checkout, in its own process group (so `after` can end npm and what it started). */
function npm(args: string[]): { child: ChildProcess; output: () => string; done: Promise<number | null> } {
  const child = spawn('npm', args, {
    cwd: repoRoot(),
    env: userEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  npmChildren.push(child);
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString('utf8')));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString('utf8')));
  const done = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output: () => out, done };
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/healthz`)).status === 200;
  } catch {
    return false;
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

after(async () => {
  for (const c of npmChildren) {
    if (c.pid !== undefined && c.exitCode === null && c.signalCode === null) {
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  await killAllServers();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('serve --pid-file', { timeout: 300_000 }, () => {
  it('`npm start -- --pid-file F &`, then `kill -9 $(cat F)` kills the server: a restart on the same data starts', async () => {
    const data = freshDir();
    const pidFile = join(data, 'pid');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const started = npm(['start', '--', '--port', String(port), '--data', data, '--pid-file', pidFile]);
    await until('the host started by npm start to answer', () => healthy(url), {
      deadlineMs: READY_MS,
      intervalMs: 100,
      detail: started.output,
    });
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    assert.ok(Number.isInteger(pid) && pid > 0, `the pid file holds a process id: ${readFileSync(pidFile, 'utf8')}`);
    assert.notEqual(pid, started.child.pid, 'the pid file names the server, not npm');

    process.kill(pid, 'SIGKILL');
    await until('the server to be gone', () => !alive(pid), { deadlineMs: 30_000, intervalMs: 50 });
    assert.equal(await healthy(url), false, 'nothing answers on the port any more');
    await started.done;

    // The database is free again: a new server on the same data directory starts and answers.
    const again = await startServer({ dataDir: data, readyTimeoutMs: READY_MS });
    assert.equal(await healthy(again.url), true);
    await again.stop();
  });

  it('is written once the host listens and removed by a drain (HANDOFF_PID_FILE)', async () => {
    const data = freshDir();
    const pidFile = join(freshDir(), 'run', 'handoff.pid');
    const srv = await startServer({ dataDir: data, env: { HANDOFF_PID_FILE: pidFile }, readyTimeoutMs: READY_MS });
    assert.equal(readFileSync(pidFile, 'utf8'), `${srv.pid}\n`);
    const exit = await srv.stop('SIGTERM');
    assert.equal(exit.code, 0, srv.logs());
    assert.equal(existsSync(pidFile), false, 'a drained host leaves no pid file behind');
  });
});

describe('npm run handoff -- …', { timeout: 300_000 }, () => {
  it('validate: a minimal workflow file (ids, types, configs, edges) is valid; a wrong one is named', async () => {
    const dir = freshDir();
    const minimal = {
      id: 'hello',
      nodes: [
        { id: 'greet', typeId: 'core.transform', config: { output: { text: 'Hello' } } },
        { id: 'review', typeId: 'core.approvalGate', config: { title: 'Send it?' } },
      ],
      edges: [{ id: 'e1', sourceNodeId: 'greet', targetNodeId: 'review' }],
    };
    writeFileSync(join(dir, 'hello.json'), JSON.stringify(minimal));
    const valid = npm(['run', '-s', 'handoff', '--', 'validate', dir]);
    assert.equal(await valid.done, 0, valid.output());
    assert.equal(valid.output(), '1 workflow valid: hello\n');

    const wrong = { ...minimal, edges: [{ id: 'e1', sourceNodeId: 'greet', targetNodeId: 'reveiw' }] };
    writeFileSync(join(dir, 'hello.json'), JSON.stringify(wrong));
    const invalid = npm(['run', '-s', 'handoff', '--', 'validate', join(dir, 'hello.json')]);
    assert.equal(await invalid.done, 1, invalid.output());
    assert.equal(
      invalid.output(),
      `${join(dir, 'hello.json')}: edge "e1": targetNodeId "reveiw" is not a node\n1 problem in 1 of 1 file\n`,
    );
  });

  it('runs the client of the checkout, and its hints name `npm run handoff --`', async () => {
    const srv = await startServer({ dataDir: freshDir(), readyTimeoutMs: READY_MS });
    const sent = npm(['run', 'handoff', '--', 'send', srv.url, 'launch plan', '--skill', 'approval', '--no-wait']);
    assert.equal(await sent.done, 3, sent.output());
    const taskId = /\b(run_[0-9a-z-]+)/i.exec(sent.output())?.[1];
    assert.ok(taskId, `send printed the task id:\n${sent.output()}`);
    const got = npm(['run', 'handoff', '--', 'get', srv.url, taskId]);
    assert.equal(await got.done, 3, got.output());
    assert.match(got.output(), new RegExp(`npm run handoff -- approve ${srv.url} ${taskId} --action accept`));
  });
});
