// The caller's runs as a list (GET /v1/runs) and their changes as a live stream
// (GET /v1/runs/changes): what the console's inbox and run list show, open to any API client.
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { ChangeBus } from '../../bus/bus.js';
import { BytePage } from '../../byte-page.js';
import { RUN_STATUSES, type RunStatus } from '../../store/model.js';
import type { RunHead } from '../../store/model.js';
import type { OpenInterruptHead } from '../../store/repos/interrupts.js';
import { runListCursor } from '../../store/repos/runs.js';
import type { RunReads } from '../../engine/run-reads.js';
import { HttpError } from '../errors.js';
import {
  failure,
  type InterruptSummary,
  RunList,
  type RunSummary,
  raw,
  ref,
  TOO_MANY_STREAMS,
  typed,
  UNAUTHORIZED,
} from '../schemas.js';
import { openOrRefuse, type SseHub } from '../sse.js';
import { activityField, waitingOn } from '../views.js';

const STATUS_LIST = `^(${RUN_STATUSES.join('|')})(,(${RUN_STATUSES.join('|')}))*$`;

export const RunListQuery = Type.Object(
  {
    status: Type.Optional(
      Type.String({
        pattern: STATUS_LIST,
        maxLength: 256,
        description: 'Comma-separated run statuses; a run in any of them is listed (all statuses when absent).',
      }),
    ),
    workflowId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Only runs of this workflow.' }),
    ),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description:
          'Text, case-insensitive (ASCII): a run whose id starts with it, or whose workflow id or one of whose tags ' +
          'contains it. Matched over the tenant’s runs newest first.',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description:
          'Most runs in one page (default 50); a page ends early, with its `nextCursor`, before its runs would ' +
          'pass HANDOFF_LIST_MAX_BYTES of JSON.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 512, description: 'The `nextCursor` of the previous page.' }),
    ),
  },
  { additionalProperties: false },
);

export function runListRoutes(
  app: FastifyInstance,
  reads: RunReads,
  bus: ChangeBus,
  sse: SseHub,
  listMaxBytes: number,
): void {
  const api = typed(app);
  api.get(
    '/v1/runs',
    {
      schema: {
        operationId: 'listRuns',
        tags: ['runs'],
        summary: 'The caller’s runs, newest first',
        description:
          'The runs of the caller’s tenant, newest first (by creation, then run id), one page at a time by keyset ' +
          '(`nextCursor`). The console’s inbox is `?status=waiting-approval,waiting-input`.',
        querystring: RunListQuery,
        response: {
          200: ref(RunList, 'One page of runs.'),
          400: failure('Invalid query or cursor (`validation_error`).'),
          401: UNAUTHORIZED,
        },
      },
    },
    async (req) => {
      const { status, workflowId, q, limit, cursor } = req.query;
      try {
        const page = await reads.page(req.caller.tenantId, {
          ...(status ? { statuses: [...new Set(status.split(','))] as RunStatus[] } : {}),
          ...(workflowId !== undefined ? { workflowId } : {}),
          ...(q !== undefined ? { text: q } : {}),
          ...(cursor !== undefined ? { cursor } : {}),
          limit: limit ?? 50,
        });
        const { open } = page;
        // A page ends early, before its summaries would pass listMaxBytes of JSON; the first always fits.
        const shown = new BytePage(listMaxBytes);
        const runs: Array<Static<typeof RunSummary>> = [];
        for (const run of page.runs) {
          const summary = runSummary(run, open.get(run.runId) ?? []);
          if (!shown.add(JSON.stringify(summary))) break;
          runs.push(summary);
        }
        const last = runs.at(-1);
        const more = page.nextCursor !== undefined || runs.length < page.runs.length;
        return { runs, ...(more && last ? { nextCursor: runListCursor(last) } : {}) };
      } catch (err) {
        if (err instanceof RangeError) throw new HttpError(400, 'validation_error', err.message);
        throw err;
      }
    },
  );

  // Not durable (the bus is not): a client that reconnects lists again. Notices are a few dozen
  // bytes, written as they come; a client that stops reading is dropped at the buffer cap.
  api.get(
    '/v1/runs/changes',
    {
      schema: {
        operationId: 'streamRunChanges',
        tags: ['runs'],
        summary: 'Changes of the caller’s runs, live (SSE)',
        description:
          'Server-Sent Events, one `event: run` per committed change of a run of the caller’s tenant, on any ' +
          'instance: `data: {runId, status, lastSeq}`. `event: resync` (`data: {}`) means changes may have been ' +
          'missed: list again. Not durable and not resumable (no `id:`): after a reconnect, list again. ' +
          '`:keepalive` comments at least every 15 s; a client that stops reading is disconnected.',
        response: {
          200: raw('The change stream.', 'text/event-stream'),
          401: UNAUTHORIZED,
          503: TOO_MANY_STREAMS,
        },
      },
    },
    async (req, reply) => {
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
    },
  );
}

/** A run as the list shows it: the snapshot's identity, times and what it waits on. */
function runSummary(run: RunHead, opens: OpenInterruptHead[]): Static<typeof RunSummary> {
  const summaries = opens.map(interruptSummary);
  const on = waitingOn(run);
  return {
    runId: run.runId,
    workflowId: run.workflowId,
    status: run.status,
    tags: run.tags,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    ...(run.completedAt ? { completedAt: run.completedAt } : {}),
    ...(summaries[0] ? { interrupt: summaries[0], interrupts: summaries } : {}),
    ...(on !== undefined ? { waitingOn: on } : {}),
    ...activityField(
      run,
      opens.map((o) => ({ kind: o.kind, nodeId: o.nodeId, data: { title: o.title } })),
    ),
    ...(run.error ? { error: run.error } : {}),
    ...(run.parentRunId !== undefined ? { parentRunId: run.parentRunId } : {}),
  };
}

/** An open interrupt as a list shows it: where, what it asks, who may decide, by when. */
function interruptSummary(open: OpenInterruptHead): InterruptSummary {
  return {
    kind: open.kind,
    nodeId: open.nodeId,
    ...(typeof open.title === 'string' ? { title: open.title } : {}),
    ...(Array.isArray(open.approversList) ? { approversList: open.approversList } : {}),
    ...(Array.isArray(open.approverGroupRefs) ? { approverGroupRefs: open.approverGroupRefs } : {}),
    ...(Array.isArray(open.approverRoleRefs) ? { approverRoleRefs: open.approverRoleRefs } : {}),
    ...(typeof open.expiresAt === 'string' ? { expiresAt: open.expiresAt } : {}),
  };
}
