// The composition root: builds store, bus, engine, worker and HTTP app from one Config.
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { TaskCache } from './a2a/task-cache.js';
import { A2AService } from './a2a/service.js';
import { registerPushOutbox } from './a2a/push.js';
import { A2AStreams } from './a2a/stream.js';
import { registerTaskRecords } from './a2a/task-records.js';
import type { ChangeBus } from './bus/bus.js';
import { InProcessBus } from './bus/in-process.js';
import { PgBus } from './bus/pg.js';
import { type Config, PUSH_ATTEMPT_TIMEOUT_MS, sqliteFile } from './config.js';
import { Engine } from './engine/engine.js';
import { Retention } from './engine/retention.js';
import { Runner } from './engine/runner.js';
import { loadWorkflows, type WorkflowRegistry } from './engine/workflow/loader.js';
import { buildApp } from './http/app.js';
import { SseHub } from './http/sse.js';
import { a2aRoutes, discoveryBlock } from './http/routes/a2a.js';
import { setInstanceLabel } from './metrics.js';
import { openStore } from './store/connect.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEgressPolicy } from './egress/address.js';
import { createGuardedDispatcher } from './egress/dispatcher.js';
import { parseSchedule } from './push/outbox.js';
import { loadHostKey, Vault } from './push/vault.js';
import { PushWorker } from './push/worker.js';
import type { Store } from './store/store.js';

export interface Host {
  config: Config;
  logger: Logger;
  store: Store;
  bus: ChangeBus;
  engine: Engine;
  runner: Runner;
  pushWorker: PushWorker;
  app: FastifyInstance;
  /** The SSE streams of this host and their shared limits. */
  sse: SseHub;
  workflows: WorkflowRegistry;
  /** Serialized Tasks for tasks/get (SQLite only; undefined on PostgreSQL). */
  taskCache: TaskCache | undefined;
  /** Listen on config.host:port; resolves with the bound address. */
  listen(): Promise<string>;
  /** Graceful stop: no new requests or claims, in-flight steps finish, leases handed back. */
  close(): Promise<void>;
}

export async function createHost(config: Config, logger?: Logger): Promise<Host> {
  // Logs and metrics name the instance, so those of several instances on one database can be told apart.
  const log = logger ?? pino({ level: config.logLevel, base: { instance: config.instanceId } });
  setInstanceLabel(config.instanceId);
  const workflows = await loadWorkflows(config.workflowDirs);
  const store = await openStore({
    ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
    ...(config.pgSchema ? { pgSchema: config.pgSchema } : {}),
    pgPoolSize: config.pgPoolSize,
    sqliteFile: sqliteFile(config),
    sqliteSynchronous: config.sqliteSynchronous,
    sqliteExclusive: true,
  });
  if (store.dialect === 'sqlite') {
    // One process owns a SQLite file, so any lease in it belongs to a previous (crashed)
    // incarnation of this host: take the runs back now instead of waiting for expiry.
    const freed = await store.db
      .updateTable('runs')
      .set({ lease_owner: null, lease_expires_at: null })
      .where('lease_owner', 'is not', null)
      .executeTakeFirst();
    if (Number(freed.numUpdatedRows) > 0)
      log.info({ runs: Number(freed.numUpdatedRows) }, 'recovered runs leased before a restart');
    await store.db
      .updateTable('push_outbox')
      .set({ lease_owner: null, lease_expires_at: null })
      .where('lease_owner', 'is not', null)
      .execute();
  }
  // PostgreSQL: instances share runs, so wake-ups cross processes (LISTEN/NOTIFY).
  const bus: ChangeBus =
    store.dialect === 'postgres' && config.databaseUrl
      ? new PgBus({
          databaseUrl: config.databaseUrl,
          instanceId: config.instanceId,
          logger: log,
          ...(config.pgSchema ? { schema: config.pgSchema } : {}),
        })
      : new InProcessBus();
  if (bus instanceof PgBus) await bus.start();
  // Before the bus listener: a reader woken by a notice must not find the entry it replaces.
  const taskCache = TaskCache.forStore(store);
  store.onCommit((changes) => {
    // One notice per run and transaction, with its final state: readers go to the log anyway.
    const last = new Map(changes.map((c) => [c.run.runId, c.run]));
    bus.publish(
      [...last.values()].map((r) => ({
        runId: r.runId,
        tenantId: r.tenantId,
        status: r.status,
        lastSeq: r.nextSeq - 1,
      })),
    );
  });
  registerTaskRecords(store);
  if (store.dialect === 'postgres' && !config.push.secretKey) {
    // Fine for a single instance; with several, each would encrypt push tokens under its own key
    // file and fail to decrypt the others' when it claims their deliveries.
    log.warn(
      "HANDOFF_SECRET_KEY is not set: push tokens are encrypted under this instance's own key file; every instance sharing this database must be given the same HANDOFF_SECRET_KEY",
    );
  }
  const vault = new Vault(loadHostKey(config.push.secretKey, join(config.dataDir, 'secret.key')));
  const policy = createEgressPolicy({ allowCidrs: config.push.allowCidrs });
  const dispatcher = createGuardedDispatcher({
    policy,
    ...(config.push.caFile ? { ca: readFileSync(config.push.caFile) } : {}),
  });
  const pushWorker = new PushWorker(store, {
    instanceId: config.instanceId,
    logger: log,
    dispatcher,
    vault,
    schedule: parseSchedule(config.push.retrySchedule),
    timeoutMs: PUSH_ATTEMPT_TIMEOUT_MS,
    // Longer than an attempt (checked by loadConfig); how long a dead instance's claimed deliveries wait.
    leaseMs: config.push.leaseMs,
  });
  registerPushOutbox(store, () => pushWorker.kick());
  const engine = new Engine(store, workflows);
  const publicSkills = () =>
    workflows
      .list()
      .filter((w) => w.public !== false)
      .map((w) => w.id);
  const a2a = new A2AService(engine, bus, {
    defaultSkill: config.defaultSkill,
    skills: publicSkills,
    push: { vault, policy, maxConfigsPerTask: config.quotas.pushConfigsPerTask },
    ...(taskCache ? { cache: taskCache } : {}),
  });
  const runner = new Runner(engine, bus, {
    instanceId: config.instanceId,
    logger: log,
    leaseMs: config.leaseMs,
    pollMs: config.pollMs,
  });
  const retention = new Retention(store, config.retentionDays, log);
  const sse = new SseHub(config.sse);
  const app = await buildApp({
    config,
    logger: log,
    engine,
    bus,
    workflows,
    sse,
    plugins: [
      (a) =>
        a2aRoutes(a, {
          config,
          engine,
          workflows,
          service: a2a,
          streams: new A2AStreams(engine, bus, a2a),
          pushPolicy: policy,
          pushWorker,
          sse,
        }),
    ],
    discovery: { transports: ['a2a'], families: (req) => ({ a2a: discoveryBlock(config, req) }) },
  });

  return {
    config,
    logger: log,
    store,
    bus,
    engine,
    runner,
    pushWorker,
    app,
    sse,
    workflows,
    taskCache,
    async listen() {
      const address = await app.listen({ host: config.host, port: config.port });
      runner.start();
      pushWorker.start();
      retention.start();
      return address;
    },
    async close() {
      retention.stop();
      await app.close();
      await runner.stop();
      await pushWorker.stop();
      await dispatcher.close().catch(() => {});
      await bus.close();
      await store.close();
    },
  };
}
