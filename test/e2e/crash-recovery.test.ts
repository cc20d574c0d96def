// Durability is tested by crashing: a real server process is SIGKILLed mid-run and restarted on
// the same database; every run must then finish exactly as if nothing happened — a gap-free event
// log, one `run.started`, one completion per node execution, timers honoured, interrupts intact.
// Runs on SQLite always, and on PostgreSQL when HANDOFF_TEST_PG_URL is set (own schema per test).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it, type TestContext } from 'node:test';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';
import {
  getJson,
  killAllServers,
  postJson,
  type ServerProcess,
  sleep,
  startServer,
} from '../support/server-process.js';
import { until } from '../support/until.js';

const PG_URL = pgTestUrl();
const pgSchemas = PG_URL ? pgTestSchemas(PG_URL, 'crash') : undefined;

type Dialect = 'sqlite' | 'postgres';

/** A run event as GET /v1/runs/{id}/events/poll returns it. */
interface RunEventDoc {
  eventId: string;
  runId: string;
  type: string;
  sequence: number;
  nodeId?: string;
  payload: Record<string, any>;
  timestamp: string;
}

const dataDirs: string[] = [];

/** A fresh database for one test: a temp data dir, plus its own schema on PostgreSQL. Leases of a
 * killed process expire after HANDOFF_LEASE_MS on PostgreSQL (SQLite frees them at start). */
function freshDb(dialect: Dialect): { dataDir: string; env: Record<string, string> } {
  const dataDir = mkdtempSync(join(tmpdir(), 'handoff-crash-'));
  dataDirs.push(dataDir);
  if (dialect === 'sqlite' || !pgSchemas) return { dataDir, env: {} };
  return {
    dataDir,
    env: { HANDOFF_DATABASE_URL: pgSchemas.url, HANDOFF_PG_SCHEMA: pgSchemas.fresh(), HANDOFF_LEASE_MS: '1500' },
  };
}

afterEach(async () => {
  await killAllServers();
});

