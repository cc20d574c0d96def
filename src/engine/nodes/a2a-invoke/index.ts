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
import { PeerError } from '../../../peers/errors.js';
import { contextIdFor, messageIdFor } from '../../../peers/identity.js';
import type { TaskView } from '../../../a2a/model.js';
import { textOf } from '../../../peers/normalize.js';
import type { NewEvent } from '../../../store/model.js';
import type { PeerWaitRecord } from '../../../store/repos/peer-waits.js';
import { renderTemplate } from '../../workflow/evaluate.js';
import type { NodeContext, NodeResult, NodeType } from '../types.js';
import { DEFAULT_TIMEOUT_MS, type InvokeConfig, invokeConfigSchema } from './config.js';
import {
  afterFailure,
  type Facts,
  fail,
  gaveUp,
  nameOf,
  pollBackoff,
  relayed,
  replyContent,
  settle,
  type Verdict,
} from './machine.js';
import type { CallInfo } from './project.js';
import type { PeerService, WaitMode } from './service.js';
import { describe, type InvokeState, type Sending, stateOf, type Waiting, withReply } from './state.js';

const A2A_URL = /^https?:\/\//i;

export const a2aInvoke: NodeType<InvokeConfig> = {
  typeId: 'a2a.invoke',
  inline: false,
  configSchema: invokeConfigSchema,
  async execute(ctx) {
    const peers = ctx.services?.peers;
    if (!peers) {
      return fail('external_call_refused', 'this host has no peer service (a2a.invoke runs only in a worker)');
    }
    const state = stateOf(ctx.state);
    // Past the deadline the peer is asked nothing more: the timer at the deadline, an answer that
    // came late and the expiry of the clarification the node opened (expiresAt) all end here.
    if (state && ctx.now >= state.deadline) return giveUp(ctx, peers, state, []);
    if (state?.phase === 'wait') return state.reply ? relay(ctx, peers, state) : poll(ctx, peers, state);
    return send(ctx, peers, state);
  },
  // The run is cancelled or this branch withdrawn: the cancel pass sends tasks/cancel after the commit.
  async cancel(tx, runId, nodeId) {
    await tx.peerWaits.requestCancel(runId, nodeId);
  },
  // The answer to the peer's question goes back to the peer: the node relays it, then waits again.
  resolveInterrupt: withReply,
  describe,
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

/** What the state machine (machine.ts) decides with; `late` once real time passed the deadline. */
const factsOf = (ctx: NodeContext<InvokeConfig>, peers: PeerService, run: Required<RunContext>): Facts => ({
  nodeId: ctx.node.id,
  now: ctx.now,
  late: Date.now() >= run.deadline,
  timeoutMs: timeoutOf(ctx),
  onInputRequired: ctx.config.onInputRequired ?? 'clarify',
  poll: pollBackoff(peers),
});

const timeoutOf = (ctx: NodeContext<InvokeConfig>): number => ctx.config.timeoutMs ?? DEFAULT_TIMEOUT_MS;

/** The peer to call: a registry name as is; a URL (literal or rendered from input) fully guarded. */
async function targetOf(ctx: NodeContext<InvokeConfig>): Promise<PeerTarget> {
  const raw = String(await renderTemplate(ctx.config.agent, ctx.scope));
  return A2A_URL.test(raw) ? { url: raw } : { agent: raw };
}

async function send(ctx: NodeContext<InvokeConfig>, peers: PeerService, prior: Sending | undefined) {
  const deadline = prior?.deadline ?? ctx.now + timeoutOf(ctx);
  const target = prior?.target ?? (await targetOf(ctx));
  const text = ctx.config.text !== undefined ? String(await renderTemplate(ctx.config.text, ctx.scope)) : undefined;
  const data = ctx.config.data !== undefined ? await renderTemplate(ctx.config.data, ctx.scope) : undefined;
  if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) {
    return fail('invalid_config', 'config.data must render to a JSON object');
  }
  const again: Sending = { phase: 'send', deadline, attempt: (prior?.attempt ?? 0) + 1, target };
  // A send repeated after a transport failure keeps counting the failures (the run's activity).
  if (prior?.retry) again.retry = prior.retry;
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
        ...peerConsole(client.chosen.url, task),
        protocolVersion: call.protocolVersion,
        binding: call.binding,
        waitModes: modes,
        state: task.status.state,
      },
    };
    const waiting: Waiting = {
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
    return act(ctx, peers, waiting, settle(waiting, task, [linked], factsOf(ctx, peers, run)));
  } catch (err) {
    return failure(err, ctx, peers, run, again, `calling agent '${nameOf(target)}'`);
  }
}

