// The Fastify application: one instance per host process, routes per surface.
import { readFileSync } from 'node:fs';
import cors from '@fastify/cors';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import { A2A_REST_PATH } from '../a2a/codec/rest.js';
import type { ChangeBus } from '../bus/bus.js';
import type { Config } from '../config.js';
import type { Engine } from '../engine/engine.js';
import type { WorkflowCatalog, WorkflowRegistry } from '../engine/workflow/loader.js';
import type { Metrics } from '../metrics.js';
import { publicRoutes, registerAuth } from './auth.js';
import { errorHandler, HttpError } from './errors.js';
import { hostHook, nulIdHook, originHook } from './guards.js';
import { jsonBodyParser } from './json-body.js';
import type { OidcVerifier } from './oidc.js';
import { registerOpenApi } from './openapi.js';
import { type RunQuota, registerTenantRate } from './quotas.js';
import { sendError } from './routes/a2a/rest.js';
import { consoleRoutes, isBrowserAtRoot } from './routes/console.js';
import { type DiscoveryExtras, opsRoutes } from './routes/ops.js';
import { runListRoutes } from './routes/run-list.js';
import { runRoutes } from './routes/runs.js';
import { auditRoutes } from './routes/audit.js';
import { RunReads } from '../engine/run-reads.js';
import type { SseHub } from './sse.js';
import { compileValidator } from './validation.js';
import { traceRequests } from './tracing.js';
import { tracingEnabled } from '../telemetry/tracing.js';

export interface AppDeps {
  config: Config;
  logger: Logger;
  engine: Engine;
  bus: ChangeBus;
  workflows: WorkflowRegistry;
  /** Refused workflow files and seeded fixtures (absent: none). */
  catalog?: WorkflowCatalog;
  metrics: Metrics;
  /** The host's SSE streams and their shared limits. */
  sse: SseHub;
  /** HANDOFF_TENANT_MAX_ACTIVE_RUNS, for every route that starts a run. */
  quota: RunQuota;
  /** Surfaces mounted beside the REST API (the A2A endpoint, test seams). */
  plugins?: Array<(app: FastifyInstance) => void>;
  discovery?: Partial<DiscoveryExtras>;
  /** HANDOFF_OIDC_ISSUER set: the provider's access tokens are accepted beside API keys. */
  oidc?: OidcVerifier;
}

/** Async because plugins whose hooks must precede the routes (CORS, rate limit) load first. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { tls } = deps.config;
  const app: FastifyInstance = Fastify({
    // Read once at start: a rotated certificate takes a restart (or a TLS-terminating proxy).
    ...(tls ? { https: { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } } : {}),
    loggerInstance: deps.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.bodyLimit,
    return503OnClosing: true,
    // Run ids are up to 128 characters; the default (100) would answer longer ones with a bare 414.
    routerOptions: { maxParamLength: 256 },
    // What the router refuses before any route (and any hook) is answered like every other error.
    frameworkErrors: routerError,
  });
  app.setValidatorCompiler(({ schema, httpPart }) => compileValidator(schema, httpPart));
  // JSON only, within the depth limit: a text/plain or form body is 415, not a confusing schema error.
  jsonBodyParser(app, deps.config.jsonMaxDepth);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) => {
    if (isBrowserAtRoot(req)) return reply.redirect('/console');
    void reply.status(404).send({ error: 'not_found', message: `no route ${req.method} ${req.url.split('?')[0]}` });
  });
  // While draining, tell keep-alive clients to go: an idle kept-alive socket would otherwise hold
  // the shutdown until the keep-alive timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Every request passes these hooks: callback style, which spares Fastify a promise per hook.
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (closing) void reply.header('Connection', 'close');
    done(null, payload);
  });
  // In this order, before any work: the Host (rebinding), CORS preflights (which carry no key),
  // the Origin of writes (forgery), the API key, then the tenant's rate (a per-route hook).
  app.addHook('onRequest', hostHook(deps.config));
  if (deps.config.corsOrigins.length > 0) await app.register(cors, corsOptions(deps.config.corsOrigins));
  app.addHook('onRequest', originHook(deps.config));
  // Both read the routes (which are public, and the document); the routes come after them.
  const isPublic = publicRoutes(app);
  await registerOpenApi(app, deps.config.publicUrl ? { serverUrl: deps.config.publicUrl } : {});
  registerAuth(app, deps.config.apiKeys, isPublic, deps.oidc);
  await registerTenantRate(app, deps.config, deps.engine.store, isPublic);
  app.addHook('preValidation', nulIdHook);
  if (tracingEnabled()) traceRequests(app);
  app.addHook('preClose', async () => deps.sse.closeAll());
  app.addHook('onResponse', (req, reply, done) => {
    deps.metrics.httpDuration.observe(
      { route: req.routeOptions.url ?? 'unknown', method: req.method, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });
  const reads = new RunReads(deps.engine.store, deps.bus);
  runRoutes(app, { engine: deps.engine, bus: deps.bus, sse: deps.sse, quota: deps.quota, reads });
  runListRoutes(app, reads, deps.bus, deps.sse, deps.config.listMaxBytes);
  auditRoutes(app, deps.engine.store);
  consoleRoutes(app);
  opsRoutes(app, deps.engine.store, deps.workflows, deps.metrics, {
    families: deps.discovery?.families ?? (() => ({})),
    transports: deps.discovery?.transports ?? [],
    catalog: deps.catalog ?? { refused: [], fixtures: [] },
  });
  for (const plugin of deps.plugins ?? []) plugin(app);
  return app;
}

/**
 * The router's own refusals — a path that is not valid percent-encoded UTF-8 (400), a path segment
 * longer than maxParamLength (414) — in the error form of the surface the path belongs to: a
 * google.rpc.Status under the A2A HTTP+JSON binding, the OpenWOP envelope elsewhere. Fastify's
 * default body was a shape of its own (and echoed the whole path).
 */
function routerError(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const refusal =
    err.code === 'FST_ERR_BAD_URL'
      ? new HttpError(400, 'bad_url', 'the URL path is not valid percent-encoded UTF-8')
      : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new HttpError(414, 'uri_too_long', 'a segment of the URL path is longer than 256 characters')
        : err;
  if (req.url.startsWith(`${A2A_REST_PATH}/`)) sendError(req, reply, refusal);
  else errorHandler(refusal, req, reply);
}

/** HANDOFF_CORS_ORIGINS set: browsers on those origins may call the API with a bearer key. */
function corsOptions(origins: string[]) {
  return {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'POST'],
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'Idempotency-Key',
      'Last-Event-ID',
      'If-Match',
      'Handoff-Surface',
    ],
    exposedHeaders: ['Retry-After', 'WWW-Authenticate', 'openwop-Idempotent-Replay'],
    maxAge: 600,
  };
}
