// A hostile A2A 0.3 agent (plain node:http, JSON-RPC) that echoes the bearer token it is sent, in
// every spelling a careless server could: raw, percent-encoded in a URL, form-encoded, in Basic
// credentials (base64), and inside a JSON text that escapes `/` as `\/` (PHP's default). Where
// it echoes depends on the skill of the message:
//
//   fail   the task fails, the echo its status message
//   ask    the task asks for input (input-required), the echo its question
//   done   the task completes, the echo in an artifact (a text part and a data part)
//   error  a JSON-RPC error whose message is the echo; the whole answer escapes `/` as `\/`
//
//   const peer = await startLeakyPeer();     // HANDOFF_AGENTS=leaky=<peer.url>, HANDOFF_AGENT_TOKEN_LEAKY=…
//   peer.tokens                              // every Authorization header it was sent
//   await peer.close();
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LeakyPeer {
  url: string;
  /** The bearer tokens of every request received (the card's included), oldest first. */
  tokens: string[];
  close(): Promise<void>;
}

/** What the peer says back about a token: every careless spelling of it in one text. */
export function echoOf(token: string): string {
  return [
    `you sent Bearer ${token}`,
    `your callback https://peer.test/cb?t=${encodeURIComponent(token)}&f=${new URLSearchParams({ t: token })}`,
    `as Basic ${Buffer.from(`user:${token}`).toString('base64')}`,
    `upstream said ${phpJson({ auth: `Bearer ${token}` })}`,
  ].join('; ');
}

/** JSON as PHP's json_encode writes it by default: `/` escaped as `\/`. */
const phpJson = (value: unknown): string => JSON.stringify(value).replaceAll('/', '\\/');

type Task = Record<string, unknown> & { id: string };

export async function startLeakyPeer(): Promise<LeakyPeer> {
  const tokens: string[] = [];
  const tasks = new Map<string, Task>();
  let url = '';

  const card = () => ({
    name: 'leaky',
    description: 'echoes the credentials it is sent',
    url: `${url}/a2a`,
    preferredTransport: 'JSONRPC',
    protocolVersion: '0.3.0',
    version: '0.0.0',
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: ['fail', 'ask', 'done', 'error'].map((id) => ({ id, name: id, description: id, tags: ['leak'] })),
  });

  const taskFor = (skill: string, contextId: string, echo: string): Task => {
    const id = randomUUID();
    const says = (text: string) => ({
      kind: 'message',
      role: 'agent',
      messageId: randomUUID(),
      taskId: id,
      contextId,
      parts: [{ kind: 'text', text }],
    });
    const timestamp = new Date().toISOString();
    const base = { kind: 'task', id, contextId, history: [], metadata: { skillId: skill } };
    if (skill === 'fail') return { ...base, status: { state: 'failed', message: says(echo), timestamp } };
    if (skill === 'ask') return { ...base, status: { state: 'input-required', message: says(echo), timestamp } };
    const parts = [
      { kind: 'text', text: echo },
      { kind: 'data', data: { echo } },
    ];
    return { ...base, status: { state: 'completed', timestamp }, artifacts: [{ artifactId: 'echo', parts }] };
  };

  const answer = (req: IncomingMessage, rpc: { id: unknown; method: string; params?: any }) => {
    const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (rpc.method === 'message/send') {
      const message = rpc.params?.message ?? {};
      const skill = String(message.metadata?.skillId ?? 'done');
      if (skill === 'error') return { id: rpc.id, error: { code: -32602, message: echoOf(token) } };
      const task = taskFor(skill, String(message.contextId || randomUUID()), echoOf(token));
      tasks.set(task.id, task);
      return { id: rpc.id, result: task };
    }
    if (rpc.method === 'tasks/get' || rpc.method === 'tasks/cancel') {
      const task = tasks.get(String(rpc.params?.id));
      return task ? { id: rpc.id, result: task } : { id: rpc.id, error: { code: -32001, message: 'Task not found' } };
    }
    return { id: rpc.id, error: { code: -32601, message: 'Method not found' } };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    tokens.push(String(req.headers.authorization ?? '').replace(/^Bearer /, ''));
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card()));
      return;
    }
    if (req.method !== 'POST' || req.url !== '/a2a') {
      res.writeHead(404).end();
      return;
    }
    const reply = { jsonrpc: '2.0', ...answer(req, JSON.parse(Buffer.concat(chunks).toString('utf8'))) };
    res.writeHead(200, { 'content-type': 'application/json' }).end(phpJson(reply));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    tokens,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
