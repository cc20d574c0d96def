// The Fastify application: one instance per host process, routes per surface.
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { ChangeBus } from '../bus/bus.js';
import type { Config } from '../config.js';
import type { Engine } from '../engine/engine.js';
import type { WorkflowRegistry } from '../engine/workflow/loader.js';
import type { Metrics } from '../metrics.js';
import { authHook } from './auth.js';
import { errorHandler } from './errors.js';
import { openapiRoutes } from './openapi.js';
import { compileValidator } from './validation.js';
import { type DiscoveryExtras, opsRoutes } from './routes/ops.js';
import { consoleRoutes, isBrowserAtRoot } from './routes/console.js';
import { runListRoutes } from './routes/run-list.js';
import { runRoutes } from './routes/runs.js';

export interface AppDeps {
  config: Config;
  logger: Logger;
  engine: Engine;
  bus: ChangeBus;
  workflows: WorkflowRegistry;
  metrics: Metrics;
  /** Surfaces mounted beside the REST API (the A2A endpoint, test seams). */
  plugins?: Array<(app: FastifyInstance) => void>;
  discovery?: Partial<DiscoveryExtras>;
}

export function buildApp(deps: AppDeps): FastifyInstance {
  const { tls } = deps.config;
  const app: FastifyInstance = Fastify({
    // Read once at start: a rotated certificate takes a restart (or a TLS-terminating proxy).
    ...(tls ? { https: { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } } : {}),
    loggerInstance: deps.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.bodyLimit,
    return503OnClosing: true,
    // Run ids are up to 128 characters; the default (100) would answer longer ones with a bare 414.
    maxParamLength: 256,
  });
  app.setValidatorCompiler(({ schema, httpPart }) => compileValidator(schema, httpPart));
  // JSON only: a text/plain body is 415, not a confusing schema error.
  app.removeContentTypeParser('text/plain');
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
  app.addHook('onRequest', authHook(deps.config.apiKeys));
  app.addHook('onResponse', (req, reply, done) => {
    deps.metrics.httpDuration.observe(
      { route: req.routeOptions.url ?? 'unknown', method: req.method, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });
  runRoutes(app, deps.engine, deps.bus, deps.config.sse);
  runListRoutes(app, deps.engine.store, deps.bus, deps.config.sse);
  consoleRoutes(app);
  openapiRoutes(app, deps.config.publicUrl ? { serverUrl: deps.config.publicUrl } : {});
  opsRoutes(app, deps.engine.store, deps.workflows, deps.metrics, {
    families: deps.discovery?.families ?? (() => ({})),
    transports: deps.discovery?.transports ?? [],
  });
  for (const plugin of deps.plugins ?? []) plugin(app);
  return app;
}
