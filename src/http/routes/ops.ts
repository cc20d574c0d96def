// Operational and read-only routes: discovery, workflows, health, metrics.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WorkflowRegistry } from '../../engine/workflow/loader.js';
import type { Metrics } from '../../metrics.js';
import type { Store } from '../../store/store.js';
import { VERSION } from '../../version.js';
import { HttpError } from '../errors.js';

export interface DiscoveryExtras {
  /** Extra root families (e.g. the `a2a` block), added by the surfaces that provide them. */
  families: (req: FastifyRequest) => Record<string, unknown>;
  transports: string[];
}

export function opsRoutes(
  app: FastifyInstance,
  store: Store,
  workflows: WorkflowRegistry,
  metrics: Metrics,
  extras: DiscoveryExtras,
): void {
  app.get('/.well-known/openwop', async (req, reply) => {
    void reply.header('Cache-Control', 'public, max-age=300');
    return {
      protocolVersion: '1.0',
      implementation: { name: 'handoff', version: VERSION },
      supportedEnvelopes: [],
      schemaVersions: {},
      limits: {
        clarificationRounds: 1,
        schemaRounds: 0,
        envelopesPerTurn: 0,
        maxRequestBodyBytes: app.initialConfig.bodyLimit,
      },
      supportedTransports: ['rest', ...extras.transports],
      workflows: workflows.ids(),
      ...extras.families(req),
    };
  });

  app.get('/v1/workflows', async () => ({
    workflows: workflows
      .list()
      .map((w) => ({ id: w.id, name: w.name, version: w.version, description: w.description })),
  }));

  app.get<{ Params: { id: string } }>('/v1/workflows/:id', async (req) => {
    const def = workflows.get(req.params.id);
    if (!def) throw new HttpError(404, 'not_found', `workflow '${req.params.id}' not found`);
    return def;
  });

  app.get('/healthz', async (_req, reply) => {
    try {
      await store.ping();
      return { status: 'ok', database: store.dialect };
    } catch (err) {
      return reply
        .status(503)
        .send({ status: 'unavailable', database: store.dialect, message: (err as Error).message });
    }
  });

  app.get('/metrics', async (_req, reply) => {
    void reply.header('Content-Type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
