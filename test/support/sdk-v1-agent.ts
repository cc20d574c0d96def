// A non-Handoff A2A 1.0 agent for peer-client tests: @a2a-js/sdk 1.3.0's own server (express,
// InMemoryTaskStore), JSON-RPC and HTTP+JSON both mounted, a card with `supportedInterfaces`.
// Same skills as its 0.3 twin (peer-skills.ts, sdk-sample-server.ts).
//
//   const agent = await startSdkV1Agent();
//   agent.url              // base URL: its card lists JSON-RPC first, then HTTP+JSON
//   agent.restFirstCardUrl // the same agent, its card listing HTTP+JSON first (a peer preferring REST)
//   await agent.finish(taskId, { state: 'failed' });
//   await agent.close();
//
// Streaming and push notifications on, no authentication. The SDK does not dedup by messageId.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { type AgentCard, type Message, type Part, Role, type Task, TaskState } from '@a2a-js/sdk';
import {
  type AgentExecutor,
  AgentEvent,
  DefaultExecutionEventBusManager,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type RequestContext,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import {
  listen,
  planTurn,
  recordRequests,
  playTurn,
  type PublishedStep,
  SKILL_IDS,
  SlowTasks,
  type StepState,
  type TestAgent,
  type Turn,
} from './peer-skills.js';

export interface SdkV1Agent extends TestAgent {
  /** The same agent, its card listing HTTP+JSON first (a peer preferring REST). */
  restFirstCardUrl: string;
}

const STATE: Record<StepState, TaskState> = {
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  rejected: TaskState.TASK_STATE_REJECTED,
  canceled: TaskState.TASK_STATE_CANCELED,
};

const part = (content: NonNullable<Part['content']>): Part => ({
  content,
  metadata: undefined,
  filename: '',
  mediaType: '',
});

const agentMessage = (taskId: string, contextId: string, text: string): Message => ({
  messageId: randomUUID(),
  taskId,
  contextId,
  role: Role.ROLE_AGENT,
  parts: [part({ $case: 'text', value: text })],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const statusOf = (taskId: string, contextId: string, state: StepState, text?: string) => ({
  state: STATE[state],
  message: text ? agentMessage(taskId, contextId, text) : undefined,
  timestamp: new Date().toISOString(),
});

const turnOf = (m: Message): Turn => {
  const texts = m.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
  const data = m.parts.flatMap((p) =>
    p.content?.$case === 'data' ? [p.content.value as Record<string, unknown>] : [],
  );
  return { text: texts.join(' ').trim(), data: data.length > 0 ? Object.assign({}, ...data) : undefined };
};

function publishStep(ctx: RequestContext, bus: ExecutionEventBus, step: PublishedStep): void {
  const { taskId, contextId } = ctx;
  if ('status' in step) {
    const status = statusOf(taskId, contextId, step.status, step.text);
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status, metadata: undefined }));
    return;
  }
  const parts: Part[] = [];
  if (step.text !== undefined) parts.push(part({ $case: 'text', value: step.text }));
  if (step.data !== undefined) parts.push(part({ $case: 'data', value: step.data }));
  const artifact = {
    artifactId: step.artifact,
    name: step.artifact,
    description: '',
    parts,
    metadata: undefined,
    extensions: [],
  };
  bus.publish(
    AgentEvent.artifactUpdate({ taskId, contextId, artifact, append: false, lastChunk: true, metadata: undefined }),
  );
}

interface Known {
  contextId: string;
  /** The call context the task was made under: the store is scoped by it. */
  context: ServerCallContext;
}

function executor(slow: SlowTasks, slowMs: number, known: Map<string, Known>): AgentExecutor {
  return {
    async execute(ctx, bus) {
      const parked =
        ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED ||
        ctx.task?.status?.state === TaskState.TASK_STATE_AUTH_REQUIRED;
      const skill = String((ctx.task ? ctx.task.metadata?.skillId : ctx.userMessage.metadata?.skillId) ?? 'echo');
      known.set(ctx.taskId, { contextId: ctx.contextId, context: ctx.context });
      // Every turn starts with the Task (the 1.x server refuses a turn that starts otherwise).
      const task: Task = ctx.task ?? {
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: { skillId: skill },
      };
      bus.publish(AgentEvent.task(task));
      const steps = planTurn(skill, parked, turnOf(ctx.userMessage), slowMs);
      await playTurn(steps, slow, ctx.taskId, (step) => publishStep(ctx, bus, step));
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      if (slow.settle(taskId, { state: 'canceled', text: 'canceled by the caller' })) return;
      const contextId = known.get(taskId)?.contextId ?? randomUUID();
      const status = statusOf(taskId, contextId, 'canceled', 'canceled by the caller');
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status, metadata: undefined }));
      bus.finished();
    },
  };
}

export async function startSdkV1Agent(opts: { slowMs?: number } = {}): Promise<SdkV1Agent> {
  const card: AgentCard = {
    name: 'sdk-v1',
    description: 'A plain @a2a-js/sdk 1.3.0 agent (express, InMemoryTaskStore) for peer-client tests',
    supportedInterfaces: [], // filled in once the port is known
    provider: undefined,
    version: '0.0.0',
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: SKILL_IDS.map((id) => ({
      id,
      name: id,
      description: `the ${id} test skill`,
      tags: ['sample'],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    })),
    signatures: [],
  };
  const slow = new SlowTasks();
  const known = new Map<string, Known>();
  const store = new InMemoryTaskStore();
  const pushes = new InMemoryPushNotificationStore();
  const handler = new DefaultRequestHandler(
    card,
    store,
    executor(slow, opts.slowMs ?? 60_000, known),
    new DefaultExecutionEventBusManager(),
    pushes,
    new DefaultPushNotificationSender(pushes),
  );
  const userBuilder = UserBuilder.noAuthentication;
  const app = express();
  const requests = recordRequests(app);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  const restFirst = async (): Promise<AgentCard> => ({
    ...card,
    supportedInterfaces: [...card.supportedInterfaces].reverse(),
  });
  app.use('/cards/rest-first.json', agentCardHandler({ agentCardProvider: restFirst }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder }));
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder }));

  const { url, close } = await listen(app, slow);
  // The handler keeps this object: the card now names the endpoints clients call.
  card.supportedInterfaces.push(
    { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    { url: `${url}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
  );
  return {
    url,
    requests,
    restFirstCardUrl: `${url}/cards/rest-first.json`,
    async finish(taskId, ending) {
      if (slow.settle(taskId, ending)) return;
      const task = known.get(taskId);
      const stored = task && (await store.load(taskId, task.context));
      if (!task || !stored) throw new Error(`no task ${taskId}`);
      await store.save(
        { ...stored, status: statusOf(taskId, task.contextId, ending.state, ending.text) },
        task.context,
      );
    },
    close,
  };
}
