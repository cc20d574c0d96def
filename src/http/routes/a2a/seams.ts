// RFC 0100 conformance seams (docs/protocol/openwop.md#conformance-seams), behind
// HANDOFF_TEST_SEAMS=1: they drive the real code path.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { toA2AError } from '../../../a2a/errors.js';
import { checkPushUrl } from '../../../egress/address.js';
import { A2ATaskState, SeamPushBody, SeamStartBody } from '../../a2a-schemas.js';
import { HttpError } from '../../errors.js';
import { BAD_MEDIA_TYPE, CROSS_SITE, failure, ref, TOO_LARGE, typed, UNAUTHORIZED } from '../../schemas.js';
import type { A2ARouteDeps } from './index.js';
import { readRecord, TaskParams } from './records.js';

export function seamRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  const api = typed(app);
  const WRITE_ERRORS = { 401: UNAUTHORIZED, 403: CROSS_SITE, 413: TOO_LARGE, 415: BAD_MEDIA_TYPE };
  const seam = (operationId: string, summary: string) => ({ operationId, tags: ['seams'], summary });
  const state = {
    ...seam('seamGetTaskState', 'The A2ATaskState record (the suite’s read)'),
    params: TaskParams,
    response: { 200: ref(A2ATaskState, 'The task state.'), 401: UNAUTHORIZED, 404: failure('No such task.') },
  };
  api.get('/v1/host/sample/a2a/tasks/:taskId', { schema: state }, (req) =>
    readRecord(deps, req.caller.tenantId, req.params.taskId),
  );
  const start = {
    ...seam('seamStartTask', 'Start a task paused at an approval'),
    body: SeamStartBody,
    response: {
      201: Type.Object({ taskId: Type.String() }, { description: 'The task, waiting for approval.' }),
      400: failure('`scenario` is not `paused-at-approval` (`validation_error`).'),
      ...WRITE_ERRORS,
    },
  };
  // Like cancel, a bare POST is allowed (and answered by the handler's own check).
  const bare = {
    preValidation: async (req: FastifyRequest) => {
      req.body ??= {};
    },
  };
  const { engine, service, pushPolicy } = deps.seams;
  api.post('/v1/host/sample/a2a/tasks/start', { schema: start, ...bare }, async (req, reply) => {
    if (req.body?.scenario !== 'paused-at-approval') {
      throw new HttpError(400, 'validation_error', "scenario must be 'paused-at-approval'");
    }
    const { run } = await engine.startRun(req.caller, { workflowId: 'approval', inputs: { prompt: 'conformance' } });
    // Return only once the run really is waiting for approval (the suite reads at once).
    await service.waitFor(req.caller, run.runId, (r) => r.status !== 'pending' && r.status !== 'running');
    return reply.status(201).send({ taskId: run.runId });
  });
  // Guard first (a denied URL is 400 before any task lookup), then the task, then the same
  // registration as tasks/pushNotificationConfig/set.
  const push = {
    ...seam('seamSetPushConfig', 'Register a push config through the egress guard'),
    body: SeamPushBody,
    response: {
      200: ref(A2ATaskState, 'The task state with its push config.'),
      400: failure('Not strings, or a URL the egress guard denies (`validation_error`, `a2a_push_egress_denied`).'),
      ...WRITE_ERRORS,
      404: failure('No such task.'),
    },
  };
  api.post('/v1/host/sample/a2a/tasks/push-config', { schema: push, ...bare }, async (req) => {
    const { taskId, url } = req.body ?? {};
    if (typeof url !== 'string' || typeof taskId !== 'string')
      throw new HttpError(400, 'validation_error', 'taskId and url must be strings');
    const verdict = checkPushUrl(url, pushPolicy);
    if (!verdict.ok)
      throw new HttpError(400, 'a2a_push_egress_denied', verdict.reason, { arm: verdict.arm, code: verdict.code });
    try {
      await deps.binding.handler.setPushConfig({ caller: req.caller, version: '0.3' }, { taskId, config: { url } });
    } catch (err) {
      const wire = toA2AError(err);
      if (wire.kind === 'task-not-found') throw new HttpError(404, 'not_found', `task ${taskId} not found`);
      if (wire.kind === 'invalid-params') throw new HttpError(400, 'validation_error', wire.message);
      throw err;
    }
    return readRecord(deps, req.caller.tenantId, taskId);
  });
}
