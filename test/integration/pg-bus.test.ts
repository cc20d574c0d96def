// The cross-instance bus on PostgreSQL: a follower on instance B sees every event of a run that
// instance A executes (NOTIFY wake-ups), and a LISTEN connection killed by the server loses nothing
// (B reconnects and re-reads the log from its cursor).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import pino from 'pino';
import { PgBus } from '../../src/bus/pg.js';
import { loadConfig } from '../../src/config.js';
import { followRun } from '../../src/engine/follow.js';
import { createHost, type Host } from '../../src/host.js';
import type { RunEvent } from '../../src/store/model.js';
import { PG_URL, REPO_ROOT } from '../support/host.js';
import { pgTestSchemas } from '../support/pg.js';
import { until } from '../support/until.js';

const schemas = PG_URL ? pgTestSchemas(PG_URL, 'bus') : undefined;

describe('PostgreSQL change bus across instances', { skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set' }, () => {
  const hosts: Host[] = [];
  const dirs: string[] = [];
  let schema = '';
  let a: Host;
  let b: Host;

  const start = async (name: string): Promise<Host> => {
    const dir = mkdtempSync(join(tmpdir(), `handoff-bus-${name}-`));
    dirs.push(dir);
    const config = loadConfig(
      { port: '0', data: dir },
      {
        HANDOFF_DATABASE_URL: PG_URL!,
        HANDOFF_PG_SCHEMA: schema,
        HANDOFF_INSTANCE_ID: `bus-${name}`,
        HANDOFF_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      },
    );
    config.workflowDirs = [join(REPO_ROOT, 'workflows')];
    const host = await createHost(config, pino({ level: 'silent' }));
    hosts.push(host);
    return host;
  };

  before(async () => {
    schema = schemas!.fresh();
    a = await start('a');
    b = await start('b');
    a.runner.start(); // only A executes runs
  });
  after(async () => {
    for (const h of hosts) await h.close();
    await schemas?.dropAll();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** Follow a run from instance B until its final event, bounded by a deadline. */
  async function followOnB(runId: string, onEvent?: (e: RunEvent) => Promise<void>): Promise<RunEvent[]> {
    const seen: RunEvent[] = [];
    const signal = AbortSignal.timeout(30_000);
    for await (const e of followRun(b.store, b.bus, runId, { signal })) {
      seen.push(e);
      await onEvent?.(e);
    }
    assert.ok(!signal.aborted, `following ${runId} on B timed out after ${seen.length} events`);
    return seen;
  }

  const startSteps = async (steps: number) =>
    (
      await a.engine.startRun(
        { tenantId: 'default', principalId: 'local' },
        { workflowId: 'steps', inputs: { steps, stepMs: 150 } },
      )
    ).run.runId;

  const assertComplete = async (runId: string, seen: RunEvent[]) => {
    const log = await a.store.events.list(runId, -1, 10_000);
    assert.deepEqual(
      seen.map((e) => e.sequence),
      log.map((e) => e.sequence),
      'B saw exactly the log, in order, once each',
    );
    assert.equal(seen.at(-1)?.type, 'run.completed');
  };

  it('a stream on B follows a run executing on A, every event once', async () => {
    const runId = await startSteps(3);
    await assertComplete(runId, await followOnB(runId));
  });

  it('the LISTEN connection terminated from the server side loses nothing', async () => {
    const runId = await startSteps(4);
    let killed = false;
    const seen = await followOnB(runId, async (e) => {
      if (killed || e.type !== 'node.completed' || e.nodeId !== 'count') return;
      killed = true;
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      try {
        const res = await admin.query(
          `select pg_terminate_backend(pid) as ok from pg_stat_activity where query = $1 and pid <> pg_backend_pid()`,
          [`listen handoff_runs_${schema}`],
        );
        assert.ok(res.rows.length >= 1, 'found the LISTEN connections to terminate');
      } finally {
        await admin.end();
      }
    });
    assert.ok(killed, 'the listener was terminated mid-run');
    await assertComplete(runId, seen);
  });
});

describe('PostgreSQL change bus: closing while the LISTEN connection opens', {
  skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set',
}, () => {
  // Regression: a bus closed while its LISTEN connection was being opened (at start, or during a
  // reconnect) kept that connection once it came up, and the process never exited.
  it('leaves no LISTEN connection behind', async () => {
    const schema = schemas!.fresh();
    const bus = new PgBus({
      databaseUrl: PG_URL!,
      instanceId: 'bus-closing',
      logger: pino({ level: 'silent' }),
      schema,
    });
    const starting = bus.start().catch(() => undefined);
    await bus.close();
    await starting;
    const listeners = async (): Promise<number> => {
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      try {
        const res = await admin.query(`select count(*)::int as n from pg_stat_activity where query = $1`, [
          `listen handoff_runs_${schema}`,
        ]);
        return res.rows[0].n as number;
      } finally {
        await admin.end();
      }
    };
    // A connection ended by the bus disappears from pg_stat_activity shortly after.
    await until('the bus to end its LISTEN connection after close()', async () => (await listeners()) === 0, {
      deadlineMs: 5_000,
      intervalMs: 50,
    });
  });
});

describe('PostgreSQL change bus: notices published together', {
  skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set',
}, () => {
  // The notices of the commits that end in one turn of the event loop go out in one statement.
  it('reach the other instance, each once (more than one statement holds)', async () => {
    const schema = schemas!.fresh();
    const bus = (id: string) =>
      new PgBus({ databaseUrl: PG_URL!, instanceId: id, logger: pino({ level: 'silent' }), schema });
    const sender = bus('bus-sender');
    const receiver = bus('bus-receiver');
    try {
      await Promise.all([sender.start(), receiver.start()]);
      const heard: string[] = [];
      receiver.subscribeAll((n) => heard.push(`${n.runId}:${n.lastSeq}`));
      const sent: string[] = [];
      for (let i = 0; i < 700; i++) {
        sender.publish([{ runId: `run_${i % 7}`, tenantId: 't', status: 'running', lastSeq: i }]);
        sent.push(`run_${i % 7}:${i}`);
      }
      await until('every notice to arrive', () => heard.length >= sent.length);
      // Order is not promised across statements (the pool may send two at once): readers re-read the log.
      assert.deepEqual([...heard].sort(), [...sent].sort());
    } finally {
      await sender.close();
      await receiver.close();
    }
  });
});
