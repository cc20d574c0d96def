// A deliberately broken RFC 0100 host for `handoff conformance` tests: plain node:http on
// 127.0.0.1, no Handoff code. It advertises a2a {durableTasks, pushNotifications, streaming} and
// serves the discovery document, an A2A 0.3 card, the host-sample seams, JSON-RPC (tasks/get,
// tasks/cancel, message/stream, tasks/resubscribe) and an OpenWOP-style event log — correctly,
// except for the one defect its variant names:
//
//   'ok'    no defect: the control that shows the fixture itself passes every leg
//   'A'     the paused task's persisted record is a stale 'working' (no interruptKind), and
//           tasks/get reports it too
//   'B'     the push guard has no scheme arm: http:// push URLs are accepted (200)
//   'C'     tasks/resubscribe answers with a NEW task id (Task and updates)
//   'D'     tasks/resubscribe restarts the run: a second run.started lands in the event log
//   'sync'  advertises a2a {supported, agentCardUrl} only (no durable/push/streaming flags) and
//           mounts no seams
//
//   const host = await startBrokenHost('A');     // host.url = http://127.0.0.1:<port>
//   …
//   await host.close();                          // ends open SSE responses too
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type BrokenVariant = 'ok' | 'A' | 'B' | 'C' | 'D' | 'sync';

export interface BrokenHost {
  url: string;
  variant: BrokenVariant;
  /** "METHOD path" of every request, in order. */
  requests: string[];
  close(): Promise<void>;
}

export interface BrokenHostOptions {
  /** Default steps and step length of a streamed task (default 4 × 300 ms). */
  steps?: number;
  stepMs?: number;
}

type State = 'submitted' | 'working' | 'input-required' | 'completed' | 'failed' | 'canceled';
type Json = Record<string, unknown>;

interface Task {
  id: string;
  contextId: string;
  state: State;
  interruptKind?: 'approval';
  updatedAt: string;
  /** The OpenWOP-style event log of the backing run. */
  log: { sequence: number; type: string; timestamp: string }[];
  /** Live stream listeners: (update, final). */
  listeners: Set<(update: Json, final: boolean) => void>;
  timer?: NodeJS.Timeout;
}

