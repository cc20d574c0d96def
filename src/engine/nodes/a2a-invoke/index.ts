// a2a.invoke: hand work to another A2A agent and wait for its task durably, holding nothing.
//
// One execution is one short exchange with the peer, outside any transaction (src/engine/step.ts):
//   1. send   the message (messageId from the idempotency key: a re-execution after a crash finds
//             the same peer task), then record the link (a2a.task.linked) and sleep;
//   2. wake   (a push callback brings the timer forward, a stream holder too, else the poll timer
//             fires): tasks/get, then sleep again or settle by the reverse projection (project.ts);
//   3. relay  an answer to the peer's question (clarify) into the same peer task, then wait again
//             until the peer takes it up (a peer may first answer with the task still at the question).
// Transport failures (unreachable, 429, 5xx) are retried with backoff until `timeoutMs`; a peer's
// refusal (4xx, JSON-RPC error) fails the node at once with the peer's code and message.
// `timeoutMs` holds in every state: each request is bounded by the time left, no timer sleeps past
// the deadline, a clarification the node opens expires at it, and an execution that starts past
// it gives up (and has the peer task cancelled: the one recorded, or any its lost send made).
import { createHash, randomBytes } from 'node:crypto';
import type { PeerClient, PeerTarget, RunContext } from '../../../peers/client.js';
import { retryWaitMs } from '../../../egress/retry-after.js';
import { PeerError } from '../../../peers/errors.js';
import { contextIdFor, messageIdFor } from '../../../peers/identity.js';
import type { TaskView } from '../../../a2a/model.js';
import { textOf } from '../../../peers/normalize.js';
import { INTERRUPTED_STATES } from '../../../peers/normalize.js';
import type { NewEvent } from '../../../store/model.js';
import type { PeerWaitRecord } from '../../../store/repos/peer-waits.js';
import { renderTemplate } from '../../workflow/evaluate.js';
import type { NodeContext, NodeResult, NodeType } from '../types.js';
import { DEFAULT_TIMEOUT_MS, type InvokeConfig, invokeConfigSchema } from './config.js';
import { type CallInfo, outputOf, questionOf, terminalResult } from './project.js';
import type { PeerService, WaitMode } from './service.js';

/** What an execution records for the next one (the run's cursor.nodeState). */
export interface InvokeState {
  phase: 'send' | 'wait';
  /** Epoch ms after which the call gives up. */
  deadline: number;
  /** Consecutive sleeps without news (the backoff exponent). */
  attempt: number;
  agent?: string;
  target?: PeerTarget;
  protocolVersion?: string;
  binding?: string;
  taskId?: string;
  contextId?: string;
  /** The peer task's state as last seen, and the peer's clock of that state when it gave one. */
  state?: string;
  stateAt?: string;
  /**
   * The question last relayed (its state and peer clock): while the peer task still shows it, the
   * peer has not taken the answer up yet (an @a2a-js/sdk 1.x peer answers a non-blocking send with
   * the task as stored, before its executor runs), so the node waits instead of asking again.
   */
  answered?: { state: string; at: string };
  mode?: WaitMode[];
  waitId?: string;
  /** Replies relayed so far (each gets its own message id). */
  replies?: number;
  /** Set by the engine when this run's clarification is answered: relay it, then wait again. */
  reply?: { answers?: Record<string, unknown> };
  /** What `handoff watch` and the run snapshot show. */
  waitingOn?: { agent: string; peerTaskId: string; state: string };
  /** The last transport failure (what the node says when the deadline passes on it). */
  lastFailure?: string;
}

const A2A_URL = /^https?:\/\//i;

export const a2aInvoke: NodeType<InvokeConfig> = {
  typeId: 'a2a.invoke',
  inline: false,
  resumesItself: true,
  configSchema: invokeConfigSchema,
  async execute(ctx) {
    const peers = ctx.services?.peers;
    if (!peers) {
      return fail('external_call_refused', 'this host has no peer service (a2a.invoke runs only in a worker)');
    }
    const state = ctx.state as InvokeState | undefined;
    // Past the deadline the peer is asked nothing more: the timer at the deadline, an answer that
    // came late and the expiry of the clarification the node opened (expiresAt) all end here.
    if (state && ctx.now >= state.deadline) return giveUp(ctx, peers, state, []);
    if (state?.phase === 'wait') return state.reply ? relay(ctx, peers, state) : poll(ctx, peers, state);
    return send(ctx, peers, state);
  },
};

