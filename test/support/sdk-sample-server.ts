// A non-Handoff A2A v0.3 agent for client tests: @a2a-js/sdk 0.3.14 + express 5 +
// InMemoryTaskStore, written the way the SDK's own samples are (same approach as
// bench/baselines/sdk-server.ts). It lets the `handoff` client commands prove they speak plain
// A2A, not just Handoff.
//
//   const sdk = await startSdkSampleServer();          // 127.0.0.1, a free port
//   sdk.url                                            // base URL; card at /.well-known/agent-card.json
//   await sdk.close();
//
//   node dist/test/support/sdk-sample-server.js --port 4200     (standalone, for trying it by hand)
//
// Skills (message.metadata.skillId, default echo; a reply into a task continues that task's skill):
// - `echo`: Task submitted → working → artifact "echo" with the text → completed (final).
// - `ask`:  first message → input-required (final) with the question "What is your name?" as the
//           status message; a reply → artifact "greeting" "Hello, <reply>!" → completed.
// Streaming on, push notifications off, no authentication (an Authorization header is ignored).
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import express from 'express';
import type { AgentCard, Message, Part, TaskState, TaskStatusUpdateEvent } from 'a2a-js-sdk-v03';
import {
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
} from 'a2a-js-sdk-v03/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from 'a2a-js-sdk-v03/server/express';

export const SAMPLE_QUESTION = 'What is your name?';

export interface SdkSampleServer {
  /** `http://127.0.0.1:<port>`: the base URL the card is found under. */
  url: string;
  port: number;
  close(): Promise<void>;
}

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

const agentMessage = (ctx: RequestContext, parts: Part[]): Message => ({
  kind: 'message',
  role: 'agent',
  messageId: randomUUID(),
  taskId: ctx.taskId,
  contextId: ctx.contextId,
  parts,
});

const textOf = (m: Message): string =>
  m.parts
    .map((p) => (p.kind === 'text' ? p.text : p.kind === 'data' ? JSON.stringify(p.data) : ''))
    .join(' ')
    .trim();

/** A new task is announced as a Task event first; the SDK folds later events into it. */
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

function ask(ctx: RequestContext, bus: ExecutionEventBus): void {
  if (ctx.task?.status.state === 'input-required') {
    const name = textOf(ctx.userMessage) || 'stranger';
    bus.publish(status(ctx, 'working', false));
    bus.publish({
      kind: 'artifact-update',
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      artifact: { artifactId: 'greeting', name: 'greeting', parts: [{ kind: 'text', text: `Hello, ${name}!` }] },
      lastChunk: true,
    });
    bus.publish(status(ctx, 'completed', true));
    return;
  }
  publishSubmitted(ctx, bus, 'ask');
  bus.publish(status(ctx, 'input-required', true, agentMessage(ctx, [{ kind: 'text', text: SAMPLE_QUESTION }])));
}

const executor: AgentExecutor = {
  async execute(ctx, bus) {
    // A reply into a parked task continues that task's skill, whatever its own metadata says.
    const skill = ctx.task ? ctx.task.metadata?.skillId : ctx.userMessage.metadata?.skillId;
    if (skill === 'ask') ask(ctx, bus);
    else echo(ctx, bus);
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish({
      kind: 'status-update',
      taskId,
      contextId: randomUUID(),
      status: { state: 'canceled', timestamp: now() },
      final: true,
    });
    bus.finished();
  },
};

export async function startSdkSampleServer(opts: { port?: number } = {}): Promise<SdkSampleServer> {
  const card: AgentCard = {
    name: 'sdk-sample',
    description: 'A plain @a2a-js/sdk 0.3.14 agent (express, InMemoryTaskStore) for client tests',
    url: 'http://127.0.0.1/a2a/jsonrpc', // set to the real port once listening
    preferredTransport: 'JSONRPC',
    protocolVersion: '0.3.0',
    version: '0.0.0',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'echo', name: 'echo', description: 'Echoes the text back as an artifact', tags: ['sample'] },
      {
        id: 'ask',
        name: 'ask',
        description: `Asks "${SAMPLE_QUESTION}" (input-required), then greets`,
        tags: ['sample'],
      },
    ],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(opts.port ?? 0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  // The handler keeps this object: the card now names the absolute endpoint clients post to.
  card.url = `${url}/a2a/jsonrpc`;
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Standalone only when asked for a port: `node --test` runs every file under test/ as a script.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--port')) {
  const raw = process.argv[process.argv.indexOf('--port') + 1];
  const port = Number(raw);
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port must be a port number, got '${raw}'\n`);
    process.exit(2);
  }
  const srv = await startSdkSampleServer({ port });
  process.stdout.write(`sdk sample agent listening on ${srv.url}\n`);
  process.on('SIGTERM', () => void srv.close().then(() => process.exit(0)));
  process.on('SIGINT', () => void srv.close().then(() => process.exit(0)));
}