/**
 * The peer task's page in the peer's console, when the peer is a Handoff (its Task names the run
 * behind it in `metadata.openwop.runId`): the console links the delegate's page to it.
 */
function peerConsole(endpoint: string, task: TaskView): { peerConsoleUrl?: string } {
  const openwop = task.metadata?.openwop as { runId?: unknown } | undefined;
  if (typeof openwop?.runId !== 'string' || !URL.canParse(endpoint)) return {};
  return { peerConsoleUrl: new URL(`/console/runs/${encodeURIComponent(task.id)}`, endpoint).href };
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
async function poll(ctx: NodeContext<InvokeConfig>, peers: PeerService, s: Waiting): Promise<NodeResult> {
  const run = runOf(ctx, peers, s.deadline);
  try {
    const client = await peers.resolve(s.target, run);
    return act(ctx, peers, s, settle(s, await client.getTask(s.taskId), [], factsOf(ctx, peers, run)));
  } catch (err) {
    const again = { ...s, attempt: s.attempt + 1 };
    return failure(err, ctx, peers, run, again, `reading task ${s.taskId} of '${s.agent}'`);
  }
}

/** This run's clarification was answered: send the answer into the same peer task. */
async function relay(ctx: NodeContext<InvokeConfig>, peers: PeerService, s: Waiting): Promise<NodeResult> {
  const n = s.replies + 1;
  const run = runOf(ctx, peers, s.deadline);
  try {
    const client = await peers.resolve(s.target, run);
    const sent = await client.send({
      messageId: messageIdFor(`${ctx.idempotencyKey}:reply:${n}`),
      taskId: s.taskId,
      contextId: s.contextId,
      ...replyContent(s.reply?.answers?.answer),
    });
    const next = relayed(s, n);
    const events: NewEvent[] = [
      { type: 'a2a.task.updated', nodeId: ctx.node.id, payload: { relayed: true, reply: n } },
    ];
    const task: TaskView = sent.kind === 'task' ? sent.task : await client.getTask(s.taskId);
    return act(ctx, peers, next, settle(next, task, events, factsOf(ctx, peers, run)));
  } catch (err) {
    const again = { ...s, attempt: s.attempt + 1 };
    return failure(err, ctx, peers, run, again, `relaying the answer to '${s.agent}'`);
  }
}

/** Carry out a verdict's side effect (finish the wait, give up, hold a stream), then return its result. */
async function act(
  ctx: NodeContext<InvokeConfig>,
  peers: PeerService,
  s: InvokeState,
  v: Verdict,
): Promise<NodeResult> {
  switch (v.kind) {
    case 'ended':
      if (s.phase === 'wait') await peers.waits.finish(s.waitId);
      return v.result;
    case 'overdue':
      return giveUp(ctx, peers, v.state, v.events);
    case 'sleep':
      if (v.hold?.state !== undefined) peers.onStreamWait?.(streamWait(ctx, v.hold), v.hold.state);
      return v.result;
    case 'result':
      return v.result;
  }
}

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
  return gaveUp(s, events, timeoutOf(ctx));
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
  return act(ctx, peers, s, afterFailure(err.failure, s, what, factsOf(ctx, peers, run)));
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
function streamWait(ctx: NodeContext<InvokeConfig>, s: Waiting): PeerWaitRecord {
  return {
    waitId: s.waitId,
    runId: ctx.runId,
    nodeId: ctx.node.id,
    ordinal: ctx.ordinal,
    target: s.target,
    peerTaskId: s.taskId,
    state: 'waiting',
    attempts: 0,
    nextAttemptAt: 0,
    createdAt: '',
  };
}