/**
 * The run as the peer client sees it. `deadline` is in the client's clock (real time): the time
 * left by the engine's clock, from now, so a test clock moves the node's deadline, not its requests.
 */
const runOf = (ctx: NodeContext<InvokeConfig>, peers: PeerService, deadline: number): Required<RunContext> => ({
  runId: ctx.runId,
  callerAgentId: peers.callerAgentId,
  deadline: Date.now() + (deadline - ctx.now),
});

/** The deadline has passed, by the engine's clock at the start or in real time since. */
const overdue = (ctx: NodeContext<InvokeConfig>, s: InvokeState, run: Required<RunContext>): boolean =>
  ctx.now >= s.deadline || Date.now() >= run.deadline;

const fail = (code: string, message: string, details?: Record<string, unknown>): NodeResult => ({
  kind: 'failed',
  error: { code, message, ...(details ? { details } : {}) },
});

/** The peer to call: a registry name as is; a URL (literal or rendered from input) fully guarded. */
async function targetOf(ctx: NodeContext<InvokeConfig>): Promise<PeerTarget> {
  const raw = String(await renderTemplate(ctx.config.agent, ctx.scope));
  return A2A_URL.test(raw) ? { url: raw } : { agent: raw };
}

const nameOf = (t: PeerTarget): string => ('agent' in t ? t.agent : t.url);

async function send(ctx: NodeContext<InvokeConfig>, peers: PeerService, prior: InvokeState | undefined) {
  const deadline = prior?.deadline ?? ctx.now + (ctx.config.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const target = prior?.target ?? (await targetOf(ctx));
  const text = ctx.config.text !== undefined ? String(await renderTemplate(ctx.config.text, ctx.scope)) : undefined;
  const data = ctx.config.data !== undefined ? await renderTemplate(ctx.config.data, ctx.scope) : undefined;
  if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) {
    return fail('invalid_config', 'config.data must render to a JSON object');
  }
  const again: InvokeState = { phase: 'send', deadline, attempt: (prior?.attempt ?? 0) + 1, target };
  const run = runOf(ctx, peers, deadline);
  const contextId = contextIdFor(ctx.idempotencyKey);
  try {
    const client = await peers.resolve(target, run);
    const modes = waitModes(ctx.config.wait ?? 'auto', client, peers);
    const call = callInfo(nameOf(target), client);
    // The wait exists before the peer can push to it; a re-execution keeps its id.
    const wait = await peers.waits.upsert({ runId: ctx.runId, nodeId: ctx.node.id, ordinal: ctx.ordinal, target });
    const push = modes.includes('push') ? pushConfig(peers, wait.waitId) : undefined;
    const sent = await client.send({
      messageId: messageIdFor(ctx.idempotencyKey),
      contextId,
      ...(text !== undefined ? { text } : {}),
      ...(data !== undefined ? { data: data as Record<string, unknown> } : {}),
      ...(ctx.config.skill !== undefined ? { skillId: String(await renderTemplate(ctx.config.skill, ctx.scope)) } : {}),
    });
    if (sent.kind === 'message') {
      // No task was made: the answer is the outcome.
      await peers.waits.finish(wait.waitId);
      const message = {
        text: textOf(sent.message),
        parts: sent.message.parts.map((p) => ({ ...p, contentTrust: 'untrusted' })),
      };
      return {
        kind: 'completed',
        output: { state: 'completed', artifacts: [], message, contentTrust: 'untrusted' },
        detail: { peer: { agent: call.agent, protocolVersion: call.protocolVersion, message } },
      } satisfies NodeResult;
    }
    let task = sent.task;
    await peers.waits.upsert({
      runId: ctx.runId,
      nodeId: ctx.node.id,
      ordinal: ctx.ordinal,
      target,
      peerTaskId: task.id,
      ...(push ? { tokenHash: push.tokenHash } : {}),
    });
    // An earlier attempt of this send (its answer lost, or a crash before its commit) may have made
    // a task of its own on a peer that does not dedup by messageId: only the recorded one stays.
    const repeated = prior !== undefined || Date.parse(wait.createdAt) < ctx.now;
    if (repeated && task.contextId === contextId) await cancelStrays(client, contextId, task.id);
    // Registered on the task once it exists (a refused registration must not fail the call), then
    // the task read again: a change between the answer and the registration is not missed.
    if (push) {
      if (await registered(client, task.id, push.config)) task = await client.getTask(task.id);
      else modes.splice(modes.indexOf('push'), 1);
    }
    const linked: NewEvent = {
      type: 'a2a.task.linked',
      nodeId: ctx.node.id,
      payload: {
        agent: call.agent,
        peerTaskId: task.id,
        contextId: task.contextId,
        cardUrl: client.chosen.url,
        protocolVersion: call.protocolVersion,
        binding: call.binding,
        waitModes: modes,
        state: task.status.state,
      },
    };
    const waiting: InvokeState = {
      phase: 'wait',
      deadline,
      attempt: 0,
      agent: call.agent,
      target,
      protocolVersion: call.protocolVersion,
      binding: call.binding,
      taskId: task.id,
      contextId: task.contextId,
      mode: modes,
      waitId: wait.waitId,
      replies: 0,
    };
    return settle(ctx, peers, run, waiting, task, [linked]);
  } catch (err) {
    return failure(err, ctx, peers, run, again, `calling agent '${nameOf(target)}'`);
  }
}

