// The composition root: builds store, bus, engine, worker and HTTP app from one Config, and the
// store's transition pipeline — the one ordered list of what every run change does.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { pushOutbox, renderPush } from './a2a/push.js';
import { A2ABinding } from './a2a/binding.js';
import { TaskHandler } from './a2a/handler.js';
import { A2AService } from './a2a/service.js';
import { A2AStreams } from './a2a/stream.js';
import { TaskCache } from './a2a/task-cache.js';
import { taskRecordStep } from './a2a/task-records.js';
import { TaskStates } from './a2a/task-states.js';
import { busPublisher, type ChangeBus } from './bus/bus.js';
import { InProcessBus } from './bus/in-process.js';
import { PgBus } from './bus/pg.js';
import { type Config, CONFORMANCE_FIXTURES, PUSH_ATTEMPT_TIMEOUT_MS, sqliteFile } from './config.js';
import { CALL_EGRESS_SETTINGS, createEgressPolicy, PUSH_EGRESS_SETTINGS } from './egress/address.js';
import { createGuardedDispatcher, type Resolver } from './egress/dispatcher.js';
import { ChildRuns, childCascadeStep, childWakeListener } from './engine/children.js';
import { Engine } from './engine/engine.js';
import type { NodeServices } from './engine/nodes/services.js';
import { hmacInterruptTokens } from './engine/interrupt-tokens.js';
import { Retention } from './engine/retention.js';
import { Runner } from './engine/runner.js';
import {
  loadWorkflowDirs,
  loadWorkflows,
  type WorkflowCatalog,
  type WorkflowRegistry,
} from './engine/workflow/loader.js';
import { CardSigner } from './jws/card-signing.js';
import { TokenSource } from './calls/client-credentials.js';
import { buildApp } from './http/app.js';
import { OidcVerifier } from './http/oidc.js';
import { consoleSignInRoute, jwksRoute } from './http/routes/trust.js';
import { SseHub } from './http/sse.js';
import { RunQuota } from './http/quotas.js';
import { a2aRoutes, cardSays, discoveryBlock } from './http/routes/a2a/index.js';
import { Deliveries } from './push/deliveries.js';
import { Metrics } from './metrics.js';
import { parseSchedule } from './push/schedule.js';
import { loadHostKey, Vault } from './push/vault.js';
import { PushWorker } from './push/worker.js';
import { openStore } from './store/connect.js';
import { type Clock, systemClock } from './engine/clock.js';
import { callerAgentId, peerService } from './peers/service.js';
import { PeerStreams } from './peers/streams.js';
import { PeerWakes } from './peers/wakes.js';
import { PeerCancels } from './peers/cancels.js';
import type { PeerClient, PeerTarget, Peers, RunContext } from './peers/client.js';
import { peerCallbackRoutes } from './http/routes/peer-callbacks.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { WebhookService } from './webhooks/webhooks.js';
import type { CommitListener, Pipeline, Store, TransitionStep } from './store/store.js';
import { checkChannels, createNotifier } from './notify/notifier.js';
import { decisionLinkRoutes } from './http/routes/decision-links.js';
import type { NotifyWorker } from './notify/worker.js';
import { startTracing } from './telemetry/sdk.js';
import { logTraceFields } from './telemetry/tracing.js';

export interface Host {
  config: Config;
  logger: Logger;
  store: Store;
  bus: ChangeBus;
  engine: Engine;
  runner: Runner;
  pushWorker: PushWorker;
  /** Sends the notifications of gates (src/notify/). */
  notifyWorker: NotifyWorker;
  /** Webhook subscriptions and their outbox worker (started by listen()). */
  webhooks: WebhookService;
  metrics: Metrics;
  app: FastifyInstance;
  /** The SSE streams of this host and their shared limits. */
  sse: SseHub;
  workflows: WorkflowRegistry;
  /** The workflow files refused at start, and the conformance fixtures seeded. */
  catalog: WorkflowCatalog;
  /** Serialized Tasks for tasks/get (SQLite only; undefined on PostgreSQL). */
  taskCache: TaskCache | undefined;
  /** Listen on config.host:port; resolves with the bound address. */
  listen(): Promise<string>;
  /** Graceful stop: no new requests or claims, in-flight steps finish, leases handed back. */
  close(): Promise<void>;
}

/** What a host may be given besides its Config. */
export interface HostOptions {
  /** The sense of time of the engine, the worker and the store (tests move it; default: the system's). */
  clock?: Clock;
  /** Name resolution of outbound calls (default: the system's); tests map names to addresses. */
  egressLookup?: Resolver;
}

