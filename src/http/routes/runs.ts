// The OpenWOP run API (docs/protocol/openwop.md#run-api): create, read, cancel, resolve, poll events.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ChangeBus } from '../../bus/bus.js';
import type { Caller, Engine } from '../../engine/engine.js';
import { isTerminal, type RunEvent as RunEventRecord, type RunRecord } from '../../store/model.js';
import { HttpError } from '../errors.js';
import type { RunReads } from '../../engine/run-reads.js';
import type { RunQuota } from '../quotas.js';
import { openOrRefuse, parseLastEventId, type SseHub } from '../sse.js';
import {
  BAD_MEDIA_TYPE,
  CancelBody,
  CancelRunResponse,
  CreateRunBody,
  CreateRunResponse,
  CROSS_SITE,
  DecisionHeaders,
  failure,
  LegacyApprovalBody,
  PollEventsResponse,
  PollQuery,
  raw,
  ref,
  ResolveBody,
  ResolveInterruptResponse,
  RunSnapshot,
  TOO_LARGE,
  TOO_MANY_STREAMS,
  tryLater,
  typed,
  UNAUTHORIZED,
  withHeaders,
} from '../schemas.js';
import { eventDoc, runSnapshot } from '../views.js';

const RunId = Type.Object({
  id: Type.String({
    minLength: 1,
    maxLength: 128,
    description: 'The run id (`run_…`). Another tenant’s run answers exactly like an unknown one (404).',
  }),
});
const NodeParams = Type.Object({
  id: Type.String({ minLength: 1, description: 'The run id.' }),
  nodeId: Type.String({ minLength: 1, description: 'The node whose open interrupt is answered (`currentNodeId`).' }),
});

const NOT_FOUND = failure('No such run for this tenant (`not_found`).');
const invalid = (what: string) => failure(`Invalid request: ${what} (\`validation_error\`).`);

/** What answering an interrupt can answer (both the route and its legacy alias). */
const RESOLVE_RESPONSES = {
  200: ref(ResolveInterruptResponse, 'The answer was applied.'),
  400: invalid('path, body, or a resume value that does not fit the gate (e.g. an unknown action, missing answers)'),
  401: UNAUTHORIZED,
  403: failure('The caller is not an approver of this gate, or a cross-site write (`forbidden`).'),
  404: failure('No such run, or no open interrupt at this node (`not_found`, `interrupt_not_found`).'),
  409: failure(
    'The interrupt was already resolved (`interrupt_already_resolved`; one of concurrent answers wins), ' +
      'or its branch was withdrawn when a join was satisfied without it (`interrupt_withdrawn`), ' +
      'or the artifact or questions changed since the `expectedArtifactHash` / `If-Match` sent (`artifact_changed`; nothing changed), ' +
      'or the run kept changing (`conflict`).',
  ),
  413: TOO_LARGE,
  410: failure('The interrupt of a child run was invalidated when its parent ended (`interrupt_gone`).'),
  415: BAD_MEDIA_TYPE,
  422: failure(
    'The interrupt was cancelled with its run (`interrupt_cancelled`), or an external event does not match ' +
      'the correlation it awaits (`correlation_mismatch`).',
  ),
};

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._~:-]{1,255}$/;

export interface RunRouteDeps {
  engine: Engine;
  bus: ChangeBus;
  sse: SseHub;
  /** HANDOFF_TENANT_MAX_ACTIVE_RUNS, checked before a run starts. */
  quota: RunQuota;
  /** A run's open interrupts and events. */
  reads: RunReads;
}

