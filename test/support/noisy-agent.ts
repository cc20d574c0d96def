// A hostile A2A 1.0 peer for the limits of a2a.invoke's stream holds, pushes and wakes:
// @a2a-js/sdk 1.3.0's own server (express, InMemoryTaskStore, JSON-RPC), streaming and push on,
// whose tasks never end by themselves and whose cancel does nothing. Skills (metadata.skillId):
// - hold    working, then nothing (a task a push flood can be aimed at);
// - flood   a `working` status update every `floodEveryMs` (a stream that never lets go);
// - flip    working ↔ submitted every `flipEveryMs` (a stream whose every event is news; the
//           1.x SDK ends a turn at input-required, so the flip stays within the active states).
// Flood and flip stop after `forMs` (bounded in time, whatever the test does) or at close.
//
//   const peer = await startNoisyAgent({ forMs: 60_000 });
//   peer.openStreams      // subscriptions open right now (closed by the caller or not)
//   peer.streamsOpened    // subscriptions ever opened
//   peer.published('flip') // status updates the flip tasks published
//   peer.pushConfig(taskId) // the URL and token the caller registered for its pushes
import { setTimeout as sleep } from 'node:timers/promises';
import express from 'express';
import { type AgentCard, type Task, type TaskPushNotificationConfig, TaskState } from '@a2a-js/sdk';
import {
  type AgentExecutor,
  AgentEvent,
  DefaultExecutionEventBusManager,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { listen, SlowTasks } from './peer-skills.js';

export interface NoisyAgent {
  url: string;
  /** Subscriptions (text/event-stream requests) open right now. */
  readonly openStreams: number;
  /** Subscriptions opened so far. */
  readonly streamsOpened: number;
  /** Status updates published so far by the tasks of one skill (flood or flip). */
  published(skill: 'flood' | 'flip'): number;
  /** The push config the caller registered on the task (undefined before it did). */
  pushConfig(taskId: string): { url: string; token: string } | undefined;
  close(): Promise<void>;
}

export interface NoisyOptions {
  floodEveryMs?: number;
  flipEveryMs?: number;
  /** Flood and flip stop after this long (default 120 s). */
  forMs?: number;
}

/** Records the configs the caller registers (the token included: a test replays it). */
class RecordingPushStore extends InMemoryPushNotificationStore {
  readonly configs = new Map<string, { url: string; token: string }>();
  override async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    this.configs.set(taskId, { url: config.url, token: config.token });
    await super.save(taskId, context, config);
  }
}

export async function startNoisyAgent(opts: NoisyOptions = {}): Promise<NoisyAgent> {
  const card: AgentCard = {
    name: 'noisy',
    description: 'A hostile @a2a-js/sdk 1.3.0 agent: floods or flips its streams, ignores cancels',
    supportedInterfaces: [],
    provider: undefined,
    version: '0.0.0',
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: ['hold', 'flood', 'flip'].map((id) => ({
      id,
      name: id,
      description: `the ${id} skill`,
      tags: ['hostile'],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
  const stopped = new AbortController();
  const counts = { open: 0, opened: 0 };
  const published = new Map<string, number>();
  const forMs = opts.forMs ?? 120_000;
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const { taskId, contextId } = ctx;
      const skill = String(ctx.userMessage.metadata?.skillId ?? 'hold');
      const status = (state: TaskState) => ({
        taskId,
        contextId,
        status: { state, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      });
      const task: Task = {
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: { skillId: skill },
      };
      bus.publish(AgentEvent.task(task));
      bus.publish(AgentEvent.statusUpdate(status(TaskState.TASK_STATE_WORKING)));
      const until = Date.now() + forMs;
      if (skill === 'hold') {
        // Working, saying nothing more; the task's bus (and so its streams) stays open meanwhile.
        await sleep(forMs, undefined, { signal: stopped.signal }).catch(() => {});
        return;
      }
      const everyMs = skill === 'flip' ? (opts.flipEveryMs ?? 5) : (opts.floodEveryMs ?? 1);
      let flipped = false;
      while (Date.now() < until && !stopped.signal.aborted) {
        await sleep(everyMs, undefined, { signal: stopped.signal }).catch(() => {});
        flipped = skill === 'flip' && !flipped;
        bus.publish(
          AgentEvent.statusUpdate(status(flipped ? TaskState.TASK_STATE_SUBMITTED : TaskState.TASK_STATE_WORKING)),
        );
        published.set(skill, (published.get(skill) ?? 0) + 1);
      }
    },
    async cancelTask() {
      // A peer that says nothing to a cancel: its task goes on.
    },
  };
  const pushes = new RecordingPushStore();
  const handler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    new DefaultExecutionEventBusManager(),
    pushes,
    new DefaultPushNotificationSender(pushes),
  );
  const app = express();
  app.use((req, res, next) => {
    if (String(req.headers.accept).includes('text/event-stream')) {
      counts.open++;
      counts.opened++;
      res.once('close', () => counts.open--);
    }
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const { url, close } = await listen(app, new SlowTasks());
  card.supportedInterfaces.push({
    url: `${url}/a2a/jsonrpc`,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
    tenant: '',
  });
  return {
    url,
    get openStreams() {
      return counts.open;
    },
    get streamsOpened() {
      return counts.opened;
    },
    published: (skill) => published.get(skill) ?? 0,
    pushConfig: (taskId) => pushes.configs.get(taskId),
    async close() {
      stopped.abort();
      await close();
    },
  };
}
