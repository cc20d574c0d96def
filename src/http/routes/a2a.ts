// The A2A surface: the agent card, the JSON-RPC endpoint, the A2ATaskState host read and (behind
// HANDOFF_TEST_SEAMS=1) the RFC 0100 conformance seams.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { buildA2ADiscoveryBlock, buildAgentCard } from '../../a2a/card.js';
import { toA2AError } from '../../a2a/errors.js';
import { errorResponse, parseEnvelope, parseJson, successResponse, validateParams } from '../../a2a/jsonrpc.js';
import type { A2AService } from '../../a2a/service.js';
import { getTaskRecord, toStateRecord } from '../../a2a/task-records.js';
import type { Config } from '../../config.js';
import type { Engine } from '../../engine/engine.js';
import type { WorkflowRegistry } from '../../engine/workflow/loader.js';
import { HttpError } from '../errors.js';
import { VERSION } from './ops.js';

export interface A2ARouteDeps {
  config: Config;
  engine: Engine;
  workflows: WorkflowRegistry;
  service: A2AService;
}

/** The features this host really serves; the card and the discovery block both read these. */
export const A2A_FEATURES = { streaming: false, pushNotifications: false } as const;

export function baseUrl(config: Config, req: FastifyRequest): string {
  if (config.publicUrl) return config.publicUrl;
  return `${req.protocol}://${req.host}`;
}

export function discoveryBlock(config: Config, req: FastifyRequest) {
  return buildA2ADiscoveryBlock({ baseUrl: baseUrl(config, req), ...A2A_FEATURES });
}

export function a2aRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  const card = (req: FastifyRequest) =>
    buildAgentCard({
      baseUrl: baseUrl(deps.config, req),
      name: 'Handoff',
      description: 'Durable, human-in-the-loop OpenWOP workflow runs as A2A tasks',
      version: VERSION,
      skills: deps.workflows
        .list()
        .filter((w) => w.public !== false)
        .map((w) => ({ id: w.id, name: w.name, description: w.description ?? w.name })),
      ...A2A_FEATURES,
      requireAuth: deps.config.apiKeys.size > 0,
    });
  app.get('/.well-known/agent-card.json', async (req) => card(req));
  app.get('/v1/a2a/agent.json', async (req) => card(req));

  const readRecord = async (req: FastifyRequest<{ Params: { taskId: string } }>) => {
    const rec = await getTaskRecord(deps.engine.store, req.params.taskId, req.caller.tenantId);
    if (!rec) throw new HttpError(404, 'not_found', `task ${req.params.taskId} not found`);
    return toStateRecord(rec);
  };
  app.get<{ Params: { taskId: string } }>('/v1/a2a/tasks/:taskId', readRecord);

  // JSON-RPC: parse the body ourselves so malformed JSON is a JSON-RPC -32700, not a REST 400.
  void app.register(async (rpc) => {
    rpc.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    // Whatever the declared type, the answer is JSON-RPC (a missing Content-Type is a client slip).
    rpc.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    rpc.post('/v1/a2a', async (req, reply) => {
      void reply.header('Content-Type', 'application/json');
      return handleRpc(deps.service, req.caller, String(req.body ?? ''));
    });
  });

  if (deps.config.testSeams) seamRoutes(app, deps, readRecord);
}

async function handleRpc(service: A2AService, caller: FastifyRequest['caller'], text: string) {
  const json = parseJson(text);
  if (!json.ok) return errorResponse(null, json.error);
  const env = parseEnvelope(json.value);
  if (!env.ok) return errorResponse(env.id, env.error);
  const invalid = validateParams(env.method, env.params);
  if (invalid) return errorResponse(env.id, invalid);
  try {
    return successResponse(env.id, await service.call(caller, env.method, env.params));
  } catch (err) {
    return errorResponse(env.id, toA2AError(err));
  }
}

/** RFC 0100 conformance seams (spec/openwop.md §6.5): they drive the real code path. */
function seamRoutes(
  app: FastifyInstance,
  deps: A2ARouteDeps,
  readRecord: (req: FastifyRequest<{ Params: { taskId: string } }>) => Promise<unknown>,
): void {
  app.get<{ Params: { taskId: string } }>('/v1/host/sample/a2a/tasks/:taskId', readRecord);
  app.post<{ Body: { scenario?: string } }>('/v1/host/sample/a2a/tasks/start', async (req, reply) => {
    if (req.body?.scenario !== 'paused-at-approval') {
      throw new HttpError(400, 'validation_error', "scenario must be 'paused-at-approval'");
    }
    const { run } = await deps.engine.startRun(req.caller, { workflowId: 'approval', inputs: { prompt: 'conformance' } });
    // Return only once the run really is waiting for approval (the suite reads at once).
    await deps.service.waitFor(req.caller, run.runId, (r) => r.status !== 'pending' && r.status !== 'running');
    return reply.status(201).send({ taskId: run.runId });
  });
}