export function runRoutes(app: FastifyInstance, { engine, bus, sse, quota, reads }: RunRouteDeps): void {
  // Long-polls parked waiting for events; a graceful shutdown answers them at once.
  const parked = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const wake of parked) wake();
  });

  const api = typed(app);
  api.post(
    '/v1/runs',
    {
      schema: {
        operationId: 'createRun',
        tags: ['runs'],
        summary: 'Start a run',
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({
              description:
                'Replays the first response for the same key and body (header `openwop-Idempotent-Replay: true`); ' +
                'the same key with a different body is 409 `idempotency_key_mismatch`. 1–255 URL-safe characters.',
            }),
          ),
        }),
        body: CreateRunBody,
        response: {
          201: withHeaders(
            ref(CreateRunResponse, 'The run was created (or, with a known Idempotency-Key, the original run).'),
            { 'openwop-Idempotent-Replay': { description: '`true` when the response replays an earlier request.' } },
          ),
          400: invalid('body, unknown workflow, inputs that fail its inputSchema, or a malformed Idempotency-Key'),
          401: UNAUTHORIZED,
          403: failure('`tenantId` is not the authenticated tenant, or a cross-site write (`forbidden`).'),
          409: failure(
            'The Idempotency-Key was used with a different body (`idempotency_key_mismatch`), ' +
              'or a concurrent change won (`conflict`).',
          ),
          413: TOO_LARGE,
          415: BAD_MEDIA_TYPE,
          429: tryLater(
            'The tenant is over a quota: HANDOFF_TENANT_RATE (`rate_limited`) or ' +
              'HANDOFF_TENANT_MAX_ACTIVE_RUNS (`too_many_active_runs`).',
          ),
        },
      },
    },
    async (req, reply) => {
      const body = req.body;
      if (body.tenantId !== undefined && body.tenantId !== req.caller.tenantId) {
        throw new HttpError(403, 'forbidden', 'tenantId does not match the authenticated tenant');
      }
      const key = req.headers['idempotency-key'];
      if (key !== undefined && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
        throw new HttpError(400, 'validation_error', 'Idempotency-Key must be 1-255 URL-safe characters');
      }
      await quota.admit(req, reply);
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

  api.get(
    '/v1/runs/:id',
    {
      schema: {
        operationId: 'getRun',
        tags: ['runs'],
        summary: 'Run snapshot',
        description:
          'The run, with its open interrupt while it waits for approval or input, and its unfinished child runs.',
        params: RunId,
        response: {
          200: ref(RunSnapshot, 'The run snapshot.'),
          400: invalid('run id'),
          401: UNAUTHORIZED,
          404: NOT_FOUND,
        },
      },
    },
    async (req) => {
      const run = await engine.getRun(req.caller, req.params.id);
      return runSnapshot(run, await reads.openInterrupts(run), await engine.childrenOf(run));
    },
  );

  api.post(
    '/v1/runs/:id/cancel',
    {
      schema: {
        operationId: 'cancelRun',
        tags: ['runs'],
        summary: 'Cancel a run',
        description:
          'Cancels a run in any non-terminal state; a run a worker is executing passes through `cancelling`. ' +
          'The body is optional: a bare POST cancels without a reason.',
        params: RunId,
        body: CancelBody,
        response: {
          200: ref(CancelRunResponse, 'The cancel was accepted.'),
          400: invalid('path or body'),
          401: UNAUTHORIZED,
          403: CROSS_SITE,
          404: NOT_FOUND,
          409: failure('The run is already terminal (`run_terminal`), or kept changing (`conflict`).'),
          413: TOO_LARGE,
          415: BAD_MEDIA_TYPE,
        },
      },
      // The body is optional: a bare POST cancels without a reason.
      preValidation: async (req) => {
        req.body ??= {};
      },
    },
    async (req) => {
      const run = await engine.cancelRun(req.caller, req.params.id, req.body?.reason, 'rest');
      return { runId: run.runId, status: run.status };
    },
  );

  const resolve = async (
    caller: Caller,
    runId: string,
    nodeId: string,
    value: unknown,
    expectedArtifactHash: string | undefined,
  ) => {
    const binding = expectedArtifactHash === undefined ? {} : { expectedArtifactHash };
    const { run, interrupt, outcome } = await engine.resolveInterrupt(caller, runId, nodeId, value, {
      surface: 'rest',
      ...binding,
    });
    return {
      runId: run.runId,
      status: run.status,
      interrupt: {
        kind: interrupt.kind,
        nodeId: interrupt.nodeId,
        interruptId: interrupt.interruptId,
        outcome,
        votes: interrupt.votes.length,
        // The gate's config, checked as an integer when the workflow was loaded.
        requiredApprovals: (interrupt.data.requiredApprovals as number | undefined) ?? undefined,
      },
    };
  };

  api.post(
    '/v1/runs/:id/interrupts/:nodeId',
    {
      schema: {
        operationId: 'resolveInterrupt',
        tags: ['interrupts'],
        summary: 'Answer a run’s open interrupt',
        description:
          'Approval: `{resumeValue: {action: accept|reject|refine|edit-accept|ask, feedback?, refineFeedback?, ' +
          'editedArtifactData?}}`. Clarification: `{resumeValue: {answers}}`. With `expectedArtifactHash` (or ' +
          '`If-Match`), the interrupt’s `artifactHash` as read: a changed artifact is 409 `artifact_changed`.',
        params: NodeParams,
        headers: DecisionHeaders,
        body: ResolveBody,
        response: RESOLVE_RESPONSES,
      },
    },
    async (req) =>
      resolve(
        req.caller,
        req.params.id,
        req.params.nodeId,
        req.body.resumeValue,
        req.body.expectedArtifactHash ?? req.headers['if-match'],
      ),
  );

  // Legacy alias used by OpenWOP examples: the body is the resume value itself ({action, …}).
  api.post(
    '/v1/runs/:id/approvals/:nodeId',
    {
      schema: {
        operationId: 'resolveApprovalLegacy',
        tags: ['interrupts'],
        summary: 'Answer an approval (legacy alias)',
        description: 'The alias of `POST /v1/runs/{id}/interrupts/{nodeId}` whose body is the resume value itself.',
        deprecated: true,
        params: NodeParams,
        headers: DecisionHeaders,
        body: LegacyApprovalBody,
        response: RESOLVE_RESPONSES,
      },
    },
    async (req) => resolve(req.caller, req.params.id, req.params.nodeId, req.body, req.headers['if-match']),
  );

  // The run's event log as SSE: the backlog after Last-Event-ID, then live, closed at the end.
  api.get(
    '/v1/runs/:id/events',
    {
      schema: {
        operationId: 'streamRunEvents',
        tags: ['runs'],
        summary: 'Follow the run’s event log (SSE)',
        description:
          'Server-Sent Events: `id:` is the event sequence, `event:` its type, `data:` the event document (RunEvent). ' +
          'Sends every event after `Last-Event-ID` (all when absent), then live events, and closes after the run’s ' +
          'final event. `:keepalive` comments at least every 15 s. A client that stops reading is disconnected and ' +
          'may resume by id.',
        params: RunId,
        headers: Type.Object({
          'last-event-id': Type.Optional(Type.String({ description: 'Resume after this event sequence.' })),
        }),
        response: {
          200: withHeaders(
            raw(
              'The event stream; to a client that accepts `application/json` and refuses `text/event-stream` ' +
                '(`q=0`, or no range covering it), weighs it lower, or names it only through a wildcard, the log ' +
                'so far (after `Last-Event-ID`, at most 1000 events) in the body of `GET …/events/poll`, at once; ' +
                '`runStatus` is read after the events.',
              'text/event-stream',
              'application/json',
            ),
            { Vary: { description: '`Accept`: the answer’s form follows it.' } },
          ),
          400: invalid('path or Last-Event-ID'),
          401: UNAUTHORIZED,
          404: NOT_FOUND,
          503: TOO_MANY_STREAMS,
        },
      },
    },
    async (req, reply) => {
      // The answer's form follows Accept: caches must keep the two apart.
      addVary(reply, 'Accept');
      const run = await engine.getRun(req.caller, req.params.id);
      let after: number | undefined;
      try {
        after = parseLastEventId(req.headers['last-event-id']);
      } catch (err) {
        throw new HttpError(400, 'validation_error', (err as Error).message);
      }
      if (wantsJsonLog(req.headers.accept)) {
        // A JSON reader (OpenWOP's suite reads the log this way) gets what is committed now. The
        // run is read again after the events, as the poll route does: its status is never older
        // than the events sent, and isComplete holds only once the last event is among them.
        const events = await reads.events(run.runId, after ?? -1, 1000);
        const body = logPage(await engine.getRun(req.caller, run.runId), events, after ?? -1);
        return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
      }
      const stream = openOrRefuse(sse, reply);
      for await (const e of reads.follow(run.runId, { after: after ?? -1, signal: stream.signal })) {
        if (!(await stream.ready())) break;
        stream.send(eventDoc(e), { id: e.sequence, event: e.type });
      }
      stream.close();
    },
  );

  api.get(
    '/v1/runs/:id/events/poll',
    {
      schema: {
        operationId: 'pollRunEvents',
        tags: ['runs'],
        summary: 'Long-poll the run’s event log',
        params: RunId,
        querystring: PollQuery,
        response: {
          200: ref(PollEventsResponse, 'The events after `lastSequence` (possibly none after the timeout).'),
          400: invalid('path or query'),
          401: UNAUTHORIZED,
          404: NOT_FOUND,
        },
      },
    },
    async (req) => {
      const run = await engine.getRun(req.caller, req.params.id);
      const after = req.query.lastSequence ?? req.query.since ?? -1;
      const limit = req.query.limit ?? 500;
      const timeoutMs = (req.query.timeout ?? 30) * 1000;
      const events = await pollEvents(reads, bus, parked, run.runId, after, limit, timeoutMs, isTerminal(run.status));
      // Read after the events: the status is never older than the events sent.
      return logPage(await engine.getRun(req.caller, run.runId), events, after);
    },
  );
}