/** Cancel the context's other tasks, best effort: a peer without ListTasks (0.3), or one failing now, keeps them. */
async function cancelStrays(client: PeerClient, contextId: string, keep: string): Promise<void> {
  try {
    await client.cancelContext(contextId, keep);
  } catch (err) {
    if (!(err instanceof PeerError)) throw err;
  }
}

/** Woken (timer, push or stream): read the peer task again and settle or sleep. */
async function poll(ctx: NodeContext<InvokeConfig>, peers: PeerService, s: InvokeState): Promise<NodeResult> {
  const run = runOf(ctx, peers, s.deadline);
  try {
    const client = await peers.resolve(s.target as PeerTarget, run);
    return settle(ctx, peers, run, s, await client.getTask(s.taskId as string), []);
  } catch (err) {
    const again = { ...s, attempt: s.attempt + 1 };
    return failure(err, ctx, peers, run, again, `reading task ${s.taskId} of '${s.agent}'`);
  }
}

/** This run's clarification was answered: send the answer into the same peer task. */
async function relay(ctx: NodeContext<InvokeConfig>, peers: PeerService, s: InvokeState): Promise<NodeResult> {
  const answer = s.reply?.answers?.answer;
  const n = (s.replies ?? 0) + 1;
  const run = runOf(ctx, peers, s.deadline);
  try {
    const client = await peers.resolve(s.target as PeerTarget, run);
    const sent = await client.send({
      messageId: messageIdFor(`${ctx.idempotencyKey}:reply:${n}`),
      taskId: s.taskId as string,
      contextId: s.contextId as string,
      ...(answer !== null && typeof answer === 'object' && !Array.isArray(answer)
        ? { data: answer as Record<string, unknown> }
        : { text: typeof answer === 'string' ? answer : JSON.stringify(answer ?? null) }),
    });
    const { reply: _done, ...rest } = s;
    const next: InvokeState = {
      ...rest,
      replies: n,
      attempt: 0,
      ...(s.state && s.stateAt ? { answered: { state: s.state, at: s.stateAt } } : {}),
    };
    const relayed: NewEvent = { type: 'a2a.task.updated', nodeId: ctx.node.id, payload: { relayed: true, reply: n } };
    if (sent.kind === 'task') return settle(ctx, peers, run, next, sent.task, [relayed]);
    return settle(ctx, peers, run, next, await client.getTask(s.taskId as string), [relayed]);
  } catch (err) {
    const again = { ...s, attempt: s.attempt + 1 };
    return failure(err, ctx, peers, run, again, `relaying the answer to '${s.agent}'`);
  }
}

