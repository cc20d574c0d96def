// The OpenWOP run API (docs/protocol/openwop.md#run-api): create, read, cancel, resolve, poll events.
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { ChangeBus } from '../../bus/bus.js';
import type { Config } from '../../config.js';
import type { Caller, Engine } from '../../engine/engine.js';
import { isTerminal, isWaiting } from '../../store/model.js';
import { HttpError } from '../errors.js';
import { followRun } from '../../engine/follow.js';
import { ACTIVE_RUNS_RETRY_AFTER_S, activeRunsRefusal } from '../quotas.js';
import { openOrRefuse, parseLastEventId, type SseHub } from '../sse.js';
import { eventDoc, runSnapshot } from '../views.js';

const RunId = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

export const CreateRunBody = Type.Object(
  {
    workflowId: Type.String({ minLength: 1, maxLength: 128 }),
    inputs: Type.Optional(Type.Object({}, { additionalProperties: true })),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 100 })),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
    tenantId: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export const CancelBody = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 1024 })) },
  { additionalProperties: false },
);
export const ResolveBody = Type.Object(
  { resumeValue: Type.Object({}, { additionalProperties: true }) },
  { additionalProperties: false },
);
export const PollQuery = Type.Object(
  {
    lastSequence: Type.Optional(Type.Integer({ minimum: -1 })),
    since: Type.Optional(Type.Integer({ minimum: -1 })),
    timeout: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
);

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._~:-]{1,255}$/;

export interface RunRouteDeps {
  engine: Engine;
  bus: ChangeBus;
  sse: SseHub;
  config: Config;
}

