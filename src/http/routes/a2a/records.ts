// The host's own A2A reads: the persisted RFC 0100 A2ATaskState of a task and the caller's list of
// them, and the push deliveries of the caller's tenant with the retry of a dead-lettered one.
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { A2ATaskState as A2ATaskStateRecord } from '../../../a2a/model.js';
import type { DeliveryRecord } from '../../../store/model.js';
import {
  A2ATaskList,
  A2ATaskState,
  DeliveryList,
  DeliveryQuery,
  PushDelivery,
  TaskListQuery,
} from '../../a2a-schemas.js';
import { HttpError } from '../../errors.js';
import { CROSS_SITE, failure, ref, typed, UNAUTHORIZED } from '../../schemas.js';
import type { A2ARouteDeps } from './index.js';

export const TaskParams = Type.Object({ taskId: Type.String() });

/** The RFC 0100 record of a task of the caller's tenant, or 404. */
export async function readRecord(
  deps: Pick<A2ARouteDeps, 'taskStates'>,
  tenantId: string,
  taskId: string,
): Promise<A2ATaskStateRecord> {
  const state = await deps.taskStates.get(tenantId, taskId);
  if (!state) throw new HttpError(404, 'not_found', `task ${taskId} not found`);
  return state;
}

export function recordRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  typed(app).get(
    '/v1/a2a/tasks/:taskId',
    {
      schema: {
        operationId: 'getA2ATaskState',
        tags: ['a2a'],
        summary: 'Durable A2A task state (RFC 0100)',
        description: 'The persisted A2ATaskState projection of a run (taskId equals runId).',
        params: TaskParams,
        response: {
          200: ref(A2ATaskState, 'The task state.'),
          401: UNAUTHORIZED,
          404: failure('No such task for this tenant (`not_found`).'),
        },
      },
    },
    (req) => readRecord(deps, req.caller.tenantId, req.params.taskId),
  );
  taskListRoute(app, deps);
  deliveryRoutes(app, deps);
}

/** The caller's tasks as A2ATaskState records, most recently changed first. */
function taskListRoute(app: FastifyInstance, deps: A2ARouteDeps): void {
  const schema = {
    operationId: 'listA2ATasks',
    tags: ['a2a'],
    summary: 'The caller’s tasks (A2ATaskState records), most recently changed first',
    querystring: TaskListQuery,
    response: {
      200: ref(A2ATaskList, 'One page of tasks.'),
      400: failure('Invalid query or cursor (`validation_error`).'),
      401: UNAUTHORIZED,
    },
  };
  typed(app).get('/v1/a2a/tasks', { schema }, async (req) => {
    try {
      return await deps.taskStates.list(req.caller.tenantId, req.query);
    } catch (err) {
      if (err instanceof RangeError) throw new HttpError(400, 'validation_error', err.message);
      throw err;
    }
  });
}

/** Operators see push deliveries of their tenant and can retry a dead-lettered one. */
function deliveryRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  const api = typed(app);
  const list = {
    operationId: 'listPushDeliveries',
    tags: ['a2a'],
    summary: 'Push deliveries of the caller’s tenant (operators)',
    description:
      'The push outbox, newest first: pending (with the next attempt time), delivered, dead-lettered, cancelled.',
    querystring: DeliveryQuery,
    response: { 200: ref(DeliveryList, 'The deliveries.'), 400: failure('Invalid query.'), 401: UNAUTHORIZED },
  };
  api.get('/v1/a2a/deliveries', { schema: list }, async (req) => {
    const deliveries = await deps.deliveries.list(req.caller.tenantId, req.query);
    return { deliveries: deliveries.map(deliveryView) };
  });
  const retry = {
    operationId: 'retryPushDelivery',
    tags: ['a2a'],
    summary: 'Retry a dead-lettered push delivery',
    params: Type.Object({ id: Type.String() }),
    response: {
      200: ref(PushDelivery, 'The delivery, pending again with its attempts reset.'),
      401: UNAUTHORIZED,
      403: CROSS_SITE,
      404: failure('No such delivery for this tenant (`not_found`).'),
      409: failure('Only dead-lettered deliveries can be retried (`delivery_not_dead`).'),
    },
  };
  api.post('/v1/a2a/deliveries/:id/retry', { schema: retry }, async (req) => {
    const outcome = await deps.deliveries.retry(req.caller.tenantId, req.params.id, req.caller);
    if ('retried' in outcome) return deliveryView(outcome.retried);
    if ('missing' in outcome) throw new HttpError(404, 'not_found', `delivery ${req.params.id} not found`);
    throw new HttpError(
      409,
      'delivery_not_dead',
      `delivery ${req.params.id} is ${outcome.notDead}; only dead-lettered deliveries can be retried`,
    );
  });
}

function deliveryView(r: DeliveryRecord): Static<typeof PushDelivery> {
  return {
    deliveryId: r.deliveryId,
    taskId: r.taskId,
    configId: r.configId,
    state: r.state,
    final: r.final,
    attempts: r.attempts,
    nextAttemptAt: r.state === 'pending' ? new Date(r.nextAttemptAt).toISOString() : null,
    lastStatus: r.lastStatus ?? null,
    lastError: r.lastError ?? null,
    createdAt: r.createdAt,
    deliveredAt: r.deliveredAt ?? null,
  };
}
