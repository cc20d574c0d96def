// Leg 5, tasks/resubscribe (gated on a2a.streaming) — a leg of RFC 0100's plan the published suite does not ship. Over
// A2A 1.0 the same with SendStreamingMessage and SubscribeToTask (src/conformance/dialect.ts). Start a
// task with JSON-RPC message/stream on a skill that runs for a while (skill `steps` with
// {steps: 4, stepMs: 300} when the card offers it, else the first skill), read until a
// status-update arrives, DROP the connection, then tasks/resubscribe {id} with no cursor: the
// current Task first, then at least one status-update, through a final:true terminal update. The
// task id must be the same in every event of both streams (and metadata.openwop.runId, where
// present), and — if the host has the OpenWOP event log GET /v1/runs/{id}/events/poll — the run
// holds exactly one run.started: re-attaching observed the run, it did not start it again.
import { type LegRun, type SuiteContext, TERMINAL_STATES, excerpt, isObject, pick } from './context.js';
import type { Dialect } from './dialect.js';
import { dialectOf, gate, requireRpcUrl } from './gates.js';
import { type RpcStream, type SseEvent, isEnd, isTimeout } from './http.js';
import type { Evidence } from './types.js';

/** Longest wait for one event. */
const EVENT_WAIT_MS = 20_000;
export const STEPS_INPUT = { steps: 4, stepMs: 300 };

interface Mismatch {
  stream: string;
  index: number;
  field: string;
  value: unknown;
}