export function runRoutes(app: FastifyInstance, { engine, bus, sse, config }: RunRouteDeps): void {
  // Long-polls parked waiting for events; a graceful shutdown answers them at once.
  const parked = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const wake of parked) wake();
  });

  app.post<{ Body: Static<typeof CreateRunBody> }>(
    '/v1/runs',
    { schema: { body: CreateRunBody } },
    async (req, reply) => {
      const body = req.body;
      if (body.tenantId !== undefined && body.tenantId !== req.caller.tenantId) {
        throw new HttpError(403, 'forbidden', 'tenantId does not match the authenticated tenant');
      }
      const key = req.headers['idempotency-key'];
      if (key !== undefined && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
        throw new HttpError(400, 'validation_error', 'Idempotency-Key must be 1-255 URL-safe characters');
      }
      const refusal = await activeRunsRefusal(engine.store, config, req.caller.tenantId);
      if (refusal) {
        void reply.header('Retry-After', String(ACTIVE_RUNS_RETRY_AFTER_S));
        throw new HttpError(429, 'too_many_active_runs', refusal);
      }
      const { run, replayed } = await engine.startRun(req.caller, {
        workflowId: body.workflowId,
        inputs: body.inputs ?? {},
        tags: body.tags ?? [],
        metadata: body.metadata ?? {},
        ...(key ? { idempotency: { key, body } } : {}),
      });
      if (replayed) void reply.header('openwop-Idempotent-Replay', 'true');
      return reply.status(201).send({
        runId: run.runId,
        status: run.status,
        statusUrl: `/v1/runs/${run.runId}`,
        eventsUrl: `/v1/runs/${run.runId}/events`,
      });
    },
  );

  app.get<{ Params: Static<typeof RunId> }>('/v1/runs/:id', { schema: { params: RunId } }, async (req) => {
    const run = await engine.getRun(req.caller, req.params.id);
    const waiting = isWaiting(run.status);
    const open = waiting ? await engine.store.interrupts.getOpen(run.runId) : undefined;
    return runSnapshot(run, open);
  });

  app.post<{ Params: Static<typeof RunId>; Body: Static<typeof CancelBody> }>(
    '/v1/runs/:id/cancel',
    {
      schema: { params: RunId, body: CancelBody },
      // The body is optional: a bare POST cancels without a reason.
      preValidation: async (req) => {
        req.body ??= {};
      },
    },
    async (req) => {
      const run = await engine.cancelRun(req.caller, req.params.id, req.body?.reason);
      return { runId: run.runId, status: run.status };
    },
  );

  const resolve = async (caller: Caller, runId: string, nodeId: string, value: unknown) => {
    const { run, interrupt, outcome } = await engine.resolveInterrupt(caller, runId, nodeId, value);
    return {
      runId: run.runId,
      status: run.status,
      interrupt: {
        kind: interrupt.kind,
        nodeId: interrupt.nodeId,
        interruptId: interrupt.interruptId,
        outcome,
        votes: interrupt.votes.length,
        requiredApprovals: interrupt.data.requiredApprovals ?? undefined,
      },
    };
  };

  const NodeParams = Type.Object({ id: Type.String({ minLength: 1 }), nodeId: Type.String({ minLength: 1 }) });
  app.post<{ Params: Static<typeof NodeParams>; Body: Static<typeof ResolveBody> }>(
    '/v1/runs/:id/interrupts/:nodeId',
    { schema: { params: NodeParams, body: ResolveBody } },
    async (req) => resolve(req.caller, req.params.id, req.params.nodeId, req.body.resumeValue),
  );

  // Legacy alias used by OpenWOP examples: the body is the resume value itself ({action, …}).
  const LegacyBody = Type.Object({ action: Type.String() }, { additionalProperties: true });
  app.post<{ Params: Static<typeof NodeParams>; Body: Static<typeof LegacyBody> }>(
    '/v1/runs/:id/approvals/:nodeId',
    { schema: { params: NodeParams, body: LegacyBody } },
    async (req) => resolve(req.caller, req.params.id, req.params.nodeId, req.body),
  );

  // The run's event log as SSE: the backlog after Last-Event-ID, then live, closed at the end.
  app.get<{ Params: Static<typeof RunId> }>(
    '/v1/runs/:id/events',
    { schema: { params: RunId } },
    async (req, reply) => {
      const run = await engine.getRun(req.caller, req.params.id);
      let after: number | undefined;
      try {
        after = parseLastEventId(req.headers['last-event-id']);
      } catch (err) {
        throw new HttpError(400, 'validation_error', (err as Error).message);
      }
      const stream = openOrRefuse(sse, reply);
      for await (const e of followRun(engine.store, bus, run.runId, { after: after ?? -1, signal: stream.signal })) {
        if (!(await stream.ready())) break;
        stream.send(eventDoc(e), { id: e.sequence, event: e.type });
      }
      stream.close();
    },
  );

  app.get<{ Params: Static<typeof RunId>; Querystring: Static<typeof PollQuery> }>(
    '/v1/runs/:id/events/poll',
    { schema: { params: RunId, querystring: PollQuery } },
    async (req) => {
      const run = await engine.getRun(req.caller, req.params.id);
      const after = req.query.lastSequence ?? req.query.since ?? -1;
      const limit = req.query.limit ?? 500;
      const timeoutMs = (req.query.timeout ?? 30) * 1000;
      const events = await pollEvents(engine, bus, parked, run.runId, after, limit, timeoutMs, isTerminal(run.status));
      const latest = await engine.getRun(req.caller, run.runId);
      const terminal = isTerminal(latest.status);
      const last = events.at(-1)?.sequence ?? after;
      return {
        runId: run.runId,
        events: events.map(eventDoc),
        lastEventSeq: last,
        runStatus: latest.status,
        isTerminal: terminal,
        isComplete: terminal && last >= latest.nextSeq - 1,
      };
    },
  );
}

/** Long-poll: subscribe first, then read, so an event committed in between is never missed. */
async function pollEvents(
  engine: Engine,
  bus: ChangeBus,
  parked: Set<() => void>,
  runId: string,
  after: number,
  limit: number,
  timeoutMs: number,
  terminal: boolean,
) {
  let wake: () => void = () => {};
  const woken = new Promise<void>((r) => (wake = r));
  const unsubscribe = bus.subscribeRun(runId, () => wake());
  parked.add(wake);
  try {
    const first = await engine.store.events.list(runId, after, limit);
    if (first.length > 0 || terminal || timeoutMs === 0) return first;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([woken, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    return engine.store.events.list(runId, after, limit);
  } finally {
    parked.delete(wake);
    unsubscribe();
  }
}
