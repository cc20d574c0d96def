// Operational and read-only routes: discovery, workflows, health, metrics.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WorkflowCatalog, WorkflowRegistry } from '../../engine/workflow/loader.js';
import { matchesEtag, strongEtag } from '../etag.js';
import type { Metrics } from '../../metrics.js';
import { VERSION } from '../../version.js';
import { Type } from '@sinclair/typebox';
import { HttpError } from '../errors.js';
import {
  Discovery,
  empty,
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
  /** Refused workflow files and seeded conformance fixtures. */
  catalog: WorkflowCatalog;
}

const DISCOVERY_HEADERS = {
  'Cache-Control': { description: 'public, max-age=300 (private for the authenticated view)' },
  Vary: { description: 'Authorization: an API key adds the caller to the document.' },
  ETag: { description: 'Strong validator of this document (RFC 0165 §C.2); `If-None-Match` with it answers 304.' },
  'Capabilities-Etag': { description: 'The same validator, under the name OpenWOP clients read.' },
};

/** The database behind the health check: whether it answers, and which it is. */
export interface DatabaseProbe {
  ping(): Promise<void>;
  readonly dialect: 'sqlite' | 'postgres';
}

/** The `webhooks` capability family (spec/v1/webhooks.md). */
const WEBHOOKS_FAMILY = { supported: true, durable: false, signatureAlgorithms: ['v1'] };

/**
 * The `interrupt` capability family (RFC 0104): an approval gate's `approverGroupRefs` and
 * `approverRoleRefs` are enforced against the caller's credential; no `audience` hint is taken.
 */
const INTERRUPT_FAMILY = {
  approverRouting: { supported: true, refKinds: ['group' as const, 'role' as const], audience: false },
};

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
          200: withHeaders(ref(Discovery, 'The discovery document.'), DISCOVERY_HEADERS),
          304: withHeaders(empty('Not modified: `If-None-Match` names the current ETag.'), DISCOVERY_HEADERS),
        },
      },
    },
    async (req, reply) => {
      const doc = {
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
        // RFC 0003: the canonical fixtures this host seeded (HANDOFF_CONFORMANCE_FIXTURES=1).
        fixtures: extras.catalog.fixtures,
        // spec/v1/webhooks.md: best-effort signed deliveries (`v1`), not the RFC 0083 durable mode.
        webhooks: WEBHOOKS_FAMILY,
        // RFC 0104: approval gates route by group and role refs besides principals.
        interrupt: INTERRUPT_FAMILY,
        // RFC 0073: the families belong at the root; v1.x tolerates a `capabilities` mirror, which
        // suites before 1.135 read instead. Only `webhooks` is mirrored: the `a2a` block must
        // never appear there.
        capabilities: { webhooks: WEBHOOKS_FAMILY },
        // RFC 0011: called with a valid API key, the same endpoint adds who the caller is.
        discovery: { authScoped: { supported: true, mode: 'same-endpoint' } },
        ...extras.families(req),
        ...(req.caller && req.headers.authorization
          ? { caller: { tenantId: req.caller.tenantId, principalId: req.caller.principalId } }
          : {}),
      };
      // The body is sent as JSON.stringify writes it (schemas never reshape it), so this is its validator.
      const etag = strongEtag(JSON.stringify(doc));
      // The authenticated view is the caller's own: no shared cache may keep it.
      const cache = 'caller' in doc ? 'private, max-age=300' : 'public, max-age=300';
      void reply.headers({ 'Cache-Control': cache, Vary: 'Authorization', ETag: etag, 'Capabilities-Etag': etag });
      if (matchesEtag(req.headers['if-none-match'], etag)) return reply.status(304).send();
      return doc;
    },
  );

  api.get(
    '/v1/workflows',
    {
      schema: {
        operationId: 'listWorkflows',
        tags: ['workflows'],
        summary: 'Loaded workflow definitions',
        querystring: Type.Object({
          include: Type.Optional(
            Type.Literal('refused', { description: '`refused`: also list the workflow files the host refused.' }),
          ),
        }),
        response: { 200: ref(WorkflowList, 'Every loaded workflow.'), 401: UNAUTHORIZED },
      },
    },
    async (req) => ({
      workflows: workflows
        .list()
        .map((w) => ({ id: w.id, name: w.name, version: w.version, description: w.description })),
      ...(req.query.include === 'refused' ? { refused: extras.catalog.refused } : {}),
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
        response: {
          200: ref(Health, 'The database answers (`degraded`: some workflow files were refused).'),
          503: ref(Health, 'The database does not answer.'),
        },
      },
    },
    async (_req, reply) => {
      try {
        await database.ping();
        // Serving, without the workflows of the files it refused at start (GET /v1/workflows?include=refused).
        const refused = extras.catalog.refused.length;
        if (refused > 0) return { status: 'degraded' as const, database: database.dialect, refusedWorkflows: refused };
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
