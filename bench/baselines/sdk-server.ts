// Reference server: @a2a-js/sdk 0.3.14 + express + InMemoryTaskStore, exactly as a user of the SDK
// would write it. It is the "what the ecosystem gives you" anchor in bench/RESULTS.md, so it must
// stay idiomatic (no tuning the SDK would not ship with).
//
//   node dist/bench/baselines/sdk-server.js --port 4100
//
// Skills: `echo` (Task submitted → working → artifact with the text → completed, final) and
// `approval` (first message → input-required, final; a follow-up with taskId and a data part
// {action:'accept'} → completed, anything else → rejected). Skill = message.metadata.skillId,
// default echo.
import { randomUUID } from 'node:crypto';
import express from 'express';
import type { AgentCard, Message, Part, TaskState, TaskStatusUpdateEvent } from 'a2a-js-sdk-v03';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from 'a2a-js-sdk-v03/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from 'a2a-js-sdk-v03/server/express';
import { parsePort } from './args.js';

const port = parsePort(process.argv);
const base = `http://127.0.0.1:${port}`;

const card: AgentCard = {
  name: 'bench-sdk',
  description: 'Benchmark baseline on @a2a-js/sdk 0.3.14 (express, InMemoryTaskStore)',
  url: `${base}/a2a/jsonrpc`, // absolute: clients post to card.url
  preferredTransport: 'JSONRPC',
  protocolVersion: '0.3.0',
  version: '0.0.0',
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [
    { id: 'echo', name: 'echo', description: 'Echoes the text back as an artifact', tags: ['bench'] },
    { id: 'approval', name: 'approval', description: 'Waits for {action:"accept"}', tags: ['bench'] },
  ],
};

const now = (): string => new Date().toISOString();

function status(ctx: RequestContext, state: TaskState, final: boolean, message?: Message): TaskStatusUpdateEvent {
  return {
    kind: 'status-update',
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    status: { state, timestamp: now(), ...(message ? { message } : {}) },
    final,
  };
}

function agentMessage(ctx: RequestContext, parts: Part[]): Message {
  return {
    kind: 'message',
    role: 'agent',
    messageId: randomUUID(),
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    parts,
  };
}

// A new task must be announced as a Task event first; the SDK's ResultManager folds later
// status/artifact events into it.
function publishSubmitted(ctx: RequestContext, bus: ExecutionEventBus, skillId: string): void {
  bus.publish({
    kind: 'task',
    id: ctx.taskId,
    contextId: ctx.contextId,
    status: { state: 'submitted', timestamp: now() },
    history: [ctx.userMessage],
    metadata: { skillId },
  });
}

function textOf(message: Message): string {
  return message.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
}

function echo(ctx: RequestContext, bus: ExecutionEventBus): void {
  publishSubmitted(ctx, bus, 'echo');
  bus.publish(status(ctx, 'working', false));
  bus.publish({
    kind: 'artifact-update',
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    artifact: { artifactId: 'echo', name: 'echo', parts: [{ kind: 'text', text: textOf(ctx.userMessage) }] },
    lastChunk: true,
  });
  bus.publish(status(ctx, 'completed', true));
}

function decision(message: Message): unknown {
  const data = message.parts.find((p) => p.kind === 'data');
  return data && data.kind === 'data' ? data.data.action : undefined;
}

function approval(ctx: RequestContext, bus: ExecutionEventBus): void {
  if (ctx.task?.status.state === 'input-required') {
    const accepted = decision(ctx.userMessage) === 'accept';
    bus.publish(status(ctx, accepted ? 'completed' : 'rejected', true));
    return;
  }
  publishSubmitted(ctx, bus, 'approval');
  const ask = agentMessage(ctx, [{ kind: 'text', text: 'Approve this request? Reply with data {action:"accept"}.' }]);
  bus.publish(status(ctx, 'input-required', true, ask));
}

const executor: AgentExecutor = {
  async execute(ctx, bus) {
    // A reply to a parked task belongs to the approval skill whatever its metadata says.
    const skill = ctx.task ? 'approval' : ctx.userMessage.metadata?.skillId;
    if (skill === 'approval') approval(ctx, bus);
    else echo(ctx, bus);
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    const contextId = randomUUID();
    bus.publish({
      kind: 'status-update',
      taskId,
      contextId,
      status: { state: 'canceled', timestamp: now() },
      final: true,
    });
    bus.finished();
  },
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = app.listen(port, '127.0.0.1', () => console.log(`sdk baseline listening on ${base}`));
// Exit at once on SIGTERM: keep-alive sockets from the load generator would hold close() open.
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