export async function resubscribeLeg(ctx: SuiteContext, leg: LegRun): Promise<void> {
  gate(ctx, leg, 'streaming');
  const rpcUrl = requireRpcUrl(ctx, leg);
  const d = dialectOf(ctx);
  const names = d.methods;
  const deadline = Date.now() + ctx.streamTimeoutMs;
  const wait = () => Math.max(1, Math.min(EVENT_WAIT_MS, deadline - Date.now()));

  const { skillId, message } = probeMessage(ctx.discovery.card, d);
  leg.note(
    skillId === 'steps'
      ? `skill steps ${JSON.stringify(STEPS_INPUT)}`
      : `skill ${skillId ?? '(host default)'} (the card offers no 'steps')`,
  );
  const params = { message, ...(skillId ? { metadata: { skillId } } : {}) };

  const mismatches: Mismatch[] = [];
  let taskId: string | undefined;
  const track = (stream: string, index: number, result: Record<string, unknown>) => {
    const field = result.kind === 'task' ? 'result.id' : 'result.taskId';
    const id = result.kind === 'task' ? result.id : result.taskId;
    if (taskId === undefined && typeof id === 'string' && id !== '') taskId = id;
    else if (id !== taskId) mismatches.push({ stream, index, field, value: id });
    const runId = pick(result, 'metadata.openwop.runId');
    if (runId !== undefined && runId !== taskId)
      mismatches.push({ stream, index, field: 'result.metadata.openwop.runId', value: runId });
  };

  // 1. message/stream until the first status-update, then drop the connection.
  const first = await ctx.http.stream(rpcUrl, names.stream, params, {
    auth: true,
    headers: d.headers,
    deadlineMs: ctx.streamTimeoutMs,
  });
  let firstUpdate: Record<string, unknown> | undefined;
  try {
    await first.settled();
    requireSse(leg, first, names.stream);
    for (let i = 0; !firstUpdate; i++) {
      const r = await first.next(wait());
      if (isTimeout(r) || isEnd(r)) {
        leg.fail(`${names.stream} sends a status-update`, {
          request: first.request,
          status: first.status,
          expected: 'a status-update event',
          actual: isTimeout(r)
            ? `nothing within ${EVENT_WAIT_MS} ms`
            : `the stream ended${r.error ? ` (${r.error})` : ''}`,
          note: `events so far: ${summarize(first.events, d)}`,
        });
      }
      const result = resultOf(leg, first, r, i, names.stream, d);
      track(names.stream, i, result);
      if (i === 0 && taskId === undefined) {
        leg.fail(`${names.stream} events name the task`, {
          request: first.request,
          status: first.status,
          field: result.kind === 'task' ? 'result.id' : 'result.taskId',
          expected: 'a task id',
          actual: result.kind === 'task' ? result.id : result.taskId,
        });
      }
      if (result.kind === 'status-update') firstUpdate = result;
    }
  } finally {
    first.close();
  }
  leg.pass(
    `${names.stream} started task ${taskId} and sent a status-update (${String(pick(firstUpdate, 'status.state'))}); connection dropped`,
  );
  if (firstUpdate.final === true) {
    leg.skip(
      'inconclusive',
      `the first status-update of ${names.stream} was already final (state ${String(pick(firstUpdate, 'status.state'))}): the task ended its turn before the stream could be dropped, so there is nothing live to re-attach to`,
    );
  }
  const id = taskId as string;

  // 2. tasks/resubscribe {id}, no cursor: the current Task, then updates through final:true.
  const re = await ctx.http.stream(
    rpcUrl,
    names.subscribe,
    { id },
    { auth: true, headers: d.headers, deadlineMs: Math.max(1, deadline - Date.now()) },
  );
  let firstKind: unknown;
  let currentState: unknown;
  let updates = 0;
  let final: Record<string, unknown> | undefined;
  let stop = '';
  try {
    await re.settled();
    requireSse(leg, re, names.subscribe);
    for (let i = 0; !final; i++) {
      const r = await re.next(wait());
      if (isTimeout(r)) {
        stop = `no event within ${EVENT_WAIT_MS} ms`;
        break;
      }
      if (isEnd(r)) {
        stop = `the stream ended${r.error ? ` (${r.error})` : ''}`;
        break;
      }
      const result = resultOf(leg, re, r, i, names.subscribe, d);
      track(names.subscribe, i, result);
      if (i === 0) {
        firstKind = result.kind;
        currentState = pick(result, 'status.state');
      }
      if (result.kind === 'status-update') {
        if (i > 0) updates++;
        if (result.final === true) final = result;
      }
    }
  } finally {
    re.close();
  }

  const reEv = (extra: Evidence): Evidence => ({
    request: re.request,
    status: re.status,
    ...extra,
    note: extra.note ?? `events: ${summarize(re.events, d)}`,
  });
  if (firstKind === 'task' && TERMINAL_STATES.has(String(currentState)) && updates === 0) {
    leg.skip(
      'inconclusive',
      `the task was already ${String(currentState)} when ${names.subscribe} arrived: the run was too short to witness re-attachment`,
    );
  }
  leg.expect(
    firstKind === 'task',
    `${names.subscribe} (no cursor) first sends the current Task`,
    reEv({ field: 'result.kind', expected: 'task', actual: firstKind }),
  );
  leg.expect(mismatches.length === 0, 'the task id is unchanged in every event of both streams', () => {
    const m = mismatches[0] as Mismatch;
    return {
      request: m.stream === names.subscribe ? re.request : first.request,
      status: m.stream === names.subscribe ? re.status : first.status,
      field: m.field,
      expected: id,
      actual: m.value,
      note: `${m.stream} event #${m.index}${
        mismatches.length > 1
          ? ` (and ${mismatches.length - 1} more: ${mismatches
              .slice(1, 4)
              .map((x) => `${x.stream}#${x.index} ${x.field}=${JSON.stringify(x.value)}`)
              .join(', ')})`
          : ''
      }; events: ${summarize(m.stream === names.subscribe ? re.events : first.events, d)}`,
    };
  });
  leg.expect(
    updates >= 1,
    'at least one status-update follows the Task',
    reEv({
      expected: '≥ 1 status-update after the Task',
      actual: updates,
      note: stop ? `${stop}; events: ${summarize(re.events, d)}` : undefined,
    }),
  );
  leg.require(
    final !== undefined,
    'the resubscribed stream reaches a final:true status-update',
    reEv({
      field: 'final',
      expected: true,
      actual: stop || 'no final update',
      note: `events: ${summarize(re.events, d)}`,
    }),
  );
  const finalState = pick(final, 'status.state');
  leg.expect(
    TERMINAL_STATES.has(String(finalState)),
    'the final update is a terminal state',
    reEv({ field: 'result.status.state', expected: [...TERMINAL_STATES].join(' | '), actual: finalState }),
  );

  // 3. The OpenWOP event log, where the host has one: the run started exactly once.
  await checkRunStartedOnce(ctx, leg, id);
}

function requireSse(leg: LegRun, s: RpcStream, method: string): void {
  leg.require(s.status === 200 && s.isSse, `${method} answers 200 text/event-stream`, {
    request: s.request,
    status: s.status,
    field: 'content-type',
    expected: 'text/event-stream',
    actual: s.contentType || undefined,
    response: excerpt(s.text),
    note: isObject(pick(s.json, 'error'))
      ? `JSON-RPC error before the stream: ${JSON.stringify(pick(s.json, 'error'))}`
      : s.status === 401
        ? 'not authenticated (pass --api-key)'
        : undefined,
  });
}

