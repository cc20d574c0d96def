// Several Handoff instances on one PostgreSQL schema, the operational side (docs/operations.md):
// - a draining instance (host.close(), what SIGTERM runs) commits its step in flight and hands its
//   run leases back at once, so another instance finishes the run without waiting out the lease;
// - a stopping push worker hands back the delivery it still holds, and another instance sends it;
// - instances started together on an empty schema migrate it exactly once and all work;
// - /metrics names the instance on every sample.
// Leases are long (HANDOFF_LEASE_MS, HANDOFF_PUSH_LEASE_MS = 60 s) so that expiry can never explain a
// takeover. Nothing sleeps to pass: every wait polls a condition until a deadline.
// Runs only when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { createHost, type Host } from '../../src/host.js';
import { migrationProvider } from '../../src/store/migrations.js';
import type { RunEvent } from '../../src/store/model.js';
import { type Json, PG_URL, REPO_ROOT, waitForStatus, withPg } from '../support/host.js';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import { pgTestSchemas } from '../support/pg.js';
import { until } from '../support/until.js';

const schemas = PG_URL ? pgTestSchemas(PG_URL, 'ops') : undefined;
const LEASE_MS = 60_000;
const DEADLINE_MS = 30_000;
const LOCAL = { tenantId: 'default', principalId: 'local' };

/** `p`, or a failure naming `what` at the deadline (a hook that is never reached must not hang the suite). */
async function within<T>(what: string, p: Promise<T>, deadlineMs = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new assert.AssertionError({ message: `timed out after ${deadlineMs} ms waiting for ${what}` })),
      deadlineMs,
    );
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every (node, ordinal) completion in the log, in order; a repeated one would be a double execution. */
function completions(events: RunEvent[]): string[] {
  return events
    .filter((e) => e.type === 'node.completed')
    .map((e) => `${e.nodeId}#${String((e.payload as { ordinal?: number }).ordinal)}`);
}