/**
 * Whether the log is answered as JSON rather than the event stream, by the Accept header's media
 * ranges and their weights (RFC 9110 §12.5.1): JSON when the client accepts it (q > 0) and either
 * refuses the stream (`text/event-stream;q=0`, or ranges that do not cover it), weighs JSON higher,
 * or weighs both alike while naming JSON more specifically (`application/json, *\/*`). Otherwise,
 * and with no Accept at all, the stream (the route's own form). Not `negotiator`: on a tie of weight
 * and specificity it follows the header's order, where this route keeps its own form.
 */
function wantsJsonLog(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const ranges = mediaRanges(accept);
  const json = weightOf(ranges, 'application', 'json');
  const stream = weightOf(ranges, 'text', 'event-stream');
  if (json.q === 0) return false;
  if (stream.q === 0 || json.q > stream.q) return true;
  return json.q === stream.q && json.specificity > stream.specificity;
}

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/** The media ranges of an Accept header, lowercased; a range with a malformed weight is left out. */
function mediaRanges(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';');
    const [type, subtype, extra] = range.trim().toLowerCase().split('/');
    if (!type || !subtype || extra !== undefined) continue;
    let q = 1;
    for (const param of params) {
      const [name, value] = param.split('=').map((x) => x.trim());
      if (name?.toLowerCase() !== 'q') continue;
      q = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(value ?? '') ? Number(value) : Number.NaN;
    }
    if (!Number.isNaN(q)) ranges.push({ type, subtype, q });
  }
  return ranges;
}

