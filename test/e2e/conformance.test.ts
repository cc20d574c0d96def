// `handoff conformance` end to end: the COMPILED CLI (dist/src/cli/main.js) run as a child
// process against
//   - a real Handoff server (`handoff serve`, HANDOFF_TEST_SEAMS=1, API keys configured) in
//     --strict mode: exit 0 and every one of the five RFC 0100 legs PASS;
//   - the same server without the seams: the seam legs SKIP ("seam absent"), FAIL under --strict;
//   - test/support/broken-host.ts, a node:http fixture host with one deliberate defect per
//     variant (A stale 'working', B http:// push accepted, C resubscribe under a new task id,
//     D resubscribe restarts the run): exit 1, exactly the leg at fault FAILs, and its evidence
//     names the request, the status, the offending field and value. The fixture without a defect
//     passes everything, so each failure is the defect's and nothing else's.
// Everything is on 127.0.0.1; every child and fixture has a deadline and is killed or closed in
// an after hook.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createParser } from 'eventsource-parser';
import { SseParser, type SseFrame } from '../../src/conformance/sse.js';
import type { Check, ConformanceReport, LegId, LegResult } from '../../src/conformance/types.js';
import { type BrokenHost, type BrokenVariant, startBrokenHost } from '../support/broken-host.js';
import { cliPath, killAllServers, repoRoot, type ServerProcess, startServer } from '../support/server-process.js';

const KEY = 'key-conformance-1';
const CLI_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 180_000;
const LEG_IDS: LegId[] = ['discovery', 'task-state-shape', 'durable-tasks-get', 'push-ssrf', 'resubscribe'];

const dirs: string[] = [];
const freshDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'handoff-conformance-'));
  dirs.push(d);
  return d;
};
const fixtures = new Set<BrokenHost>();