/** Decide from the peer task: an outcome, a question for this run, or another sleep. */
async function settle(
  ctx: NodeContext<InvokeConfig>,
  peers: PeerService,
  run: Required<RunContext>,
  s: InvokeState,
  task: TaskView,
  events: NewEvent[],
): Promise<NodeResult> {
  const call: CallInfo = {
    agent: s.agent as string,
    protocolVersion: s.protocolVersion as string,
    binding: s.binding as string,
  };
  const changed = task.status.state !== s.state;
  const own: NewEvent[] = [...events];
  if (changed && events.every((e) => e.type !== 'a2a.task.linked')) {
    own.push({
      type: 'a2a.task.updated',
      nodeId: ctx.node.id,
      payload: { peerTaskId: task.id, state: task.status.state, peerTimestamp: task.status.timestamp ?? null },
    });
  }
  const done = terminalResult(task, call, ctx.now);
  if (done) {
    if (s.waitId) await peers.waits.finish(s.waitId);
    return withEvents(done, own);
  }
  const { answered, stateAt: _at, lastFailure: _failed, ...prior } = s;
  const unread =
    answered !== undefined && answered.state === task.status.state && answered.at === task.status.timestamp;
  const next: InvokeState = {
    ...prior,
    state: task.status.state,
    ...(task.status.timestamp ? { stateAt: task.status.timestamp } : {}),
    ...(unread ? { answered } : {}),
    attempt: changed ? 0 : s.attempt + 1,
    waitingOn: { agent: call.agent, peerTaskId: task.id, state: task.status.state },
  };
  if (overdue(ctx, s, run)) return giveUp(ctx, peers, next, own);
  const policy = ctx.config.onInputRequired ?? 'clarify';
  if (INTERRUPTED_STATES.has(task.status.state) && policy !== 'wait' && !unread) {
    if (policy === 'fail') {
      return withEvents(
        fail('external_input_required', `agent '${call.agent}' asks for input: ${textOf(task.status.message)}`, {
          peerTaskId: task.id,
          output: outputOf(task),
        }),
        own,
      );
    }
    // The question expires with the call: its expiry re-executes the node, which then gives up.
    const expires = { timeoutMs: timeoutOf(ctx), expiresAt: new Date(s.deadline).toISOString() };
    return {
      kind: 'interrupt',
      interrupt: { kind: 'clarification', data: { ...questionOf(task, call.agent), ...expires } },
      expiresAt: s.deadline,
      state: { ...next },
      events: own,
    };
  }
  // Sleeping: a stream wait watches the task until news, whatever its state (src/peers/streams.ts).
  if (next.mode?.includes('stream') && next.waitId) peers.onStreamWait?.(streamWait(ctx, next), task.status.state);
  return {
    kind: 'sleep',
    wakeAt: Math.min(s.deadline, ctx.now + backoff(peers, next.attempt)),
    state: { ...next },
    events: own,
  };
}

function withEvents(r: NodeResult, events: NewEvent[]): NodeResult {
  if (events.length === 0) return r;
  if (r.kind === 'sleep' || r.kind === 'interrupt') return r;
  return { ...r, events: [...events, ...(r.events ?? [])] } as NodeResult;
}

const timeoutOf = (ctx: NodeContext<InvokeConfig>): number => ctx.config.timeoutMs ?? DEFAULT_TIMEOUT_MS;

/**
 * `timeoutMs` passed: fail, and ask for the peer task's cancel (it is no longer awaited). Before a
 * task is recorded too: a send whose answer was lost may have made one (the cancel pass looks for
 * it in the call's context).
 */
async function giveUp(
  ctx: NodeContext<InvokeConfig>,
  peers: PeerService,
  s: InvokeState,
  events: NewEvent[],
): Promise<NodeResult> {
  await peers.waits.requestCancel(ctx.runId);
  if (!s.taskId) {
    const what = s.lastFailure ?? `agent '${nameOf(s.target as PeerTarget)}' was not reachable`;
    return withEvents(
      fail('external_call_failed', `${what} (gave up after ${timeoutOf(ctx)} ms)`, { kind: 'transport' }),
      events,
    );
  }
  const what = `task ${s.taskId} of agent '${s.agent}' did not end within ${timeoutOf(ctx)} ms`;
  return withEvents(fail('external_call_failed', what, { peerTaskId: s.taskId }), events);
}

