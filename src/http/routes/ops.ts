// Operational and read-only routes: discovery, workflows, health, metrics.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WorkflowRegistry } from '../../engine/workflow/loader.js';
import type { Metrics } from '../../metrics.js';
import { VERSION } from '../../version.js';
import { Type } from '@sinclair/typebox';
import { HttpError } from '../errors.js';
import {
  Discovery,
  failure,
  Health,
  raw,
  ref,
  typed,
  UNAUTHORIZED,
  WorkflowDefinition,
  WorkflowList,
  withHeaders,
} from '../schemas.js';

export interface DiscoveryExtras {
  /** Extra root families (e.g. the `a2a` block), added by the surfaces that provide them. */
  families: (req: FastifyRequest) => Record<string, unknown>;
  transports: string[];
}

/** The database behind the health check: whether it answers, and which it is. */
export interface DatabaseProbe {
  ping(): Promise<void>;
  readonly dialect: 'sqlite' | 'postgres';
}

export function opsRoutes(
  app: FastifyInstance,
  database: DatabaseProbe,
  workflows: WorkflowRegistry,
  metrics: Metrics,
  extras: DiscoveryExtras,
): void {
  const api = typed(app);
  api.get(
    '/.well-known/openwop',
    {
      config: { public: true },
      schema: {
        operationId: 'getDiscovery',
        tags: ['discovery'],
        summary: 'OpenWOP discovery document',
        response: {
          200: withHeaders(ref(Discovery, 'The discovery document.'), {
            'Cache-Control': { description: 'public, max-age=300' },
          }),
        },
      },
    },
    async (req, reply) => {
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
    },
  );

  api.get(
    '/v1/workflows',
    {
      schema: {
        operationId: 'listWorkflows',
        tags: ['workflows'],
        summary: 'Loaded workflow definitions',
        response: { 200: ref(WorkflowList, 'Every loaded workflow.'), 401: UNAUTHORIZED },
      },
    },
    async () => ({
      workflows: workflows
        .list()
        .map((w) => ({ id: w.id, name: w.name, version: w.version, description: w.description })),
    }),
  );

  api.get(
    '/v1/workflows/:id',
    {
      schema: {
        operationId: 'getWorkflow',
        tags: ['workflows'],
        summary: 'One workflow definition',
        params: Type.Object({ id: Type.String({ description: 'The workflow id.' }) }),
        response: {
          200: ref(WorkflowDefinition, 'The definition as loaded.'),
          401: UNAUTHORIZED,
          404: failure('No such workflow (`not_found`).'),
        },
      },
    },
    async (req) => {
      const def = workflows.get(req.params.id);
      if (!def) throw new HttpError(404, 'not_found', `workflow '${req.params.id}' not found`);
      return def;
    },
  );

  api.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        operationId: 'getHealth',
        tags: ['operations'],
        summary: 'Health check',
        response: { 200: ref(Health, 'The database answers.'), 503: ref(Health, 'The database does not answer.') },
      },
    },
    async (_req, reply) => {
      try {
        await database.ping();
        return { status: 'ok' as const, database: database.dialect };
      } catch (err) {
        return reply
          .status(503)
          .send({ status: 'unavailable', database: database.dialect, message: (err as Error).message });
      }
    },
  );

  api.get(
    '/metrics',
    {
      config: { public: true },
      schema: {
        operationId: 'getMetrics',
        tags: ['operations'],
        summary: 'Prometheus metrics',
        response: { 200: raw('Prometheus text exposition format 0.0.4.', 'text/plain') },
      },
    },
    async (_req, reply) => {
      void reply.header('Content-Type', metrics.registry.contentType);
      return metrics.registry.metrics();
    },
  );
}
