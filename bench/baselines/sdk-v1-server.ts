// Reference server for A2A 1.0: @a2a-js/sdk 1.3.0 + express + InMemoryTaskStore, JSON-RPC and
// HTTP+JSON (REST) both mounted on one DefaultRequestHandler, as the SDK's multi-transport sample
// does. The 1.0 twin of sdk-server.ts (0.3.14): idiomatic, no tuning the SDK would not ship with.
//
//   node dist/bench/baselines/sdk-v1-server.js --port 4100
//   POST /a2a/jsonrpc (SendMessage, GetTask, …), POST /a2a/rest/message:send, GET /a2a/rest/tasks/{id}
//
// Skills as in sdk-server.ts: `echo` (Task submitted → working → artifact with the text →
// completed) and `approval` (first message → input-required; a follow-up with taskId and a data
// part {action:'accept'} → completed, anything else → rejected). Skill = message.metadata.skillId,
// default echo. No v0.3 compatibility layer: this server speaks 1.0 only.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { type AgentCard, type Message, type Part, Role, type Task, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { parsePort } from './args.js';

const port = parsePort(process.argv);
const base = `http://127.0.0.1:${port}`;

const skill = (id: string, description: string) => ({
  id,
  name: id,
  description,
  tags: ['bench'],
  examples: [],
  inputModes: [],
  outputModes: [],
  securityRequirements: [],
});

const card: AgentCard = {
  name: 'bench-sdk-v1',
  description: 'Benchmark baseline on @a2a-js/sdk 1.3.0 (express, InMemoryTaskStore), A2A 1.0',
  supportedInterfaces: [
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
  ],
  provider: undefined,
  version: '0.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [skill('echo', 'Echoes the text back as an artifact'), skill('approval', 'Waits for {action:"accept"}')],
  signatures: [],
};

const now = (): string => new Date().toISOString();

const part = (content: NonNullable<Part['content']>): Part => ({
  content,
  metadata: undefined,
  filename: '',
  mediaType: '',
});

function agentMessage(ctx: RequestContext, text: string): Message {
  return {
    messageId: randomUUID(),
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    role: Role.ROLE_AGENT,
    parts: [part({ $case: 'text', value: text })],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function publishStatus(ctx: RequestContext, bus: ExecutionEventBus, state: TaskState, message?: Message): void {
  const status = { state, message, timestamp: now() };
  bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status, metadata: undefined }));
}

// Every turn must start with the Task (the 1.x server refuses one that starts otherwise): the
// stored one for a reply, a new submitted one for a first message.
function publishTask(ctx: RequestContext, bus: ExecutionEventBus, skillId: string): void {
  const task: Task = ctx.task ?? {
    id: ctx.taskId,
    contextId: ctx.contextId,
    status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
    artifacts: [],
    history: [ctx.userMessage],
    metadata: { skillId },
  };
  bus.publish(AgentEvent.task(task));
}

function textOf(message: Message): string {
  return message.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

function echo(ctx: RequestContext, bus: ExecutionEventBus): void {
  publishTask(ctx, bus, 'echo');
  publishStatus(ctx, bus, TaskState.TASK_STATE_WORKING);
  const artifact = {
    artifactId: 'echo',
    name: 'echo',
    description: '',
    parts: [part({ $case: 'text', value: textOf(ctx.userMessage) })],
    metadata: undefined,
    extensions: [],
  };
  bus.publish(
    AgentEvent.artifactUpdate({
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      artifact,
      append: false,
      lastChunk: true,
      metadata: undefined,
    }),
  );
  publishStatus(ctx, bus, TaskState.TASK_STATE_COMPLETED);
}

function decision(message: Message): unknown {
  const data = message.parts.find((p) => p.content?.$case === 'data');
  return data?.content?.$case === 'data' ? (data.content.value as { action?: unknown }).action : undefined;
}

function approval(ctx: RequestContext, bus: ExecutionEventBus): void {
  publishTask(ctx, bus, 'approval');
  if (ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
    const accepted = decision(ctx.userMessage) === 'accept';
    publishStatus(ctx, bus, accepted ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_REJECTED);
    return;
  }
  const ask = agentMessage(ctx, 'Approve this request? Reply with data {action:"accept"}.');
  publishStatus(ctx, bus, TaskState.TASK_STATE_INPUT_REQUIRED, ask);
}

const executor: AgentExecutor = {
  async execute(ctx, bus) {
    // A reply to a parked task belongs to the approval skill whatever its metadata says.
    const skillId = ctx.task ? 'approval' : ctx.userMessage.metadata?.skillId;
    if (skillId === 'approval') approval(ctx, bus);
    else echo(ctx, bus);
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    const status = { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() };
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: randomUUID(), status, metadata: undefined }));
    bus.finished();
  },
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const userBuilder = UserBuilder.noAuthentication;
const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder }));
app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder }));

const server = app.listen(port, '127.0.0.1', () => console.log(`sdk-v1 baseline listening on ${base}`));
// Exit at once on SIGTERM: keep-alive sockets from the load generator would hold close() open.
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