export async function createHost(config: Config, logger?: Logger, opts: HostOptions = {}): Promise<Host> {
  const clock = opts.clock ?? systemClock;
  // Logs and metrics name the instance, so those of several instances on one database can be told apart.
  // Lines written inside a span carry its trace_id and span_id (nothing without an SDK).
  const log = logger ?? pino({ level: config.logLevel, base: { instance: config.instanceId }, mixin: logTraceFields });
  // Before any part that makes spans: the SDK registers the tracer the API hands out.
  const stopTracing = config.tracing ? await startTracing(process.env) : undefined;
  const metrics = new Metrics(config.instanceId);
  // An unknown secret refuses its workflow here, naming it: a workflow never fails at run time for want of one.
  const { workflows, catalog } = await loadHostWorkflows(config, log);
  // A notify entry whose channel this host cannot send (no SMTP server, no webhook key) fails here.
  checkChannels(workflows, config.notify);
  const store = await openHostStore(config, log, metrics, clock);
  const bus = await openBus(config, store, log);
  const hostKey = loadHostKey(config.push.secretKey, join(config.dataDir, 'secret.key'));
  const vault = new Vault(hostKey);
  const policy = createEgressPolicy({ allowCidrs: config.push.allowCidrs, settings: PUSH_EGRESS_SETTINGS });
  const dispatcher = createGuardedDispatcher({
    policy,
    ...(config.push.caFile ? { ca: readFileSync(config.push.caFile) } : {}),
  });
  const pushWorker = new PushWorker(store, {
    render: renderPush,
    instanceId: config.instanceId,
    logger: log,
    metrics,
    dispatcher,
    vault,
    schedule: parseSchedule(config.push.retrySchedule),
    timeoutMs: PUSH_ATTEMPT_TIMEOUT_MS,
    // Longer than an attempt (checked by loadConfig); how long a dead instance's claimed deliveries wait.
    leaseMs: config.push.leaseMs,
  });
  const notifier = createNotifier(config, { store, workflows, vault, dispatcher, logger: log, metrics });
  // Webhook deliveries share the push egress policy and its guarded dispatcher (https, SSRF-checked at every dial).
  const webhooks = new WebhookService(store, {
    vault,
    policy,
    dispatcher,
    logger: log,
    now: () => clock.now(),
    timeoutMs: PUSH_ATTEMPT_TIMEOUT_MS,
    schedule: parseSchedule(config.push.retrySchedule),
    instanceId: config.instanceId,
    leaseMs: config.push.leaseMs,
  });
  const taskCache = TaskCache.forStore(store);
  // The peer-cancel pass is built below; a withdrawn branch's peer task wakes it once it exists.
  let wakePeerCancels = () => {};
  store.setPipeline(
    pipeline({
      bus,
      metrics,
      taskCache,
      wakePushWorker: () => pushWorker.kick(),
      notify: notifier.outbox,
      wakePeerCancels: () => wakePeerCancels(),
      webhooks,
      children: {
        step: childCascadeStep(workflows, clock),
        listener: childWakeListener(store, () => runner.kick(), log),
      },
    }),
  );

  // Calling other agents (a2a.invoke): URLs from run input pass the push egress guard in full. The
  // A2A client is loaded on first use: most hosts never call out, and every start pays for a load.
  let loaded: Promise<Peers> | undefined;
  const loadPeers = (): Promise<Peers> => {
    loaded ??= import('./peers/client.js').then((m) => m.Peers.fromConfig(config, policy));
    return loaded;
  };
  const peers = {
    resolve: async (t: PeerTarget, r: RunContext): Promise<PeerClient> => (await loadPeers()).resolve(t, r),
    close: async () => (loaded ? (await loaded).close() : undefined),
  };
  // Pushes and stream events only bring a waiting run's next read forward: coalesced per wait.
  const peerWakes = new PeerWakes({
    wake: (runId) => store.runs.wake(runId, config.agents.wakeMinMs),
    kick: () => runner.kick(),
    waiting: async (waitId) => (await store.peerWaits.get(waitId))?.state === 'waiting',
    logger: log,
    max: 10_000,
    onRequest: (source, outcome) => {
      metrics.peerWakes.inc({ source, outcome });
      if (source === 'stream' && outcome === 'woken') metrics.peerStreamWakes.inc();
    },
  });
  const peerStreams = new PeerStreams({
    resolve: (t, r) => peers.resolve(t, r),
    wakes: peerWakes,
    callerAgentId: callerAgentId(config),
    logger: log,
    max: config.agents.maxStreams,
    retryMinMs: config.agents.pollMinMs,
    retryMaxMs: config.agents.pollMaxMs,
    onSubscribe: () => metrics.peerStreamSubscriptions.inc(),
    onEvent: () => metrics.peerStreamEvents.inc(),
    onRefused: () => metrics.peerStreamRefused.inc(),
    onHeld: (n) => metrics.peerStreamHolds.set(n),
  });
  const peersForNodes = peerService(config, peers, store, peerStreams);
  const cancels = new PeerCancels({
    waits: store.peerWaits,
    resolve: (t, r) => peers.resolve(t, r),
    callerAgentId: peersForNodes.callerAgentId,
    logger: log,
    minMs: config.agents.pollMinMs,
    maxMs: config.agents.pollMaxMs,
    pollMs: Math.max(config.pollMs, 1_000),
  });
  const interruptTokens = hmacInterruptTokens(hostKey);
  const services: NodeServices = {
    ...nodeServices(config, opts),
    peers: peersForNodes,
    redactor: config.secrets.redactor,
    interruptTokens,
  };
  const runner = new Runner(store, workflows, bus, {
    instanceId: config.instanceId,
    logger: log,
    metrics,
    leaseMs: config.leaseMs,
    pollMs: config.pollMs,
    clock,
    services,
    maxBranches: config.maxBranches,
  });
  wakePeerCancels = () => cancels.kick();
  // A cancelled run may leave a peer task to cancel (marked in the cancelling transaction), and so
  // may a run failed by an a2a.invoke node that gave up at its timeoutMs; a commit ends the stream
  // hold of a wait that ended, and lets a wake queued behind a read go.
  const stopCancelWatch = bus.subscribeAll((n) => {
    if (n.status === 'cancelled' || n.status === 'failed') cancels.kick();
    peerStreams.noticed(n);
    peerWakes.noticed(n);
  });
  const engine = new Engine(store, workflows, {
    worker: runner,
    clock,
    maxBranches: config.maxBranches,
    maxChildDepth: config.children.maxDepth,
    redact: config.secrets.redactor.deep,
  });
  // The worker was built first (the engine hands it new runs); its nodes get the engine from here.
  services.children = new ChildRuns(engine, config.children.pollMs);
  const publicSkills = () =>
    workflows
      .list()
      .filter((w) => w.public !== false)
      .map((w) => w.id);
  const a2a = new A2AService(engine, bus, {
    defaultSkill: config.defaultSkill,
    skills: publicSkills,
    push: { vault, policy, maxConfigsPerTask: config.quotas.pushConfigsPerTask },
  });
  const retention = new Retention(store, config.retentionDays, log);
  const streams = new A2AStreams(engine, bus, a2a);
  const handler = new TaskHandler(a2a, streams, store, {
    push: { vault, policy, maxConfigsPerTask: config.quotas.pushConfigsPerTask },
    listMaxBytes: config.listMaxBytes,
    card: cardSays(config, workflows),
  });
  const quota = new RunQuota(store, config);
  const sse = new SseHub(config.sse, metrics);
  const { oidc, cardSigner } = await trust(config, log);
  const app = await buildApp({
    config,
    logger: log,
    engine,
    bus,
    workflows,
    catalog,
    metrics,
    sse,
    quota,
    plugins: [
      (a) =>
        a2aRoutes(a, {
          config,
          binding: new A2ABinding(handler, taskCache),
          taskStates: new TaskStates(store, config.listMaxBytes),
          deliveries: new Deliveries(store, () => pushWorker?.kick()),
          quota,
          sse,
          seams: { engine, service: a2a, pushPolicy: policy },
          ...(oidc ? { oidc } : {}),
          ...(cardSigner ? { cardSigner } : {}),
        }),
      (a) => peerCallbackRoutes(a, { waitOf: (waitId) => store.peerWaits.get(waitId), wakes: peerWakes }),
      (a) => {
        const links = notifier.links(engine, clock, interruptTokens);
        void a.register(decisionLinkRoutes, { links, store, kick: () => notifier.worker.kick() });
      },
      (a) => webhookRoutes(a, webhooks),
      (a) => (cardSigner ? jwksRoute(a, cardSigner) : undefined),
      (a) => (oidc ? consoleSignInRoute(a, oidc) : undefined),
    ],
    ...(oidc ? { oidc } : {}),
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
    notifyWorker: notifier.worker,
    webhooks,
    metrics,
    app,
    sse,
    workflows,
    catalog,
    taskCache,
    async listen() {
      const address = await app.listen({ host: config.host, port: config.port });
      runner.start();
      pushWorker.start();
      notifier.listening(address);
      notifier.worker.start();
      webhooks.start();
      retention.start();
      cancels.start();
      return address;
    },
    async close() {
      retention.stop();
      stopCancelWatch();
      cancels.stop();
      peerStreams.close();
      await app.close();
      await runner.stop();
      await peers.close().catch(() => {});
      await pushWorker.stop();
      await notifier.close();
      await webhooks.stop();
      await dispatcher.close().catch(() => {});
      await services.calls?.dispatcher.close().catch(() => {});
      await bus.close();
      await store.close();
      await stopTracing?.();
    },
  };
}

/**
 * The provider whose tokens the host accepts (its discovery is started now, so the card names the
 * token endpoint from the first request; a provider that is down is asked again on the next token),
 * and the key that signs the cards.
 */
async function trust(config: Config, log: Logger): Promise<{ oidc?: OidcVerifier; cardSigner?: CardSigner }> {
  const oidc = config.oidc ? new OidcVerifier(config.oidc) : undefined;
  await oidc
    ?.metadata()
    .catch((err: Error) => log.warn({ issuer: config.oidc?.issuer, err: err.message }, 'OpenID discovery failed'));
  const cardSigner = config.cardSigningKeyFile ? await CardSigner.fromFile(config.cardSigningKeyFile) : undefined;
  return { ...(oidc ? { oidc } : {}), ...(cardSigner ? { cardSigner } : {}) };
}

/** The services nodes that call out are lent: their own egress policy and guarded dispatcher. */
function nodeServices(config: Config, opts: HostOptions): NodeServices {
  const policy = createEgressPolicy({ ...config.egress, settings: CALL_EGRESS_SETTINGS });
  const dispatcher = createGuardedDispatcher({
    policy,
    ...(config.egress.caFile ? { ca: readFileSync(config.egress.caFile) } : {}),
    ...(opts.egressLookup ? { lookup: opts.egressLookup } : {}),
  });
  // http.request's client-credentials tokens: fetched through the same guard as the calls.
  const tokens = new TokenSource({ redactor: config.secrets.redactor, timeoutMs: 30_000 });
  return { calls: { dispatcher, policy, secrets: config.secrets, llmProviders: config.llmProviders, tokens } };
}

/**
 * What every run change does, in order. Inside its transaction: the A2A task record, then the
 * push outbox rows, then the notification rows of a gate that opened or escalated, then the
 * cancel of the unfinished children of a run that ended (each child's change runs these steps in
 * turn). After its commit: the tasks/get cache drops the task (before anyone is woken who could
 * read the old one), the metrics count it, the bus wakes followers and workers, the push worker
 * and the notification worker are woken when rows were enqueued, and a child that ended wakes
 * its parent.
 */
export function pipeline(parts: {
  bus: ChangeBus;
  metrics: Metrics;
  taskCache: TaskCache | undefined;
  wakePushWorker: () => void;
  /** The notification outbox of gates (src/notify/): its step and its worker's wake. */
  notify?: { step: TransitionStep; listener: CommitListener };
  /** A branch was withdrawn: the peer task it waited on (marked in its transaction) wants a cancel. */
  wakePeerCancels?: () => void;
  /** The webhook outbox: its rows in the transaction, its worker woken after (src/webhooks/). */
  webhooks?: { step: TransitionStep; listener: CommitListener };
  children: { step: TransitionStep; listener: CommitListener };
}): Pipeline {
  const push = pushOutbox(parts.wakePushWorker);
  const wake = parts.wakePeerCancels;
  return {
    steps: [
      taskRecordStep,
      push.step,
      ...(parts.notify ? [parts.notify.step] : []),
      ...(parts.webhooks ? [parts.webhooks.step] : []),
      parts.children.step,
    ],
    listeners: [
      ...(parts.taskCache ? [parts.taskCache.listener] : []),
      parts.metrics.runListener,
      busPublisher(parts.bus),
      push.listener,
      ...(parts.notify ? [parts.notify.listener] : []),
      ...(wake ? [withdrawalListener(wake)] : []),
      parts.children.listener,
      ...(parts.webhooks ? [parts.webhooks.listener] : []),
    ],
  };
}

/** After a commit that withdrew a branch, wake the peer-cancel pass (its cancel was marked then). */
function withdrawalListener(wake: () => void): CommitListener {
  return {
    name: 'peer-cancel-wake',
    committed(changes) {
      if (changes.some((c) => c.events.some((e) => e.type === 'branch.withdrawn'))) wake();
    },
  };
}

async function openHostStore(config: Config, log: Logger, metrics: Metrics, clock: Clock): Promise<Store> {
  const store = await openStore({
    now: () => new Date(clock.now()),
    ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
    ...(config.pgSchema ? { pgSchema: config.pgSchema } : {}),
    pgPoolSize: config.pgPoolSize,
    sqliteFile: sqliteFile(config),
    sqliteSynchronous: config.sqliteSynchronous,
    sqliteExclusive: true,
    onStatement: metrics.countStatement,
    onGroupCommit: (transactions) => metrics.storeGroupCommits.observe(transactions),
    onRoundTrip: () => metrics.storeRoundTrips.inc(),
    onPoolError: (err) => log.warn({ err }, 'a pooled database connection failed; the pool replaces it'),
  });
  if (store.dialect === 'sqlite') {
    // One process owns a SQLite file, so any lease in it belongs to a previous (crashed)
    // incarnation of this host: take the runs back now instead of waiting for expiry.
    const freed = await store.runs.releaseLeases();
    if (freed > 0) log.info({ runs: freed }, 'recovered runs leased before a restart');
    await store.outbox.releaseLeases();
    await store.notifications.releaseLeases();
  }
  if (store.dialect === 'postgres' && !config.push.secretKey) {
    // Fine for a single instance; with several, each would encrypt push tokens under its own key
    // file and fail to decrypt the others' when it claims their deliveries.
    log.warn(
      'HANDOFF_SECRET_KEY is not set: push tokens are encrypted under this instance’s own key file; ' +
        'every instance sharing this database must be given the same HANDOFF_SECRET_KEY',
    );
  }
  return store;
}

/** PostgreSQL: instances share runs, so wake-ups cross processes (LISTEN/NOTIFY). */
async function openBus(config: Config, store: Store, log: Logger): Promise<ChangeBus> {
  if (store.dialect !== 'postgres' || !config.databaseUrl) return new InProcessBus();
  const bus = new PgBus({
    databaseUrl: config.databaseUrl,
    instanceId: config.instanceId,
    logger: log,
    ...(config.pgSchema ? { schema: config.pgSchema } : {}),
  });
  await bus.start();
  return bus;
}

/**
 * The workflows `serve` runs: the configured directories and, with HANDOFF_CONFORMANCE_FIXTURES=1,
 * the canonical conformance fixtures. A file that does not load is logged with its problems and
 * listed (GET /v1/workflows?include=refused, /healthz degraded) unless config.strictWorkflows.
 */
async function loadHostWorkflows(
  config: Config,
  log: Logger,
): Promise<{ workflows: WorkflowRegistry; catalog: WorkflowCatalog }> {
  const dirs = config.conformanceFixtures ? [...config.workflowDirs, CONFORMANCE_FIXTURES] : config.workflowDirs;
  const opts = { secrets: config.secrets };
  if (config.strictWorkflows) {
    const workflows = await loadWorkflows(dirs, opts);
    return { workflows, catalog: { refused: [], fixtures: fixtureIds(workflows, () => true, config) } };
  }
  const { registry, refused, dirOf } = await loadWorkflowDirs(dirs, opts);
  for (const r of refused) log.error({ file: r.file, problems: r.problems }, 'workflow refused');
  const fixtures = fixtureIds(registry, (id) => dirOf.get(id) === CONFORMANCE_FIXTURES, config);
  return { workflows: registry, catalog: { refused, fixtures } };
}

/**
 * The seeded fixtures: the loaded `conformance-*` workflows of the fixtures directory that can run
 * here. One that calls an agent (`a2a.invoke`) is advertised only when the registry names that
 * agent: the suite's A2A peer listens on an address only its operator knows (HANDOFF_AGENTS).
 */
function fixtureIds(workflows: WorkflowRegistry, fromFixtures: (id: string) => boolean, config: Config): string[] {
  if (!config.conformanceFixtures) return [];
  const runnable = (id: string) =>
    (workflows.get(id)?.nodes ?? []).every(
      (n) => n.typeId !== 'a2a.invoke' || config.agents.registry.has(String(n.config.agent)),
    );
  return workflows
    .ids()
    .filter((id) => id.startsWith('conformance-') && fromFixtures(id) && runnable(id))
    .sort();
}