/** A failed exchange: a transport problem sleeps and retries (until the deadline); the rest fail now. */
async function failure(
  err: unknown,
  ctx: NodeContext<InvokeConfig>,
  peers: PeerService,
  run: Required<RunContext>,
  s: InvokeState,
  what: string,
): Promise<NodeResult> {
  if (!(err instanceof PeerError)) throw err;
  const f = err.failure;
  if (f.kind === 'transport') {
    const failed: InvokeState = { ...s, lastFailure: `${what}: ${f.message}` };
    if (overdue(ctx, s, run)) return giveUp(ctx, peers, failed, []);
    // A peer's Retry-After is honoured up to the poll ceiling, and no sleep outlasts the deadline.
    const delay = retryWaitMs(backoff(peers, s.attempt), f.retryAfterMs, peers.pollMaxMs);
    return { kind: 'sleep', wakeAt: Math.min(s.deadline, ctx.now + delay), state: { ...failed } };
  }
  if (f.kind === 'refused') return fail('external_call_refused', `${what}: ${f.reason}`, { kind: 'refused' });
  return fail('external_call_failed', `${what}: ${f.message}`, { kind: 'peer', peerCode: f.code });
}

/** 1 s doubling to 60 s by default (HANDOFF_AGENT_POLL_MIN_MS / _MAX_MS), ±20 % jitter. */
export function backoff(peers: Pick<PeerService, 'pollMinMs' | 'pollMaxMs'>, attempt: number): number {
  const base = Math.min(peers.pollMaxMs, peers.pollMinMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

function callInfo(agent: string, client: PeerClient): CallInfo {
  return { agent, protocolVersion: client.chosen.protocolVersion, binding: client.chosen.binding };
}

/** The wait modes this call uses: `auto` takes what the peer advertises; polling is always the floor. */
function waitModes(wanted: NonNullable<InvokeConfig['wait']>, client: PeerClient, peers: PeerService): WaitMode[] {
  const caps = client.card.capabilities;
  const canPush = caps?.pushNotifications === true && peers.callbackUrl('probe') !== undefined;
  const canStream = caps?.streaming === true && peers.onStreamWait !== undefined;
  if (wanted === 'poll') return ['poll'];
  if (wanted === 'push') return canPush ? ['push', 'poll'] : ['poll'];
  if (wanted === 'stream') return canStream ? ['stream', 'poll'] : ['poll'];
  return [...(canPush ? ['push' as const] : []), ...(canStream ? ['stream' as const] : []), 'poll'];
}

/** A per-call random token (only its hash is stored) and the callback it guards. */
function pushConfig(peers: PeerService, waitId: string) {
  const url = peers.callbackUrl(waitId) as string;
  const token = randomBytes(24).toString('base64url');
  return { config: { url, token, id: waitId }, tokenHash: createHash('sha256').update(token).digest('hex') };
}

/** Register the push config on the task (idempotent by config id); false when the peer refuses. */
async function registered(client: PeerClient, taskId: string, config: { url: string; token: string; id: string }) {
  try {
    await client.setPushConfig(taskId, config);
    return true;
  } catch (err) {
    if (err instanceof PeerError && err.failure.kind !== 'transport') return false;
    throw err;
  }
}

/** The wait a stream hold needs, from the node's own state (no read of the waits table). */
function streamWait(ctx: NodeContext<InvokeConfig>, s: InvokeState): PeerWaitRecord {
  return {
    waitId: s.waitId as string,
    runId: ctx.runId,
    nodeId: ctx.node.id,
    ordinal: ctx.ordinal,
    target: s.target as PeerTarget,
    peerTaskId: s.taskId as string,
    state: 'waiting',
    attempts: 0,
    nextAttemptAt: 0,
    createdAt: '',
  };
}