/** The weight the most specific range covering type/subtype gives it (0 if none does); 2 = exact, 1 = type/*, 0 = *\/*. */
function weightOf(ranges: MediaRange[], type: string, subtype: string): { q: number; specificity: number } {
  let best = { q: 0, specificity: -1 };
  for (const r of ranges) {
    const specificity =
      r.type === type && r.subtype === subtype
        ? 2
        : r.type === type && r.subtype === '*'
          ? 1
          : r.type === '*' && r.subtype === '*'
            ? 0
            : -1;
    if (specificity > best.specificity) best = { q: r.q, specificity };
  }
  return best;
}

/** Adds `field` to the reply's Vary header, keeping what is there (CORS adds `Origin`). */
function addVary(reply: FastifyReply, field: string): void {
  const prior = reply.getHeader('vary');
  const fields =
    prior === undefined
      ? []
      : String(prior)
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean);
  if (!fields.some((f) => f === '*' || f.toLowerCase() === field.toLowerCase())) fields.push(field);
  void reply.header('Vary', fields.join(', '));
}

/**
 * A page of the run's log (the body of `…/events/poll`, and of `…/events` to a JSON reader):
 * `latest` is the run read after the events, so `isComplete` holds only once its last event is
 * among them.
 */
function logPage(latest: RunRecord, events: RunEventRecord[], after: number) {
  const terminal = isTerminal(latest.status);
  const last = events.at(-1)?.sequence ?? after;
  return {
    runId: latest.runId,
    events: events.map(eventDoc),
    lastEventSeq: last,
    runStatus: latest.status,
    isTerminal: terminal,
    isComplete: terminal && last >= latest.nextSeq - 1,
  };
}

/** Long-poll: subscribe first, then read, so an event committed in between is never missed. */
async function pollEvents(
  reads: RunReads,
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
    const first = await reads.events(runId, after, limit);
    if (first.length > 0 || terminal || timeoutMs === 0) return first;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([woken, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    return reads.events(runId, after, limit);
  } finally {
    parked.delete(wake);
    unsubscribe();
  }
}