describe('many instances on one PostgreSQL: drain, migrations, metrics', {
  skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set',
}, () => {
  const hosts: Host[] = [];
  const dirs: string[] = [];
  const closed = new Set<Host>();

  const start = async (schema: string, id: string, env: Record<string, string> = {}): Promise<Host> => {
    const dir = mkdtempSync(join(tmpdir(), `handoff-ops-${id}-`));
    dirs.push(dir);
    const config = loadConfig(
      { port: '0', data: dir },
      {
        HANDOFF_DATABASE_URL: PG_URL!,
        HANDOFF_PG_SCHEMA: schema,
        HANDOFF_INSTANCE_ID: id,
        HANDOFF_LEASE_MS: String(LEASE_MS),
        HANDOFF_PUSH_LEASE_MS: String(LEASE_MS),
        // Several hosts at once, next to other suites: stay far below max_connections.
        HANDOFF_PG_POOL_SIZE: '3',
        HANDOFF_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
        ...env,
      },
    );
    config.workflowDirs = [join(REPO_ROOT, 'workflows')];
    const host = await createHost(config, pino({ level: 'silent' }));
    hosts.push(host);
    return host;
  };
  const close = async (h: Host) => {
    if (closed.has(h)) return;
    closed.add(h);
    await h.close();
  };

  after(async () => {
    for (const h of hosts) await close(h);
    await schemas?.dropAll();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('a draining instance hands its run lease back at once; another finishes the run long before the lease would \
expire', async () => {
    const schema = schemas!.fresh();
    const a = await start(schema, 'ops-drain-a');
    const b = await start(schema, 'ops-drain-b');

    // Hold A's next step open, so that A holds the run's lease when it is told to drain (a
    // durable timer alone holds no lease: core.delay hands it back while the run sleeps).
    let held!: () => void;
    const stepHeld = new Promise<void>((r) => (held = r));
    let letGo!: () => void;
    const gate = new Promise<void>((r) => (letGo = r));
    let armed = false;
    const transaction = a.store.transaction.bind(a.store);
    a.store.transaction = (async (fn) => {
      if (armed) {
        armed = false;
        held();
        await gate;
      }
      return transaction(fn);
    }) as typeof a.store.transaction;
    // Open the gate only once the drain has begun: Runner.stop marks the runner stopping before
    // its first await, so the held step commits and the runner then stops driving the run.
    const stopRunner = a.runner.stop.bind(a.runner);
    a.runner.stop = (timeoutMs?: number) => {
      const stopping = stopRunner(timeoutMs);
      letGo();
      return stopping;
    };

    a.runner.start();
    const { run } = await a.engine.startRun(LOCAL, { workflowId: 'steps', inputs: { steps: 3, stepMs: 200 } });
    const runId = run.runId;
    armed = true; // the run is created; A's worker's next step waits at the gate
    await within("A's worker to start its next step", stepHeld);
    const leased = (await b.store.runs.get(runId))!;
    assert.equal(leased.leaseOwner, 'ops-drain-a', 'A holds the run while its step is in flight');
    assert.ok(leased.leaseExpiresAt! > Date.now() + LEASE_MS / 2, 'a long lease: expiry cannot explain a takeover');
    const leaseEnd = leased.leaseExpiresAt!;
    const before = completions(await b.store.events.list(runId, -1, 10_000)).length;

    b.runner.start(); // B polls, but cannot claim a run A holds
    await close(a); // what SIGTERM runs

    // Handed back: free, or already claimed by B (B may be that quick), never still A's.
    const drained = (await b.store.runs.get(runId))!;
    assert.notEqual(drained.leaseOwner, 'ops-drain-a', 'A handed the lease back while draining');
    assert.ok(
      completions(await b.store.events.list(runId, -1, 10_000)).length > before,
      'the step in flight at the drain committed',
    );

    const done = await waitForStatus(b.app, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed');
    assert.ok(Date.now() < leaseEnd, "B finished the run before A's lease would have expired");
    const events = await b.store.events.list(runId, -1, 10_000);
    const seen = completions(events);
    assert.equal(new Set(seen).size, seen.length, `no node completion repeated: ${seen.join(', ')}`);
    assert.equal(seen.filter((c) => c.startsWith('count#')).length, 3);
    assert.equal(events.filter((e) => e.type === 'run.started').length, 1);
  });

  it('a stopping push worker hands back the delivery it holds; \
another instance sends it without waiting out HANDOFF_PUSH_LEASE_MS', async () => {
    const rx: HttpsReceiver = await startHttpsReceiver();
    try {
      const caFile = join(mkdtempSync(join(tmpdir(), 'handoff-ops-ca-')), 'ca.pem');
      dirs.push(join(caFile, '..'));
      writeFileSync(caFile, rx.caPem);
      const pushEnv = { HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.1/32', HANDOFF_PUSH_CA_FILE: caFile };
      const schema = schemas!.fresh();
      const a = await start(schema, 'ops-push-a', pushEnv);
      const b = await start(schema, 'ops-push-b', pushEnv);
      // A's first attempt is still waiting for its answer when A's push worker stops; later ones
      // are answered at once.
      let answerSlowly = true;
      rx.behave(() => (answerSlowly ? { status: 200, delayMs: 2_000 } : { status: 200 }));

      a.runner.start();
      const sent = await a.app.inject({
        method: 'POST',
        url: '/v1/a2a',
        payload: {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: {
            message: {
              kind: 'message',
              messageId: randomUUID(),
              role: 'user',
              parts: [{ kind: 'text', text: 'push me' }],
              metadata: { skillId: 'echo' },
            },
            configuration: { pushNotificationConfig: { url: rx.urlFor('127.0.0.1', '/hook'), token: 'tok-ops' } },
          },
        },
      });
      const taskId = (sent.json() as Json).result?.id as string;
      assert.ok(taskId, `message/send: ${sent.body}`);
      await until('A to send its first attempt', async () => rx.requests.length >= 1);
      const row = () =>
        b.store.db.selectFrom('push_outbox').selectAll().where('task_id', '=', taskId).executeTakeFirstOrThrow();
      assert.equal((await row()).lease_owner, 'ops-push-a');

      await a.pushWorker.stop(50); // the attempt is still in flight
      const handedBack = await row();
      assert.equal(handedBack.lease_owner, null, 'A handed the delivery back');
      assert.equal(handedBack.state, 'pending');

      answerSlowly = false;
      b.pushWorker.start();
      const delivered = await until('B to deliver', async () => {
        const r = await row();
        return r.state === 'delivered' ? r : undefined;
      });
      assert.ok(
        Date.now() < Date.parse(delivered.created_at) + LEASE_MS,
        "delivered before A's lease would have expired",
      );
      const ids = rx.requests.map((r) => r.headers['x-handoff-delivery-id']);
      assert.ok(
        ids.length >= 2 && ids.every((id) => id === delivered.delivery_id),
        'the same delivery, sent again with its id (receivers dedup)',
      );
      await close(a); // waits for A's straggling attempt, whose late settle must not undo B's
      assert.equal((await row()).state, 'delivered');
    } finally {
      await rx.close();
    }
  });

  it('four instances started together on an empty schema migrate it once, and all of them work', async () => {
    const schema = schemas!.fresh();
    const four = await Promise.all([1, 2, 3, 4].map((n) => start(schema, `ops-mig-${n}`)));
    const applied = await withPg(async (c) =>
      (await c.query<{ name: string }>(`select name from ${schema}.kysely_migration order by name`)).rows.map(
        (r) => r.name,
      ),
    );
    const all = Object.keys(await migrationProvider('postgres').getMigrations()).sort();
    assert.deepEqual(applied, all, 'each migration recorded exactly once');

    for (const h of four) h.runner.start();
    const runIds = await Promise.all(
      four.map(
        async (h) =>
          (await h.engine.startRun(LOCAL, { workflowId: 'steps', inputs: { steps: 2, stepMs: 50 } })).run.runId,
      ),
    );
    for (const [i, runId] of runIds.entries()) {
      // Read each run through another instance than the one that started it.
      const reader = four[(i + 1) % four.length]!;
      assert.equal((await waitForStatus(reader.app, runId, ['completed', 'failed'])).status, 'completed');
      const seen = completions(await reader.store.events.list(runId, -1, 10_000));
      assert.equal(new Set(seen).size, seen.length, `no node completion repeated: ${seen.join(', ')}`);
    }
  });

  it('every sample at GET /metrics carries instance="<HANDOFF_INSTANCE_ID>"', async () => {
    const h = await start(schemas!.fresh(), 'ops-metrics-1');
    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    const samples = res.body.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    assert.ok(
      samples.some((l) => l.startsWith('handoff_')),
      'Handoff metrics are exported',
    );
    const unlabelled = samples.filter((l) => !l.includes('instance="ops-metrics-1"'));
    assert.deepEqual(unlabelled, [], 'samples without the instance label');
  });
});