const PRIVATE_HOST = /^(localhost|127\.|10\.|192\.168\.|169\.254\.|172\.(1[6-9]|2\d|3[01])\.|0\.|\[?::1\]?$|\[?f[cd])/i;

export async function startBrokenHost(variant: BrokenVariant, opts: BrokenHostOptions = {}): Promise<BrokenHost> {
  const tasks = new Map<string, Task>();
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  let next = 1;
  let url = '';
  const advertiseAll = variant !== 'sync';

  const now = () => new Date().toISOString();
  const newTask = (state: State): Task => {
    const n = next++;
    const t: Task = { id: `task-${n}`, contextId: `ctx-${n}`, state, updatedAt: now(), log: [], listeners: new Set() };
    tasks.set(t.id, t);
    return t;
  };
  const logEvent = (t: Task, type: string) => t.log.push({ sequence: t.log.length, type, timestamp: now() });

  const record = (t: Task): Json => ({
    taskId: t.id,
    runId: t.id,
    contextId: t.contextId,
    state: t.state,
    ...(t.interruptKind ? { interruptKind: t.interruptKind } : {}),
    updatedAt: t.updatedAt,
  });
  const taskView = (t: Task, id = t.id): Json => ({
    kind: 'task',
    id,
    contextId: t.contextId,
    status: { state: t.state, timestamp: t.updatedAt },
    metadata: { openwop: { runId: id, ...(t.interruptKind ? { interrupt: { kind: t.interruptKind } } : {}) } },
  });
  const statusUpdate = (t: Task, final: boolean, id = t.id): Json => ({
    kind: 'status-update',
    taskId: id,
    contextId: t.contextId,
    status: { state: t.state, timestamp: t.updatedAt },
    final,
    metadata: { openwop: { runId: id } },
  });

  const transition = (t: Task, state: State) => {
    t.state = state;
    t.updatedAt = now();
    const final = state === 'completed' || state === 'failed' || state === 'canceled';
    for (const l of [...t.listeners]) l(statusUpdate(t, final), final);
  };

  /** A timer-driven run: working now, a progress update per step, then completed. */
  const runSteps = (t: Task, steps: number, stepMs: number) => {
    logEvent(t, 'run.started');
    transition(t, 'working');
    let done = 0;
    const tick = () => {
      if (t.state !== 'working') return;
      done++;
      logEvent(t, 'node.completed');
      if (done >= steps) {
        logEvent(t, 'run.completed');
        transition(t, 'completed');
        return;
      }
      // A progress update: same state, a fresh timestamp (hosts may send these).
      t.updatedAt = now();
      for (const l of [...t.listeners]) l(statusUpdate(t, false), false);
      t.timer = setTimeout(tick, stepMs);
    };
    t.timer = setTimeout(tick, stepMs);
  };

  const card = (): Json => ({
    protocolVersion: '0.3.0',
    name: `broken-host ${variant}`,
    description: 'A deliberately broken RFC 0100 fixture host',
    url: `${url}/a2a/jsonrpc`,
    version: '0.0.0',
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: advertiseAll, pushNotifications: advertiseAll },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['application/json'],
    skills: [
      { id: 'steps', name: 'Steps', description: 'Counts steps', tags: ['fixture'] },
      { id: 'approval', name: 'Approval', description: 'Waits for approval', tags: ['fixture'] },
    ],
  });

  const discovery = (): Json => ({
    protocolVersion: '1.0',
    supportedEnvelopes: [],
    schemaVersions: {},
    limits: { clarificationRounds: 0, schemaRounds: 0, envelopesPerTurn: 0 },
    supportedTransports: ['rest', 'a2a'],
    a2a: {
      supported: true,
      agentCardUrl: `${url}/.well-known/agent-card.json`,
      ...(advertiseAll ? { durableTasks: true, pushNotifications: true, streaming: true } : {}),
    },
  });

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const pushGuard = (raw: string): { ok: true } | { ok: false; arm: string; reason: string } => {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      return { ok: false, arm: 'syntax', reason: 'not a URL' };
    }
    if (u.protocol !== 'https:' && variant !== 'B')
      return { ok: false, arm: 'scheme', reason: 'push URLs must use https' };
    if (PRIVATE_HOST.test(u.hostname)) return { ok: false, arm: 'address', reason: `${u.hostname} is not public` };
    return { ok: true };
  };

  const openSse = (req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    return (rpcId: unknown, result: Json, eventId?: number) => {
      if (res.writableEnded) return;
      const id = eventId !== undefined ? `id: ${eventId}\n` : '';
      res.write(`${id}data: ${JSON.stringify({ jsonrpc: '2.0', id: rpcId, result })}\n\n`);
    };
  };

  /** Stream `t`'s updates to `res` until a final one (or the client goes). */
  const follow = (req: IncomingMessage, res: ServerResponse, t: Task, write: (r: Json) => void) => {
    const listener = (update: Json, final: boolean) => {
      write(update);
      if (final) {
        t.listeners.delete(listener);
        res.end();
      }
    };
    t.listeners.add(listener);
    res.on('close', () => t.listeners.delete(listener));
  };

  const rpc = (req: IncomingMessage, res: ServerResponse, body: Json) => {
    const id = body.id ?? null;
    const params = (body.params ?? {}) as Json;
    const error = (code: number, message: string) => send(res, 200, { jsonrpc: '2.0', id, error: { code, message } });
    const result = (r: unknown) => send(res, 200, { jsonrpc: '2.0', id, result: r });
    const find = () => tasks.get(String(params.id ?? ''));
    switch (body.method) {
      case 'tasks/get': {
        const t = find();
        return t ? result(taskView(t)) : error(-32001, 'Task not found');
      }
      case 'tasks/cancel': {
        const t = find();
        if (!t) return error(-32001, 'Task not found');
        clearTimeout(t.timer);
        t.interruptKind = undefined;
        logEvent(t, 'run.cancelled');
        transition(t, 'canceled');
        return result(taskView(t));
      }
      case 'message/stream': {
        const msg = (params.message ?? {}) as Json;
        const data = ((msg.parts as Json[] | undefined) ?? []).find((p) => p.kind === 'data')?.data as Json | undefined;
        const steps = typeof data?.steps === 'number' ? data.steps : (opts.steps ?? 4);
        const stepMs = typeof data?.stepMs === 'number' ? data.stepMs : (opts.stepMs ?? 300);
        const t = newTask('submitted');
        const write = openSse(req, res);
        write(id, taskView(t));
        follow(req, res, t, (r) => write(id, r));
        runSteps(t, steps, stepMs);
        return;
      }
      case 'tasks/resubscribe': {
        const t = find();
        if (!t) return error(-32001, 'Task not found');
        const write = openSse(req, res);
        if (variant === 'C') {
          // The defect: the re-attached stream speaks for a task id the caller never saw.
          const other = `task-${next++}`;
          write(id, taskView(t, other));
          const listener = (update: Json, final: boolean) => {
            write(id, { ...update, taskId: other, metadata: { openwop: { runId: other } } });
            if (final) {
              t.listeners.delete(listener);
              res.end();
            }
          };
          t.listeners.add(listener);
          res.on('close', () => t.listeners.delete(listener));
          return;
        }
        // The defect of D: re-attaching starts the run again (a second run.started).
        if (variant === 'D') logEvent(t, 'run.started');
        write(id, taskView(t));
        if (t.state === 'completed' || t.state === 'failed' || t.state === 'canceled') return void res.end();
        follow(req, res, t, (r) => write(id, r));
        return;
      }
      default:
        return error(-32601, `Method not found: ${String(body.method)}`);
    }
  };

  const route = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const u = new URL(req.url ?? '/', 'http://fixture');
    const path = u.pathname;
    let body: Json = {};
    if (raw !== '') {
      try {
        body = JSON.parse(raw) as Json;
      } catch {
        return send(res, 400, { error: 'validation_error', message: 'body is not JSON' });
      }
    }
    if (req.method === 'GET' && path === '/.well-known/openwop') return send(res, 200, discovery());
    if (req.method === 'GET' && path === '/.well-known/agent-card.json') return send(res, 200, card());
    if (req.method === 'POST' && path === '/a2a/jsonrpc') return rpc(req, res, body);

    const poll = /^\/v1\/runs\/([^/]+)\/events\/poll$/.exec(path);
    if (req.method === 'GET' && poll) {
      const t = tasks.get(decodeURIComponent(poll[1] ?? ''));
      if (!t) return send(res, 404, { error: 'not_found', message: 'run not found' });
      const after = Number(u.searchParams.get('lastSequence') ?? '-1');
      const events = t.log.filter((e) => e.sequence > after).map((e) => ({ ...e, runId: t.id }));
      const done = t.state === 'completed' || t.state === 'failed' || t.state === 'canceled';
      return send(res, 200, { runId: t.id, events, lastEventSeq: events.at(-1)?.sequence ?? after, isComplete: done });
    }

    if (variant !== 'sync' && path.startsWith('/v1/host/sample/a2a/')) {
      if (req.method === 'POST' && path === '/v1/host/sample/a2a/tasks/start') {
        if (body.scenario !== 'paused-at-approval')
          return send(res, 400, { error: 'validation_error', message: "scenario must be 'paused-at-approval'" });
        const t = newTask('working');
        logEvent(t, 'run.started');
        logEvent(t, 'interrupt.requested');
        if (variant === 'A') {
          // The defect: the run paused, but the persisted projection was never updated.
          t.state = 'working';
        } else {
          t.state = 'input-required';
          t.interruptKind = 'approval';
          t.updatedAt = now();
        }
        return send(res, 201, { taskId: t.id });
      }
      if (req.method === 'POST' && path === '/v1/host/sample/a2a/tasks/push-config') {
        if (typeof body.url !== 'string' || typeof body.taskId !== 'string')
          return send(res, 400, { error: 'validation_error', message: 'taskId and url must be strings' });
        const verdict = pushGuard(body.url);
        if (!verdict.ok)
          return send(res, 400, {
            error: 'a2a_push_egress_denied',
            message: verdict.reason,
            details: { arm: verdict.arm },
          });
        const t = tasks.get(body.taskId);
        if (variant === 'B') {
          // Registers without looking: any URL past the (address-only) guard is "accepted".
          return send(res, 200, {
            taskId: body.taskId,
            runId: body.taskId,
            state: t?.state ?? 'working',
            updatedAt: now(),
            pushConfig: { url: body.url },
          });
        }
        if (!t) return send(res, 404, { error: 'not_found', message: `task ${body.taskId} not found` });
        return send(res, 200, { ...record(t), pushConfig: { url: body.url } });
      }
      const read = /^\/v1\/host\/sample\/a2a\/tasks\/([^/]+)$/.exec(path);
      if (req.method === 'GET' && read) {
        const t = tasks.get(decodeURIComponent(read[1] ?? ''));
        return t ? send(res, 200, record(t)) : send(res, 404, { error: 'not_found', message: 'task not found' });
      }
    }
    return send(res, 404, { error: 'not_found', message: `${req.method} ${path}` });
  };

  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        route(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        if (!res.headersSent) send(res, 500, { error: 'internal', message: (err as Error).message });
        else res.end();
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  if (typeof addr !== 'object' || !addr) throw new Error('broken host: no address');
  url = `http://127.0.0.1:${addr.port}`;

  return {
    url,
    variant,
    requests,
    close: async () => {
      for (const t of tasks.values()) clearTimeout(t.timer);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
