// A peer that is sometimes unavailable: a plain node:http proxy on 127.0.0.1 in front of an A2A
// agent. GETs (its card) are forwarded with the agent's address rewritten to the proxy's, so every
// call goes through the proxy; each POST first takes the next planned fault (an HTTP status with
// an optional Retry-After) and, once the plan is used up, is forwarded. `always` answers every POST
// with that fault (a peer that never recovers). `cutStreams` makes a peer that closes every stream
// (subscription) it opens right after its first event: the agent's task as it is. `loseSends`
// forwards that many sends (message/send, SendMessage) and answers each with a 503 instead of the
// agent's answer: the task is made, its answer lost. `rewrite` edits each forwarded POST body (a
// peer that answers about something else than it was asked).
//
//   const proxy = await startFlakyProxy(agent.url, { faults: [{ status: 503, retryAfter: '1' }] });
//   const cutting = await startFlakyProxy(agent.url, { cutStreams: true }); cutting.streams // opened
//   const lossy = await startFlakyProxy(agent.url, { loseSends: Infinity }); lossy.lost // answers lost
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Fault {
  status: number;
  /** Retry-After header value (seconds), if any. */
  retryAfter?: string;
}

export interface FlakyProxy {
  url: string;
  /** Faults answered so far. */
  faulted: number;
  /** POSTs forwarded to the agent so far. */
  forwarded: number;
  /** Streams (requests accepting text/event-stream) opened so far. */
  streams: number;
  /** Sends forwarded whose answer was replaced by a 503 (loseSends). */
  lost: number;
  close(): Promise<void>;
}

const readBody = async (req: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
};

const HOP_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

/** A message send, in either binding: a JSON-RPC method, or the HTTP+JSON route. */
const isSend = (path: string | undefined, body: string): boolean => {
  if (path?.endsWith('/message:send')) return true;
  try {
    const method = (JSON.parse(body) as { method?: unknown }).method;
    return method === 'message/send' || method === 'SendMessage';
  } catch {
    return false;
  }
};

export async function startFlakyProxy(
  upstream: string,
  plan: {
    faults?: Fault[];
    always?: Fault;
    cutStreams?: boolean;
    loseSends?: number;
    rewrite?: (body: string) => string;
  },
): Promise<FlakyProxy> {
  const faults = [...(plan.faults ?? [])];
  let self = '';
  const proxy: FlakyProxy = { url: '', faulted: 0, forwarded: 0, streams: 0, lost: 0, close: async () => {} };
  const server = createServer(async (req, res) => {
    try {
      const raw = (await readBody(req)).toString('utf8');
      const body = req.method === 'POST' && plan.rewrite ? plan.rewrite(raw) : raw;
      const fault = req.method === 'POST' ? (plan.always ?? faults.shift()) : undefined;
      if (fault) {
        proxy.faulted++;
        const headers = fault.retryAfter ? { 'retry-after': fault.retryAfter } : {};
        res.writeHead(fault.status, { 'content-type': 'text/plain', ...headers }).end('unavailable');
        return;
      }
      if (req.method === 'POST') proxy.forwarded++;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !HOP_HEADERS.has(k)) headers[k] = v;
      const stream = String(req.headers.accept).includes('text/event-stream');
      if (stream) proxy.streams++;
      const upstreamStop = new AbortController();
      const answer = await fetch(`${upstream}${req.url}`, {
        method: req.method ?? 'GET',
        headers,
        ...(req.method === 'POST' ? { body } : {}),
        signal: upstreamStop.signal,
      });
      if (stream && plan.cutStreams && answer.body) {
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/event-stream' });
        res.end(await firstEvent(answer.body));
        upstreamStop.abort();
        return;
      }
      if (req.method === 'POST' && proxy.lost < (plan.loseSends ?? 0) && isSend(req.url, raw)) {
        proxy.lost++;
        await answer.body?.cancel();
        res.writeHead(503, { 'content-type': 'text/plain' }).end('the answer was lost');
        return;
      }
      // The card names the agent's own address; the proxy's stands in for it.
      const text = (await answer.text()).replaceAll(upstream, self);
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      res.end(text);
    } catch (err) {
      res.writeHead(502).end(String(err));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  self = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.url = self;
  proxy.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return proxy;
}

/** The stream's bytes up to the end of its first SSE event (a blank line). */
async function firstEvent(body: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of body) {
    text += decoder.decode(chunk, { stream: true });
    const end = text.indexOf('\n\n');
    if (end >= 0) return text.slice(0, end + 2);
  }
  return text;
}
