// The ceiling: plain node:http answering the same JSON-RPC bodies as the SDK baseline, with no
// store beyond a Map and no framework. Whatever Handoff does on top of this (validation,
// durability, streams) shows up as the gap between it and this server.
//
//   node dist/bench/baselines/bare-server.js --port 4101
//
// message/send → completed echo Task (same shape and size as the SDK's); approval skill →
// input-required, then a reply {taskId, data {action:'accept'}} → completed; tasks/get → stored Task.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parsePort } from './args.js';

type Json = Record<string, unknown>;
interface Part {
  kind: string;
  text?: string;
  data?: Json;
}
interface Message {
  kind: 'message';
  role: string;
  messageId: string;
  parts: Part[];
  taskId?: string;
  contextId?: string;
  metadata?: Json;
}
interface Task {
  kind: 'task';
  id: string;
  contextId: string;
  status: { state: string; timestamp: string; message?: Message };
  history: Message[];
  artifacts?: Json[];
  metadata: Json;
}

const port = parsePort(process.argv);
const base = `http://127.0.0.1:${port}`;
const tasks = new Map<string, Task>();

const card = JSON.stringify({
  name: 'bench-bare',
  description: 'Benchmark ceiling: bare node:http, tasks in a Map',
  url: `${base}/a2a/jsonrpc`,
  preferredTransport: 'JSONRPC',
  protocolVersion: '0.3.0',
  version: '0.0.0',
  capabilities: { streaming: false, pushNotifications: false },
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [
    { id: 'echo', name: 'echo', description: 'Echoes the text back as an artifact', tags: ['bench'] },
    { id: 'approval', name: 'approval', description: 'Waits for {action:"accept"}', tags: ['bench'] },
  ],
});

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const now = (): string => new Date().toISOString();

function newTask(message: Message, skillId: string): Task {
  const id = randomUUID();
  const contextId = message.contextId ?? randomUUID();
  const user = { ...message, taskId: id, contextId };
  return {
    kind: 'task',
    id,
    contextId,
    status: { state: 'submitted', timestamp: now() },
    history: [user],
    metadata: { skillId },
  };
}

function echo(message: Message): Task {
  const task = newTask(message, 'echo');
  const text = message.parts.map((p) => p.text ?? '').join('');
  task.status = { state: 'completed', timestamp: now() };
  task.artifacts = [{ artifactId: 'echo', name: 'echo', parts: [{ kind: 'text', text }] }];
  return task;
}

function askApproval(message: Message): Task {
  const task = newTask(message, 'approval');
  const ask: Message = {
    kind: 'message',
    role: 'agent',
    messageId: randomUUID(),
    taskId: task.id,
    contextId: task.contextId,
    parts: [{ kind: 'text', text: 'Approve this request? Reply with data {action:"accept"}.' }],
  };
  task.status = { state: 'input-required', timestamp: now(), message: ask };
  task.history.push(ask);
  return task;
}

function reply(message: Message, taskId: string): Task {
  const task = tasks.get(taskId);
  if (!task) throw new RpcError(-32001, `Task not found: ${taskId}`);
  if (task.status.state !== 'input-required') throw new RpcError(-32600, `Task ${taskId} is ${task.status.state}`);
  task.history.push({ ...message, contextId: task.contextId });
  const action = message.parts.find((p) => p.kind === 'data')?.data?.action;
  task.status = { state: action === 'accept' ? 'completed' : 'rejected', timestamp: now() };
  return task;
}

function send(params: Json): Task {
  const message = params.message as Message | undefined;
  if (!message || !Array.isArray(message.parts)) throw new RpcError(-32602, 'params.message is required');
  if (message.taskId) return reply(message, message.taskId);
  const task = message.metadata?.skillId === 'approval' ? askApproval(message) : echo(message);
  tasks.set(task.id, task);
  return task;
}

function get(params: Json): Task {
  const task = tasks.get(String(params.id));
  if (!task) throw new RpcError(-32001, `Task not found: ${String(params.id)}`);
  const n = params.historyLength;
  return typeof n === 'number' ? { ...task, history: n > 0 ? task.history.slice(-n) : [] } : task;
}

function dispatch(method: unknown, params: Json): Task {
  if (method === 'message/send') return send(params);
  if (method === 'tasks/get') return get(params);
  throw new RpcError(-32601, `Method not found: ${String(method)}`);
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function rpc(res: ServerResponse, raw: string): void {
  let req: Json;
  try {
    req = JSON.parse(raw) as Json;
  } catch {
    answer(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    return;
  }
  const id = req.id ?? null;
  try {
    const result = dispatch(req.method, (req.params ?? {}) as Json);
    answer(res, 200, { jsonrpc: '2.0', id, result });
  } catch (err) {
    const code = err instanceof RpcError ? err.code : -32603;
    answer(res, 200, { jsonrpc: '2.0', id, error: { code, message: (err as Error).message } });
  }
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end(card);
  }
  if (req.method !== 'POST' || req.url !== '/a2a/jsonrpc') {
    res.writeHead(404);
    return void res.end();
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => rpc(res, Buffer.concat(chunks).toString('utf8')));
}

const server = createServer(handle);
server.listen(port, '127.0.0.1', () => console.log(`bare baseline listening on ${base}`));
process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
