// A non-Handoff A2A v0.3 agent for client tests: @a2a-js/sdk 0.3.14 + express 5 +
// InMemoryTaskStore, written the way the SDK's own samples are (same approach as
// bench/baselines/sdk-server.ts). It lets the `handoff` client commands and the peer client
// (src/peers/) prove they speak plain A2A, not just Handoff. Its 1.x twin is sdk-v1-agent.ts.
//
//   const sdk = await startSdkSampleServer();          // 127.0.0.1, a free port
//   sdk.url                                            // base URL; card at /.well-known/agent-card.json
//   await sdk.finish(taskId, { state: 'failed', text: 'boom' });   // end a task from the test
//   await sdk.close();
//
//   node dist/test/support/sdk-sample-server.js --port 4200     (standalone, for trying it by hand)
//
// Skills: see peer-skills.ts. Streaming and push notifications on (pushes go wherever the caller
// says, unguarded: tests give loopback receivers), no authentication (an Authorization header is
// ignored). Like the SDK, it does not dedup by messageId: the same message twice makes two tasks.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import express from 'express';
import type { AgentCard, Message, Part, TaskState, TaskStatusUpdateEvent } from 'a2a-js-sdk-v03';
import {
  type AgentExecutor,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type RequestContext,
} from 'a2a-js-sdk-v03/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from 'a2a-js-sdk-v03/server/express';
import {
  listen,
  recordRequests,
  planTurn,
  playTurn,
  type PublishedStep,
  SKILL_IDS,
  SlowTasks,
  type TestAgent,
  type Turn,
} from './peer-skills.js';

export { SAMPLE_QUESTION } from './peer-skills.js';

export interface SdkSampleServer extends TestAgent {
  port: number;
}

export interface SdkSampleServerOptions {
  port?: number;
  /** How long `slow` works when the message does not say (data.ms); default 60 s. */
  slowMs?: number;
}

const now = (): string => new Date().toISOString();

const agentMessage = (taskId: string, contextId: string, text: string): Message => ({
  kind: 'message',
  role: 'agent',
  messageId: randomUUID(),
  taskId,
  contextId,
  parts: [{ kind: 'text', text }],
});

function status(taskId: string, contextId: string, state: TaskState, text?: string): TaskStatusUpdateEvent {
  return {
    kind: 'status-update',
    taskId,
    contextId,
    status: { state, timestamp: now(), ...(text ? { message: agentMessage(taskId, contextId, text) } : {}) },
    final: state !== 'working',
  };
}

const turnOf = (m: Message): Turn => ({
  text: m.parts
    .map((p) => (p.kind === 'text' ? p.text : ''))
    .join(' ')
    .trim(),
  data: m.parts.some((p) => p.kind === 'data')
    ? Object.assign({}, ...m.parts.map((p) => (p.kind === 'data' ? p.data : {})))
    : undefined,
});

function publishStep(ctx: RequestContext, bus: ExecutionEventBus, step: PublishedStep): void {
  if ('status' in step) {
    bus.publish(status(ctx.taskId, ctx.contextId, step.status, step.text));
    return;
  }
  const parts: Part[] = [];
  if (step.text !== undefined) parts.push({ kind: 'text', text: step.text });
  if (step.data !== undefined) parts.push({ kind: 'data', data: step.data });
  bus.publish({
    kind: 'artifact-update',
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    artifact: { artifactId: step.artifact, name: step.artifact, parts },
    lastChunk: true,
  });
}

function executor(slow: SlowTasks, slowMs: number, contexts: Map<string, string>): AgentExecutor {
  return {
    async execute(ctx, bus) {
      const parked = ctx.task?.status.state === 'input-required' || ctx.task?.status.state === 'auth-required';
      // A reply into a parked task continues that task's skill, whatever its own metadata says.
      const skill = String((ctx.task ? ctx.task.metadata?.skillId : ctx.userMessage.metadata?.skillId) ?? 'echo');
      contexts.set(ctx.taskId, ctx.contextId);
      if (!ctx.task) {
        bus.publish({
          kind: 'task',
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: 'submitted', timestamp: now() },
          history: [ctx.userMessage],
          metadata: { skillId: skill },
        });
      }
      const steps = planTurn(skill, parked, turnOf(ctx.userMessage), slowMs);
      await playTurn(steps, slow, ctx.taskId, (step) => publishStep(ctx, bus, step));
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      if (slow.settle(taskId, { state: 'canceled', text: 'canceled by the caller' })) return;
      bus.publish(status(taskId, contexts.get(taskId) ?? randomUUID(), 'canceled', 'canceled by the caller'));
      bus.finished();
    },
  };
}

export async function startSdkSampleServer(opts: SdkSampleServerOptions = {}): Promise<SdkSampleServer> {
  const card: AgentCard = {
    name: 'sdk-sample',
    description: 'A plain @a2a-js/sdk 0.3.14 agent (express, InMemoryTaskStore) for client tests',
    url: 'http://127.0.0.1/a2a/jsonrpc', // set to the real port once listening
    preferredTransport: 'JSONRPC',
    protocolVersion: '0.3.0',
    version: '0.0.0',
    capabilities: { streaming: true, pushNotifications: true },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: SKILL_IDS.map((id) => ({ id, name: id, description: `the ${id} test skill`, tags: ['sample'] })),
  };
  const slow = new SlowTasks();
  const store = new InMemoryTaskStore();
  const pushes = new InMemoryPushNotificationStore();
  const handler = new DefaultRequestHandler(
    card,
    store,
    executor(slow, opts.slowMs ?? 60_000, new Map()),
    undefined,
    pushes,
    new DefaultPushNotificationSender(pushes),
  );
  const app = express();
  const requests = recordRequests(app);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

  const { url, port, close } = await listen(app, slow, opts.port);
  // The handler keeps this object: the card now names the absolute endpoint clients post to.
  card.url = `${url}/a2a/jsonrpc`;
  return {
    url,
    requests,
    port,
    async finish(taskId, ending) {
      if (slow.settle(taskId, ending)) return;
      const task = await store.load(taskId);
      if (!task) throw new Error(`no task ${taskId}`);
      const update = status(taskId, task.contextId, ending.state, ending.text);
      await store.save({ ...task, status: update.status });
    },
    close,
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
