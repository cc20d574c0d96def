// The A2A surface, one module per binding or job: the agent card (card.ts), the JSON-RPC endpoint
// for 0.3 and 1.0 (jsonrpc.ts), the HTTP+JSON 1.0 binding (rest.ts), the SSE of both (streams.ts),
// the RFC 0100 A2ATaskState reads and the push deliveries (records.ts), and behind
// HANDOFF_TEST_SEAMS=1 the RFC 0100 conformance seams (seams.ts). Every binding decodes with the
// codec of the request's version and calls the one handler (src/a2a/handler.ts) through the
// A2ABinding; none reads the store.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { CardSigner } from '../../../jws/card-signing.js';
import type { OidcVerifier } from '../../oidc.js';
import type { A2ABinding } from '../../../a2a/binding.js';
import type { A2AService } from '../../../a2a/service.js';
import type { TaskStates } from '../../../a2a/task-states.js';
import { buildA2ADiscoveryBlock } from '../../../a2a/v0_3/card.js';
import { VERSION_HEADER } from '../../../a2a/versions.js';
import type { Config } from '../../../config.js';
import type { Engine } from '../../../engine/engine.js';
import type { WorkflowRegistry } from '../../../engine/workflow/loader.js';
import { VERSION } from '../../../version.js';
import type { EgressPolicy } from '../../../egress/address.js';
import type { Deliveries } from '../../../push/deliveries.js';
import type { RunQuota } from '../../quotas.js';
import type { SseHub } from '../../sse.js';
import { cardRoutes } from './card.js';
import { jsonRpcRoutes } from './jsonrpc.js';
import { recordRoutes } from './records.js';
import { a2aRestRoutes } from './rest.js';
import { seamRoutes } from './seams.js';

export interface A2ARouteDeps {
  config: Config;
  /** The handler, and the encoding of its answers for each version. */
  binding: A2ABinding;
  taskStates: TaskStates;
  deliveries: Deliveries;
  /** HANDOFF_TENANT_MAX_ACTIVE_RUNS, checked before a message starts a task. */
  quota: RunQuota;
  /** The host's SSE streams (shared with the REST event stream). */
  sse: SseHub;
  /** What the conformance seams drive (HANDOFF_TEST_SEAMS=1): a run paused at an approval. */
  seams: { engine: Engine; service: A2AService; pushPolicy: EgressPolicy };
  /** HANDOFF_OIDC_ISSUER: the card declares the provider's schemes. */
  oidc?: OidcVerifier;
  /** HANDOFF_CARD_SIGNING_KEY_FILE: every card served is signed. */
  cardSigner?: CardSigner;
}

/** The features this host really serves; the card and the discovery block both read these. */
export const A2A_FEATURES = { streaming: true, pushNotifications: true } as const;

/** What the card says besides its URLs: the public workflows as skills, the features, auth. */
export function cardSays(config: Config, workflows: WorkflowRegistry) {
  return () => ({
    name: 'Handoff',
    description: 'Durable, human-in-the-loop OpenWOP workflow runs as A2A tasks',
    version: VERSION,
    skills: workflows
      .list()
      .filter((w) => w.public !== false)
      .map((w) => ({ id: w.id, name: w.name, description: w.description ?? w.name })),
    ...A2A_FEATURES,
    requireAuth: config.apiKeys.size > 0 || config.oidc !== undefined,
  });
}

export function baseUrl(config: Config, req: FastifyRequest): string {
  if (config.publicUrl) return config.publicUrl;
  return `${req.protocol}://${req.host}`;
}

export function discoveryBlock(config: Config, req: FastifyRequest) {
  return buildA2ADiscoveryBlock({ baseUrl: baseUrl(config, req), ...A2A_FEATURES });
}

/** The version a request names: the A2A-Version header, else the query parameter. */
export function versionAsked(req: FastifyRequest): { header: unknown; query: unknown } {
  return { header: req.headers['a2a-version'], query: (req.query as Record<string, unknown>)[VERSION_HEADER] };
}

export function a2aRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  cardRoutes(app, deps);
  recordRoutes(app, deps);
  jsonRpcRoutes(app, deps);
  a2aRestRoutes(app, deps);
  if (deps.config.testSeams) seamRoutes(app, deps);
}