after(async () => {
  await killAllServers();
  await pgSchemas?.dropAll();
  for (const d of dataDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// REST helpers

async function startRun(srv: ServerProcess, workflowId: string, inputs: Record<string, unknown>): Promise<string> {
  const res = await postJson(`${srv.url}/v1/runs`, { workflowId, inputs });
  assert.equal(res.status, 201, `POST /v1/runs ${workflowId}: ${JSON.stringify(res.body)}`);
  return res.body.runId as string;
}

async function getRun(srv: ServerProcess, runId: string): Promise<Record<string, any>> {
  const res = await getJson(`${srv.url}/v1/runs/${runId}`);
  assert.equal(res.status, 200, `GET /v1/runs/${runId}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The whole event log, page by page, without long-polling (timeout=0). */
async function allEvents(srv: ServerProcess, runId: string): Promise<RunEventDoc[]> {
  const out: RunEventDoc[] = [];
  let last = -1;
  for (let page = 0; page < 100; page++) {
    const res = await getJson(`${srv.url}/v1/runs/${runId}/events/poll?lastSequence=${last}&timeout=0&limit=1000`);
    assert.equal(res.status, 200, `events of ${runId}: ${JSON.stringify(res.body)}`);
    const events = res.body.events as RunEventDoc[];
    if (events.length === 0) return out;
    out.push(...events);
    last = events.at(-1)!.sequence;
  }
  throw new Error(`event log of ${runId} did not end after 100 pages`);
}

/** Poll `probe` every `intervalMs` until it returns a value; fail after `timeoutMs`, showing what
 * the probe last noted (and the server's output), or at once if the server exits. */
async function waitFor<T>(
  what: string,
  srv: ServerProcess,
  probe: (note: (seen: unknown) => void) => Promise<T | undefined>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  let lastSeen: unknown;
  const note = (seen: unknown) => {
    lastSeen = seen;
  };
  const whileUp = () => {
    if (srv.child.exitCode !== null || srv.child.signalCode !== null) {
      throw new Error(`server exited while waiting for ${what}:\n${srv.logs().slice(-4000)}`);
    }
    return probe(note);
  };
  return until(what, whileUp, {
    deadlineMs: timeoutMs,
    intervalMs,
    detail: () => `last seen: ${JSON.stringify(lastSeen)}\n${srv.logs().slice(-4000)}`,
  });
}

const ofType = (events: RunEventDoc[], type: string, nodeId?: string) =>
  events.filter((e) => e.type === type && (nodeId === undefined || e.nodeId === nodeId));

/** Event-log invariants that hold for every run, crashed or not. */
function assertLogIntegrity(runId: string, events: RunEventDoc[]): void {
  assert.ok(events.length > 0, `${runId}: empty event log`);
  assert.deepEqual(
    events.map((e) => e.sequence),
    events.map((_, i) => i),
    `${runId}: sequences must be 0..n-1 without gap or duplicate`,
  );
  for (const e of events) assert.equal(e.runId, runId);
  assert.equal(ofType(events, 'run.started').length, 1, `${runId}: exactly one run.started`);
  assert.equal(events[0]?.type, 'run.started', `${runId}: run.started comes first`);
  for (const type of ['node.started', 'node.completed']) {
    const seen = new Map<string, number>();
    for (const e of ofType(events, type)) {
      const key = `${e.nodeId}#${String(e.payload.ordinal)}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    const dups = [...seen].filter(([, n]) => n > 1);
    assert.deepEqual(dups, [], `${runId}: each (nodeId, ordinal) has exactly one ${type}`);
  }
}

const ordinals = (events: RunEventDoc[], nodeId: string): number[] =>
  ofType(events, 'node.completed', nodeId)
    .map((e) => e.payload.ordinal as number)
    .sort((a, b) => a - b);

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** The `step` timer's node.started (it carries the recorded wakeAt), once committed. */
async function sleepingStep(
  srv: ServerProcess,
  runId: string,
): Promise<{ wakeAt: number; wakeAtIso: string } | undefined> {
  const started = ofType(await allEvents(srv, runId), 'node.started', 'step')[0];
  if (!started || typeof started.payload.wakeAt !== 'string') return undefined;
  return { wakeAtIso: started.payload.wakeAt, wakeAt: Date.parse(started.payload.wakeAt) };
}

/** After the timer: the step ran once, not before its recorded wakeAt, and woke on the same timer. */
async function assertTimerHonoured(
  srv: ServerProcess,
  runId: string,
  wake: { wakeAt: number; wakeAtIso: string },
  notBefore: number,
) {
  const run = await getRun(srv, runId);
  assert.equal(run.status, 'completed');
  const events = await allEvents(srv, runId);
  assertLogIntegrity(runId, events);
  assert.equal(ofType(events, 'node.started', 'step').length, 1, 'the timer was started once');
  assert.deepEqual(ordinals(events, 'step'), [0], 'the step node completed exactly once');
  const stepDone = ofType(events, 'node.completed', 'step')[0]!;
  assert.ok(
    Date.parse(stepDone.timestamp) >= wake.wakeAt,
    `step completed at ${stepDone.timestamp}, before its wakeAt ${wake.wakeAtIso}`,
  );
  assert.ok(
    Date.parse(stepDone.timestamp) >= notBefore,
    'the step completed in the second incarnation, after the first one exited',
  );
  assert.equal(run.nodeStates.step?.wokeAt, wake.wakeAtIso, 'woke on the timer recorded before the restart');
  assert.equal(ofType(events, 'run.completed').length, 1);
  assert.equal(Number(run.nodeStates.done?.steps), 1);
}

/** The durable-timer scenarios sleep 2 s — longer when starting the host takes so long that a
 * restart could not come back before the timer is due (a loaded CI machine), since the point is
 * to watch the restarted host wait for a timer set by the one that died. */
const timerMs = (startupMs: number): number => Math.max(2_000, Math.ceil(2 * startupMs + 1_000));

// ---------------------------------------------------------------------------------------------

const DIALECTS: Dialect[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];

for (const dialect of DIALECTS) {
  describe(`crash recovery on ${dialect}`, () => {
    it('SIGKILL mid-run: every run resumes, no step is committed twice, \
the interrupt survives', async (t: TestContext) => {
      const STEPS = 8;
      const RUNS = 4;
      const db = freshDb(dialect);
      const t0 = Date.now();
      let srv = await startServer({ dataDir: db.dataDir, env: db.env });
      t.diagnostic(`first start: ${Date.now() - t0} ms`);

      const stepRuns: string[] = [];
      for (let i = 0; i < RUNS; i++) stepRuns.push(await startRun(srv, 'steps', { steps: STEPS, stepMs: 150 }));
      const approvalRun = await startRun(srv, 'approval', { prompt: 'crash test' });

      // 1. Let every steps run count at least twice and the approval run reach its gate. The logs
      //    are read incrementally (cursor per run) so each poll is cheap and the kill comes early.
      const cursors = new Map(stepRuns.map((id) => [id, { last: -1, counts: 0 }]));
      const probe = async (note: (seen: unknown) => void) => {
        const counts = await Promise.all(
          stepRuns.map(async (id) => {
            const c = cursors.get(id)!;
            const res = await getJson(`${srv.url}/v1/runs/${id}/events/poll?lastSequence=${c.last}&timeout=0`);
            assert.equal(res.status, 200, JSON.stringify(res.body));
            const events = res.body.events as RunEventDoc[];
            c.counts += ofType(events, 'node.completed', 'count').length;
            c.last = events.at(-1)?.sequence ?? c.last;
            return c.counts;
          }),
        );
        const approval = await getRun(srv, approvalRun);
        note({ counts, approval: approval.status });
        if (counts.every((c) => c >= 2) && approval.status === 'waiting-approval') return { counts, approval };
        return undefined;
      };
      const seen = await waitFor('2 counts per steps run and the approval gate', srv, probe, 20_000);
      const killed = await srv.kill();
      const killedAt = Date.now(); // the process is gone: any later event is the restarted host's
      assert.equal(killed.signal, 'SIGKILL');
      t.diagnostic(`killed after counts ${JSON.stringify(seen.counts)}`);
      const interruptBefore = seen.approval.interrupt as Record<string, any>;
      assert.equal(interruptBefore?.nodeId, 'review');
      assert.equal(typeof interruptBefore?.interruptId, 'string');

      // 2. Restart on the same database; every steps run finishes.
      srv = await startServer({ dataDir: db.dataDir, env: db.env });
      const restartedAt = Date.now();
      t.diagnostic(`restart ready ${restartedAt - killedAt} ms after the kill`);
      await waitFor(
        'every steps run completed after the restart',
        srv,
        async (note) => {
          const runs = await Promise.all(stepRuns.map((id) => getRun(srv, id)));
          note(runs.map((r) => [r.status, r.variables?.i]));
          for (const r of runs)
            assert.ok(
              r.status !== 'failed' && r.status !== 'cancelled',
              `${r.runId} ended ${r.status}: ${JSON.stringify(r.error)}`,
            );
          return runs.every((r) => r.status === 'completed') ? true : undefined;
        },
        30_000,
      );
      t.diagnostic(`all steps runs completed ${Date.now() - restartedAt} ms after the restart`);

      // 3. The event logs tell one uninterrupted story.
      const resumed: string[] = [];
      for (const runId of stepRuns) {
        const run = await getRun(srv, runId);
        assert.equal(run.status, 'completed');
        const events = await allEvents(srv, runId);
        assertLogIntegrity(runId, events);
        assert.deepEqual(ordinals(events, 'init'), [0], `${runId}: init once`);
        assert.deepEqual(ordinals(events, 'step'), range(STEPS), `${runId}: step ordinals 0..${STEPS - 1}`);
        assert.deepEqual(ordinals(events, 'count'), range(STEPS), `${runId}: count ordinals 0..${STEPS - 1}`);
        assert.deepEqual(ordinals(events, 'done'), [0], `${runId}: done once`);
        const countSteps = ofType(events, 'node.completed', 'count').length;
        assert.equal(countSteps, STEPS);
        const artifacts = ofType(events, 'artifact.created', 'done');
        assert.equal(artifacts.length, 1, `${runId}: one artifact`);
        assert.equal(Number(artifacts[0]!.payload.data?.steps), STEPS, `${runId}: the artifact says steps ${STEPS}`);
        assert.equal(Number(run.nodeStates.done?.steps), STEPS);
        assert.equal(Number(run.variables.i), STEPS);
        const completed = ofType(events, 'run.completed');
        assert.equal(completed.length, 1, `${runId}: exactly one run.completed`);
        assert.equal(events.at(-1)?.type, 'run.completed', `${runId}: nothing after run.completed`);
        assert.equal(Number(completed[0]!.payload.outputs?.done?.steps), STEPS);
        const countsBefore = ofType(events, 'node.completed', 'count').filter(
          (e) => Date.parse(e.timestamp) < killedAt,
        ).length;
        if (Date.parse(completed[0]!.timestamp) > killedAt)
          resumed.push(`${runId.slice(-6)}: ${countsBefore} counts before the kill`);
      }
      t.diagnostic(`finished by the restarted host: ${JSON.stringify(resumed)}`);
      assert.ok(
        resumed.length > 0,
        'the crash must hit runs in flight (all had completed before it: machine too slow?)',
      );

      // 4. The approval run still waits at the same interrupt, untouched by the restart.
      const approval = await getRun(srv, approvalRun);
      assert.equal(approval.status, 'waiting-approval');
      assert.equal(
        approval.interrupt?.interruptId,
        interruptBefore.interruptId,
        'the same interrupt after the restart',
      );
      assert.equal(approval.interrupt?.nodeId, 'review');
      let events = await allEvents(srv, approvalRun);
      assertLogIntegrity(approvalRun, events);
      assert.equal(ofType(events, 'interrupt.requested').length, 1, 'the gate did not open a second interrupt');
      assert.equal(ofType(events, 'approval.requested').length, 1);

      const resolved = await postJson(`${srv.url}/v1/runs/${approvalRun}/interrupts/review`, {
        resumeValue: { action: 'accept' },
      });
      assert.equal(resolved.status, 200, JSON.stringify(resolved.body));
      assert.equal(resolved.body.interrupt?.interruptId, interruptBefore.interruptId);
      assert.equal(resolved.body.interrupt?.outcome, 'resolved');
      const done = await waitFor(
        'the approval run completed',
        srv,
        async () => {
          const r = await getRun(srv, approvalRun);
          assert.notEqual(r.status, 'failed', JSON.stringify(r.error));
          return r.status === 'completed' ? r : undefined;
        },
        10_000,
      );
      assert.equal(done.nodeStates.final?.text, 'Draft: crash test');
      events = await allEvents(srv, approvalRun);
      assertLogIntegrity(approvalRun, events);
      assert.deepEqual(ordinals(events, 'review'), [0]);
      assert.deepEqual(ordinals(events, 'final'), [0]);
      assert.equal(ofType(events, 'run.completed').length, 1);

      const exit = await srv.stop('SIGTERM');
      assert.deepEqual(exit, { code: 0, signal: null }, srv.logs().slice(-4000));
    });

    it('SIGKILL while a run sleeps on a durable timer: \
the timer is honoured after the restart', async (t: TestContext) => {
      const db = freshDb(dialect);
      const t0 = Date.now();
      let srv = await startServer({ dataDir: db.dataDir, env: db.env });
      const stepMs = timerMs(Date.now() - t0);
      t.diagnostic(`start ${Date.now() - t0} ms → stepMs ${stepMs}`);
      const runId = await startRun(srv, 'steps', { steps: 1, stepMs });
      const wake = await waitFor('the step timer', srv, () => sleepingStep(srv, runId), 10_000);
      assert.ok(Date.now() < wake.wakeAt - 200, 'the crash must come before the timer is due');
      await srv.kill();
      const killedAt = Date.now();
      srv = await startServer({ dataDir: db.dataDir, env: db.env });
      const earlyBy = wake.wakeAt - Date.now();
      t.diagnostic(`restart ready ${earlyBy} ms before wakeAt`);
      if (earlyBy > 100) {
        const r = await getRun(srv, runId);
        assert.equal(r.status, 'running', 'before wakeAt the run still sleeps');
        assert.equal(r.nodeStates.step, undefined, 'before wakeAt the step has not completed');
      }
      await waitFor(
        'the run completed after the restart',
        srv,
        async () => {
          const r = await getRun(srv, runId);
          assert.notEqual(r.status, 'failed', JSON.stringify(r.error));
          return r.status === 'completed' ? true : undefined;
        },
        30_000,
      );
      const completedAt = Date.parse((await getRun(srv, runId)).completedAt);
      t.diagnostic(`completed ${completedAt - wake.wakeAt} ms after wakeAt`);
      await assertTimerHonoured(srv, runId, wake, killedAt);
      if (earlyBy > 100) {
        // Restarted in time: the timer fires on schedule (no lease wait, no fresh full delay).
        assert.ok(completedAt - wake.wakeAt < 5_000, `completed ${completedAt - wake.wakeAt} ms after wakeAt`);
      }
    });

    it('SIGTERM while a run sleeps: the host drains and exits 0, \
the restart finishes the run', async (t: TestContext) => {
      const db = freshDb(dialect);
      const t0 = Date.now();
      let srv = await startServer({ dataDir: db.dataDir, env: db.env });
      const runId = await startRun(srv, 'steps', { steps: 1, stepMs: timerMs(Date.now() - t0) });
      const wake = await waitFor('the step timer', srv, () => sleepingStep(srv, runId), 10_000);
      assert.ok(Date.now() < wake.wakeAt - 200, 'the stop must come before the timer is due');
      const stopStarted = Date.now();
      const exit = await srv.stop('SIGTERM', 15_000);
      t.diagnostic(`SIGTERM → exit in ${Date.now() - stopStarted} ms`);
      const stoppedAt = Date.now();
      assert.deepEqual(exit, { code: 0, signal: null }, srv.logs().slice(-4000));
      srv = await startServer({ dataDir: db.dataDir, env: db.env });
      await waitFor(
        'the run completed after the restart',
        srv,
        async () => {
          const r = await getRun(srv, runId);
          assert.notEqual(r.status, 'failed', JSON.stringify(r.error));
          return r.status === 'completed' ? true : undefined;
        },
        30_000,
      );
      await assertTimerHonoured(srv, runId, wake, stoppedAt);
      assert.deepEqual(await srv.stop('SIGTERM'), { code: 0, signal: null });
    });

    it('SIGTERM with a client long-polling: the host drains promptly and exits 0', async (t: TestContext) => {
      const db = freshDb(dialect);
      const srv = await startServer({ dataDir: db.dataDir, env: db.env });
      const runId = await startRun(srv, 'steps', { steps: 1, stepMs: 60_000 });
      await waitFor('the step timer', srv, () => sleepingStep(srv, runId), 10_000);
      const { lastEventSeq } = (await getJson(`${srv.url}/v1/runs/${runId}/events/poll?lastSequence=-1&timeout=0`))
        .body;
      // Nothing happens to the run for a minute: this long-poll would wait its full 30 s.
      const poll = getJson(`${srv.url}/v1/runs/${runId}/events/poll?lastSequence=${lastEventSeq}&timeout=30`, {
        timeoutMs: 40_000,
      }).then(
        (res) => ({ status: res.status }),
        (err: Error) => ({ error: err.message }),
      );
      await sleep(300); // the request is parked in the server
      const stopStarted = Date.now();
      const exit = await srv.stop('SIGTERM', 8_000).catch((err: Error) => err);
      t.diagnostic(`SIGTERM → ${exit instanceof Error ? 'no exit' : 'exit'} after ${Date.now() - stopStarted} ms`);
      assert.ok(!(exit instanceof Error), 'the host must not wait out a long-poll (8 s bound) before it exits');
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.ok('status' in (await poll), 'the parked long-poll gets an answer, not a reset');
    });
  });
}
