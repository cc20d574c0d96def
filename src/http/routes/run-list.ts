// The caller's runs as a list (GET /v1/runs) and their changes as a live stream
// (GET /v1/runs/changes): what the console's inbox and run list show, open to any API client.
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { ChangeBus } from '../../bus/bus.js';
import { isWaiting, RUN_STATUSES, type RunStatus } from '../../store/model.js';
import type { InterruptRecord, RunRecord } from '../../store/model.js';
import type { Store } from '../../store/store.js';
import { HttpError } from '../errors.js';
import { openOrRefuse, type SseHub } from '../sse.js';
import { runSnapshot } from '../views.js';

const STATUS_LIST = `^(${RUN_STATUSES.join('|')})(,(${RUN_STATUSES.join('|')}))*$`;

export const RunListQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ pattern: STATUS_LIST, maxLength: 256 })),
    workflowId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    q: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  },
  { additionalProperties: false },
);

export function runListRoutes(app: FastifyInstance, store: Store, bus: ChangeBus, sse: SseHub): void {
  app.get<{ Querystring: Static<typeof RunListQuery> }>(
    '/v1/runs',
    { schema: { querystring: RunListQuery } },
    async (req) => {
      const { status, workflowId, q, limit, cursor } = req.query;
      try {
        const page = await store.runs.list(req.caller.tenantId, {
          ...(status ? { statuses: [...new Set(status.split(','))] as RunStatus[] } : {}),
          ...(workflowId !== undefined ? { workflowId } : {}),
          ...(q !== undefined ? { text: q } : {}),
          ...(cursor !== undefined ? { cursor } : {}),
          limit: limit ?? 50,
        });
        const waiting = page.runs.filter((r) => isWaiting(r.status));
        const open = await store.interrupts.openOf(waiting.map((r) => r.runId));
        const runs = page.runs.map((run) => runSummary(run, open.get(run.runId)));
        return { runs, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
      } catch (err) {
        if (err instanceof RangeError) throw new HttpError(400, 'validation_error', err.message);
        throw err;
      }
    },
  );

  // Not durable (the bus is not): a client that reconnects lists again. Notices are a few dozen
  // bytes, written as they come; a client that stops reading is dropped at the buffer cap.
  app.get('/v1/runs/changes', async (req, reply) => {
    const tenantId = req.caller.tenantId;
    // Subscribed in the same turn the headers go out: no notice can fall between the two.
    const stream = openOrRefuse(sse, reply);
    const unsubscribe = bus.subscribeAll((n) => {
      // After a gap in cross-instance notices the bus says "look again" for every run.
      if (n.runId === '*') stream.send({}, { event: 'resync' });
      else if (n.tenantId === tenantId)
        stream.send({ runId: n.runId, status: n.status, lastSeq: n.lastSeq }, { event: 'run' });
    });
    await new Promise<void>((resolve) => {
      if (stream.closed) resolve();
      else stream.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    unsubscribe();
  });
}

/** A run as the list shows it: the snapshot's identity, times and what it waits on. */
function runSummary(run: RunRecord, interrupt: InterruptRecord | undefined): Record<string, unknown> {
  const snapshot = runSnapshot(run, interrupt) as {
    interrupt?: { kind: string; nodeId: string; expiresAt?: string; payload: Record<string, unknown> };
    waitingOn?: unknown;
  };
  const open = snapshot.interrupt;
  const payload = open?.payload ?? {};
  const expiresAt = open?.expiresAt ?? payload.expiresAt;
  return {
    runId: run.runId,
    workflowId: run.workflowId,
    status: run.status,
    tags: run.tags,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    ...(run.completedAt ? { completedAt: run.completedAt } : {}),
    ...(open
      ? {
          interrupt: {
            kind: open.kind,
            nodeId: open.nodeId,
            ...(typeof payload.title === 'string' ? { title: payload.title } : {}),
            ...(Array.isArray(payload.approversList) ? { approversList: payload.approversList } : {}),
            ...(typeof expiresAt === 'string' ? { expiresAt } : {}),
          },
        }
      : {}),
    ...(snapshot.waitingOn !== undefined ? { waitingOn: snapshot.waitingOn } : {}),
    ...(run.error ? { error: run.error } : {}),
  };
}