/** The JSON-RPC result of one SSE event; a non-JSON event or a JSON-RPC error fails the leg. */
function resultOf(
  leg: LegRun,
  s: RpcStream,
  e: SseEvent,
  index: number,
  stream: string,
  d: Dialect,
): Record<string, unknown> {
  const error = pick(e.json, 'error');
  const result = d.result(pick(e.json, 'result'));
  if (error !== undefined || !isObject(result)) {
    leg.fail(`${stream} events are JSON-RPC results`, {
      request: s.request,
      status: s.status,
      field: error !== undefined ? 'error' : 'result',
      expected: 'a JSON-RPC success with a Task, status-update or artifact-update result',
      actual: error ?? result ?? excerpt(e.data),
      note: `event #${index}${e.event ? ` (event: ${e.event})` : ''}`,
    });
  }
  return result;
}

/** "task(working), status(working), status(completed,final)" */
function summarize(events: SseEvent[], d: Dialect): string {
  if (events.length === 0) return '(none)';
  const parts = events.map((e) => {
    const r = d.result(pick(e.json, 'result'));
    if (!isObject(r)) return pick(e.json, 'error') !== undefined ? 'error' : 'non-JSON-RPC';
    const id = r.kind === 'task' ? r.id : r.taskId;
    if (r.kind === 'task') return `task ${String(id)}(${String(pick(r, 'status.state'))})`;
    if (r.kind === 'status-update')
      return `status ${String(id)}(${String(pick(r, 'status.state'))}${r.final === true ? ',final' : ''})`;
    return `${String(r.kind)} ${String(id)}`;
  });
  return parts.length > 12 ? `${parts.slice(0, 12).join(', ')}, … (${parts.length} events)` : parts.join(', ');
}

function probeMessage(
  card: Record<string, unknown> | undefined,
  d: Dialect,
): {
  skillId?: string;
  message: Record<string, unknown>;
} {
  const skills = Array.isArray(card?.skills) ? card.skills.filter(isObject) : [];
  const steps = skills.find((s) => s.id === 'steps');
  const skill = steps ?? skills[0];
  const skillId = typeof skill?.id === 'string' ? skill.id : undefined;
  const parts = steps ? [{ data: STEPS_INPUT }] : [{ text: 'handoff conformance: resubscribe probe' }];
  const message = d.message(parts, skillId);
  return skillId ? { skillId, message } : { message };
}

const LOG_ABSENT = new Set([403, 404, 405, 501]);

async function checkRunStartedOnce(ctx: SuiteContext, leg: LegRun, runId: string): Promise<void> {
  const events: Record<string, unknown>[] = [];
  let after = -1;
  let lastRequest = '';
  for (let page = 0; page < 50; page++) {
    const res = await ctx.http.request(
      'GET',
      ctx.url(`/v1/runs/${encodeURIComponent(runId)}/events/poll?lastSequence=${after}&timeout=1`),
      { auth: true },
    );
    lastRequest = res.request;
    if (page === 0 && LOG_ABSENT.has(res.status)) {
      leg.note(`no OpenWOP event log (${res.request} → ${res.status}): the single-run.started check does not apply`);
      return;
    }
    const list = pick(res.json, 'events');
    leg.require(res.status === 200 && Array.isArray(list), 'the OpenWOP event log is readable', {
      request: res.request,
      status: res.status,
      field: 'events',
      expected: 'HTTP 200 with an events array',
      actual: Array.isArray(list) ? `${list.length} events` : list,
      response: excerpt(res.text),
    });
    const page_ = list.filter(isObject);
    events.push(...page_);
    if (page_.length === 0 || pick(res.json, 'isComplete') === true) break;
    const last = pick(res.json, 'lastEventSeq') ?? page_.at(-1)?.sequence;
    if (typeof last !== 'number' || last <= after) break;
    after = last;
  }
  const started = events.filter((e) => e.type === 'run.started');
  leg.expect(started.length === 1, 'the run log holds exactly one run.started (re-attaching did not restart the run)', {
    request: lastRequest,
    field: 'events[type=run.started]',
    expected: 1,
    actual: started.length,
    note: `sequences: ${started.map((e) => String(e.sequence)).join(', ') || '(none)'}; ${events.length} events read`,
  });
}