after(async () => {
  await killAllServers();
  await Promise.all([...fixtures].map((f) => f.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Running the compiled CLI

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[]): Promise<CliRun> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('HANDOFF_')) env[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath(), 'conformance', ...args], {
      cwd: repoRoot(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `handoff conformance ${args.join(' ')} did not exit within ${CLI_TIMEOUT_MS} ms\n${stdout}\n${stderr}`,
        ),
      );
    }, CLI_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function runJson(args: string[]): Promise<{ run: CliRun; report: ConformanceReport }> {
  const run = await runCli([...args, '--json']);
  let report: ConformanceReport;
  try {
    report = JSON.parse(run.stdout) as ConformanceReport;
  } catch {
    throw new Error(`--json output is not JSON (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
  return { run, report };
}

const leg = (r: ConformanceReport, id: LegId): LegResult => {
  const l = r.legs.find((x) => x.id === id);
  assert.ok(l, `no leg ${id} in the report`);
  return l;
};
const failedChecks = (l: LegResult): Check[] => l.checks.filter((c) => !c.ok);
const check = (l: LegResult, name: RegExp): Check => {
  const c = l.checks.find((x) => name.test(x.name));
  assert.ok(c, `leg ${l.id} has no check matching ${name}: ${l.checks.map((x) => x.name).join(' | ')}`);
  return c;
};
const show = (r: ConformanceReport): string =>
  JSON.stringify(
    r.legs.map((l) => ({ id: l.id, status: l.status, reason: l.reason, failed: failedChecks(l) })),
    null,
    2,
  );

/** Exactly `failing` failed; every other leg passed. */
function assertOnlyFailing(r: ConformanceReport, failing: LegId): void {
  for (const id of LEG_IDS) {
    const want = id === failing ? 'fail' : 'pass';
    assert.equal(leg(r, id).status, want, `leg ${id} should be ${want}: ${show(r)}`);
  }
  assert.equal(r.ok, false);
  assert.equal(r.exitCode, 1);
  assert.deepEqual(r.summary, { total: 5, pass: 4, fail: 1, skip: 0 });
}

async function brokenHost(variant: BrokenVariant): Promise<BrokenHost> {
  const h = await startBrokenHost(variant);
  fixtures.add(h);
  return h;
}

async function closeFixture(h: BrokenHost): Promise<void> {
  fixtures.delete(h);
  await h.close();
}

// ---------------------------------------------------------------------------------------------

describe('handoff conformance against a real Handoff server (seams on, API key)', {
  timeout: TEST_TIMEOUT_MS * 3,
}, () => {
  let srv: ServerProcess;
  before(async () => {
    srv = await startServer({
      dataDir: freshDir(),
      env: { HANDOFF_TEST_SEAMS: '1', HANDOFF_API_KEYS: `${KEY}=acme:alice` },
    });
  });

  it('--strict --json: exit 0, every leg PASS with every check held (A2A 1.0, which the card offers)', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const { run, report } = await runJson([srv.url, '--api-key', KEY, '--strict']);
    assert.equal(run.code, 0, `exit ${run.code}: ${show(report)}\n${run.stderr}`);
    assert.equal(report.a2aVersion, '1.0');
    assert.equal(report.ok, true);
    assert.equal(report.exitCode, 0);
    assert.equal(report.strict, true);
    assert.equal(report.apiKey, true);
    assert.equal(report.baseUrl, srv.url);
    assert.deepEqual(
      report.legs.map((l) => l.id),
      LEG_IDS,
    );
    assert.deepEqual(report.summary, { total: 5, pass: 5, fail: 0, skip: 0 });
    for (const l of report.legs) {
      assert.equal(l.status, 'pass', `${l.id}: ${show(report)}`);
      assert.deepEqual(failedChecks(l), []);
    }
    assert.ok(!run.stdout.includes(KEY), 'the API key must never be printed');
    // The legs really ran their assertions (not a vacuous pass):
    assert.ok(check(leg(report, 'discovery'), /capabilities\.streaming equals/).ok);
    assert.equal(leg(report, 'task-state-shape').checks.length, 12);
    assert.ok(check(leg(report, 'durable-tasks-get'), /stale 'working'/).ok);
    assert.ok(check(leg(report, 'durable-tasks-get'), /GetTask result\.metadata\.openwop\.interrupt\.kind/).ok);
    assert.ok(check(leg(report, 'resubscribe'), /^SubscribeToTask \(no cursor\) first sends the current Task/).ok);
    assert.ok(check(leg(report, 'push-ssrf'), /^ADDRESS arm/).ok);
    assert.ok(check(leg(report, 'push-ssrf'), /^SCHEME arm/).ok);
    assert.ok(check(leg(report, 'push-ssrf'), /^positive control/).ok);
    assert.ok(check(leg(report, 'resubscribe'), /first sends the current Task/).ok);
    assert.ok(check(leg(report, 'resubscribe'), /task id is unchanged/).ok);
    assert.ok(
      check(leg(report, 'resubscribe'), /exactly one run\.started/).ok,
      'the event-log check must have run against Handoff',
    );
  });

  it('--strict --a2a-version 0.3: every leg PASS over 0.3', { timeout: TEST_TIMEOUT_MS }, async () => {
    const { run, report } = await runJson([srv.url, '--api-key', KEY, '--strict', '--a2a-version', '0.3']);
    assert.equal(run.code, 0, `exit ${run.code}: ${show(report)}\n${run.stderr}`);
    assert.equal(report.a2aVersion, '0.3');
    assert.deepEqual(report.summary, { total: 5, pass: 5, fail: 0, skip: 0 });
    assert.ok(check(leg(report, 'durable-tasks-get'), /tasks\/get result\.metadata\.openwop\.interrupt\.kind/).ok);
    assert.ok(check(leg(report, 'resubscribe'), /^tasks\/resubscribe \(no cursor\) first sends the current Task/).ok);
    assert.ok(check(leg(report, 'resubscribe'), /exactly one run\.started/).ok);
  });

  it('--a2a-version with an unknown value exits 1 naming the choices', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await runCli([srv.url, '--a2a-version', '0.9']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /--a2a-version must be one of 0\.3, 1\.0, got '0\.9'/);
    assert.equal(run.stdout, '');
  });

  it('--strict text report: a PASS line per leg and the summary, exit 0', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await runCli([srv.url, '--api-key', KEY, '--strict']);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    for (const title of [
      '1. discovery shape',
      '2. A2ATaskState shape',
      '3. durable tasks/get',
      '4. push SSRF',
      '5. tasks/resubscribe',
    ]) {
      assert.match(run.stdout, new RegExp(`^PASS  ${title.replace(/[./]/g, (c) => `\\${c}`)}`, 'm'));
    }
    assert.match(run.stdout, /5 passed, 0 failed, 0 skipped of 5 legs .* → OK \(exit 0\)/);
    assert.doesNotMatch(run.stdout, /✗/);
  });
});

describe('handoff conformance against Handoff without the seams', { timeout: TEST_TIMEOUT_MS * 3 }, () => {
  let srv: ServerProcess;
  before(async () => {
    srv = await startServer({ dataDir: freshDir(), env: { HANDOFF_API_KEYS: `${KEY}=acme:alice` } });
  });

  it('default mode: the seam legs SKIP as "seam absent", the rest PASS, exit 0', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const { run, report } = await runJson([srv.url, '--api-key', KEY]);
    assert.equal(run.code, 0, show(report));
    for (const id of ['durable-tasks-get', 'push-ssrf'] as const) {
      const l = leg(report, id);
      assert.equal(l.status, 'skip', show(report));
      assert.equal(l.skipKind, 'seam-absent');
      assert.match(
        l.reason ?? '',
        new RegExp(
          String.raw`^seam absent: POST http:\/\/127\.0\.0\.1:\d+\/v1\/host\/sample\/a2a\/tasks\/(start|push-config) ` +
            '.* answered 404',
        ),
      );
    }
    for (const id of ['discovery', 'task-state-shape', 'resubscribe'] as const)
      assert.equal(leg(report, id).status, 'pass', show(report));
    assert.deepEqual(report.summary, { total: 5, pass: 3, fail: 0, skip: 2 });
  });

  it('--strict: a missing seam is a FAIL, exit 1', { timeout: TEST_TIMEOUT_MS }, async () => {
    const { run, report } = await runJson([srv.url, '--api-key', KEY, '--strict']);
    assert.equal(run.code, 1, show(report));
    for (const id of ['durable-tasks-get', 'push-ssrf'] as const) {
      const l = leg(report, id);
      assert.equal(l.status, 'fail');
      assert.match(l.reason ?? '', /^--strict: seam absent/);
    }
    assert.equal(report.summary.fail, 2);
  });
});

describe('handoff conformance against deliberately broken hosts', { timeout: TEST_TIMEOUT_MS * 8 }, () => {
  it('the fixture without a defect passes every leg under --strict (the control)', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const h = await brokenHost('ok');
    try {
      const { run, report } = await runJson([h.url, '--strict']);
      assert.equal(run.code, 0, show(report));
      assert.deepEqual(report.summary, { total: 5, pass: 5, fail: 0, skip: 0 });
      // Its card offers 0.3 only (no supportedInterfaces): that is the default, and 1.0 is not found.
      assert.equal(report.a2aVersion, '0.3');
      const v1 = await runJson([h.url, '--a2a-version', '1.0']);
      assert.equal(v1.run.code, 1);
      const missing = check(leg(v1.report, 'discovery'), /JSON-RPC URL for A2A 1\.0/);
      assert.equal(missing.ok, false);
      assert.match(String(missing.evidence?.note), /no JSONRPC interface of protocolVersion 1\.x/);
    } finally {
      await closeFixture(h);
    }
  });

  it("A: a stale 'working' record for the paused task → durable tasks/get FAILs with the state as evidence", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const h = await brokenHost('A');
    try {
      const { run, report } = await runJson([h.url, '--strict']);
      assert.equal(run.code, 1);
      assertOnlyFailing(report, 'durable-tasks-get');
      const l = leg(report, 'durable-tasks-get');
      const stale = check(l, /^record\.state is 'input-required'/);
      assert.equal(stale.ok, false);
      assert.equal(stale.evidence?.status, 200);
      assert.equal(stale.evidence?.field, 'state');
      assert.equal(stale.evidence?.expected, 'input-required');
      assert.equal(stale.evidence?.actual, 'working');
      assert.match(
        stale.evidence?.request ?? '',
        /^GET http:\/\/127\.0\.0\.1:\d+\/v1\/host\/sample\/a2a\/tasks\/task-\d+$/,
      );
      assert.match(stale.evidence?.note ?? '', /stale/);
      const kind = check(l, /^record\.interruptKind/);
      assert.equal(kind.ok, false);
      assert.equal(kind.evidence?.actual, '(absent)');
      const rpcState = check(l, /^tasks\/get result\.status\.state/);
      assert.equal(rpcState.ok, false);
      assert.equal(rpcState.evidence?.field, 'result.status.state');
      assert.equal(rpcState.evidence?.actual, 'working');
      assert.match(rpcState.evidence?.request ?? '', /"method":"tasks\/get"/);
      // What stayed right stays PASSed within the leg.
      assert.ok(check(l, /^record\.runId === taskId/).ok);
    } finally {
      await closeFixture(h);
    }
  });

  it('A, text report: the failing leg, the offending field and value are readable', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const h = await brokenHost('A');
    try {
      const run = await runCli([h.url, '--strict']);
      assert.equal(run.code, 1, run.stdout);
      assert.match(run.stdout, /^FAIL {2}3\. durable tasks\/get \(a2a\.durableTasks\)$/m);
      assert.match(
        run.stdout,
        new RegExp(
          [
            String.raw`✗ record\.state is 'input-required' \(live, not a stale 'working'\)`,
            String.raw` {10}request: {2}GET http:\/\/127\.0\.0\.1:\d+\/v1\/host\/sample\/a2a\/tasks\/task-\d+`,
            ' {10}status: {3}200',
            ' {10}field: {4}state',
            ' {10}expected: "input-required"',
            ' {10}actual: {3}"working"',
          ].join(String.raw`\n`),
        ),
      );
      assert.match(run.stdout, /^PASS {2}4\. push SSRF/m);
      assert.match(run.stdout, /4 passed, 1 failed, 0 skipped of 5 legs .* → NOT CONFORMANT \(exit 1\)/);
    } finally {
      await closeFixture(h);
    }
  });

  it('B: http:// push URLs accepted (200) → push SSRF FAILs on the SCHEME arm only', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const h = await brokenHost('B');
    try {
      const { run, report } = await runJson([h.url, '--strict']);
      assert.equal(run.code, 1);
      assertOnlyFailing(report, 'push-ssrf');
      const l = leg(report, 'push-ssrf');
      assert.equal(failedChecks(l).length, 1, show(report));
      const scheme = check(l, /^SCHEME arm/);
      assert.equal(scheme.ok, false);
      assert.equal(scheme.evidence?.status, 200);
      assert.equal(scheme.evidence?.field, 'url');
      assert.equal(scheme.evidence?.actual, 'HTTP 200');
      assert.match(
        scheme.evidence?.request ?? '',
        new RegExp(
          String.raw`^POST http:\/\/127\.0\.0\.1:\d+\/v1\/host\/sample\/a2a\/tasks\/push-config ` +
            String.raw`\{"taskId":"run_x","url":"http:\/\/push\.example\.com\/push"\}$`,
        ),
      );
      assert.match(scheme.evidence?.note ?? '', /ACCEPTED http:\/\/push\.example\.com\/push/);
      assert.ok(check(l, /^ADDRESS arm/).ok);
      assert.ok(check(l, /^positive control/).ok);
    } finally {
      await closeFixture(h);
    }
  });

  it('C: tasks/resubscribe under a new task id → resubscribe FAILs naming both ids', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const h = await brokenHost('C');
    try {
      const { run, report } = await runJson([h.url, '--strict']);
      assert.equal(run.code, 1);
      assertOnlyFailing(report, 'resubscribe');
      const l = leg(report, 'resubscribe');
      assert.deepEqual(
        failedChecks(l).map((c) => c.name),
        ['the task id is unchanged in every event of both streams'],
        show(report),
      );
      const ids = check(l, /task id is unchanged/);
      assert.equal(ids.evidence?.field, 'result.id');
      assert.match(String(ids.evidence?.expected), /^task-\d+$/);
      assert.match(String(ids.evidence?.actual), /^task-\d+$/);
      assert.notEqual(ids.evidence?.actual, ids.evidence?.expected);
      assert.match(ids.evidence?.request ?? '', /"method":"tasks\/resubscribe","params":\{"id":"task-\d+"\}/);
      assert.match(ids.evidence?.note ?? '', /^tasks\/resubscribe event #0/);
    } finally {
      await closeFixture(h);
    }
  });

  it('D: resubscribing restarts the run → a second run.started in the event log FAILs the leg', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const h = await brokenHost('D');
    try {
      const { run, report } = await runJson([h.url, '--strict']);
      assert.equal(run.code, 1);
      assertOnlyFailing(report, 'resubscribe');
      const once = check(leg(report, 'resubscribe'), /exactly one run\.started/);
      assert.equal(once.ok, false);
      assert.equal(once.evidence?.expected, 1);
      assert.equal(once.evidence?.actual, 2);
      assert.match(once.evidence?.request ?? '', /\/v1\/runs\/task-\d+\/events\/poll/);
    } finally {
      await closeFixture(h);
    }
  });

  it('a host advertising no durable/push/streaming flags: those legs SKIP (exit 0), FAIL under --strict (exit 1)', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const h = await brokenHost('sync');
    try {
      const lenient = await runJson([h.url]);
      assert.equal(lenient.run.code, 0, show(lenient.report));
      for (const [id, flag] of [
        ['durable-tasks-get', 'durableTasks'],
        ['push-ssrf', 'pushNotifications'],
        ['resubscribe', 'streaming'],
      ] as const) {
        const l = leg(lenient.report, id);
        assert.equal(l.status, 'skip');
        assert.equal(l.skipKind, 'not-advertised');
        assert.equal(l.reason, `a2a.${flag} is not advertised (value: absent)`);
      }
      const strict = await runJson([h.url, '--strict']);
      assert.equal(strict.run.code, 1);
      assert.deepEqual(strict.report.summary, { total: 5, pass: 2, fail: 3, skip: 0 });
      assert.match(leg(strict.report, 'resubscribe').reason ?? '', /^--strict: a2a\.streaming is not advertised/);
      // Nothing beyond discovery and the card was asked of a host that advertises nothing.
      assert.deepEqual(
        h.requests.filter((r) => !r.startsWith('GET /.well-known/')),
        [],
      );
    } finally {
      await closeFixture(h);
    }
  });

  it('an unusable base URL exits 1 with a message', { timeout: TEST_TIMEOUT_MS }, async () => {
    const run = await runCli(['ftp://127.0.0.1:1/']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /not an http\(s\) URL/);
  });
});

// ---------------------------------------------------------------------------------------------
// The suite's own SSE parser (the shipped CLI must not need eventsource-parser, a devDependency)
// must cut frames exactly as eventsource-parser does, whatever the chunking.

describe('the conformance SSE parser agrees with eventsource-parser', () => {
  const stream =
    '\uFEFF: hello\n\nid: 1\ndata: {"a":1}\n\n' +
    'event: update\r\ndata: line one\r\ndata: line two\r\n\r\n' +
    'id: 7\rdata:no-space\r\r' +
    'retry: 1000\n: keepalive\n\n' +
    'data\n\n' +
    'id: 9\nevent: x\ndata:  two spaces\nunknown: field\n\n' +
    'data: unterminated at the end';

  const reference = (chunks: string[]): SseFrame[] => {
    const out: SseFrame[] = [];
    const p = createParser({
      onEvent(e) {
        const f: SseFrame = { data: e.data };
        if (e.id !== undefined) f.id = e.id;
        if (e.event !== undefined) f.event = e.event;
        out.push(f);
      },
    });
    for (const c of chunks) p.feed(c);
    return out;
  };
  const ours = (chunks: string[]): SseFrame[] => {
    const out: SseFrame[] = [];
    const p = new SseParser((f) => out.push(f));
    for (const c of chunks) p.feed(c);
    p.end();
    return out;
  };

  it('whole, per character, and in every two-way split', () => {
    const expected = reference([stream]);
    assert.equal(expected.length, 5);
    assert.deepEqual(ours([stream]), expected);
    assert.deepEqual(ours([...stream]), expected);
    for (let i = 1; i < stream.length; i++) {
      const chunks = [stream.slice(0, i), stream.slice(i)];
      assert.deepEqual(ours(chunks), reference(chunks), `split at ${i}`);
    }
  });
});
