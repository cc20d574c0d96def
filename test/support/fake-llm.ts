// A local stand-in for a hosted model: an OpenAI-compatible Chat Completions endpoint
// (`POST /v1/chat/completions`) on loopback HTTP or HTTPS (the test CA), speaking the real wire
// format, scripted per test. Built on the test receiver, which records every request.
//
//   const llm = await startFakeLlm({ apiKey: 'sk-test' });      // { tls: true } for HTTPS
//   llm.script({ content: '{"ok":true}' }, { status: 429, headers: { 'retry-after': '2' } });
//   ... POST llm.baseUrl + '/chat/completions'
//   assert.equal(llm.requests()[0]!.body.model, 'gpt-test'); await llm.close();
import { type Behaviour, type ReceivedRequest, startHttpsReceiver } from './https-receiver.js';

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One scripted answer. Without `status`, `raw` or `bodyBytes` it is a normal chat.completion. */
export interface FakeReply {
  /** The assistant's message (default: "ok"). */
  content?: string | null;
  /** Default "stop". */
  finishReason?: string;
  /** Default: counted from the words of the request and of the reply. */
  usage?: FakeUsage;
  /** An error status; the body is OpenAI's error object with `errorMessage`. */
  status?: number;
  errorMessage?: string;
  headers?: Record<string, string>;
  /** Sent as the body instead of a completion (e.g. invalid JSON), as application/json. */
  raw?: string;
  /** A huge body (this many bytes, streamed). */
  bodyBytes?: number;
  /** Wait before answering, or never answer. */
  delayMs?: number;
  hang?: boolean;
}

export interface FakeLlmRequest {
  method: string;
  path: string;
  headers: ReceivedRequest['headers'];
  /** The parsed JSON body (model, messages, temperature, …). */
  body: Record<string, any>;
}

export interface FakeLlm {
  /** What a client puts before `/chat/completions`, e.g. `http://127.0.0.1:4321/v1`. */
  baseUrl: string;
  port: number;
  caPem: string;
  /** Queue replies, one per request, in order; an unscripted request is answered "ok". */
  script(...replies: FakeReply[]): void;
  requests(): FakeLlmRequest[];
  /** Forget the requests and the script (between tests). */
  reset(): void;
  close(): Promise<void>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function parsed(req: ReceivedRequest): FakeLlmRequest {
  let body: Record<string, any> = {};
  try {
    body = JSON.parse(req.body) as Record<string, any>;
  } catch {
    // left empty; the endpoint answers 400 below
  }
  return { method: req.method, path: req.path, headers: req.headers, body };
}

const errorBody = (status: number, message: string, code: string | null = null) => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } }),
});

function completion(req: FakeLlmRequest, reply: FakeReply, id: number): Behaviour {
  const content = reply.content === undefined ? 'ok' : reply.content;
  const promptTokens = (req.body.messages as Array<{ content?: string }>).reduce(
    (n, m) => n + words(String(m.content ?? '')),
    0,
  );
  const completionTokens = words(content ?? '');
  const body = {
    id: `chatcmpl-fake${id}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: req.body.model,
    system_fingerprint: null,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null },
        logprobs: null,
        finish_reason: reply.finishReason ?? 'stop',
      },
    ],
    usage: reply.usage ?? {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
  };
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

function behaviour(req: FakeLlmRequest, reply: FakeReply, id: number): Behaviour {
  const timing = { ...(reply.delayMs ? { delayMs: reply.delayMs } : {}), ...(reply.hang ? { hang: true } : {}) };
  const json = { 'content-type': 'application/json' };
  let answer: Behaviour;
  if (reply.status !== undefined) answer = errorBody(reply.status, reply.errorMessage ?? `status ${reply.status}`);
  else if (reply.raw !== undefined) answer = { status: 200, headers: json, body: reply.raw };
  else if (reply.bodyBytes !== undefined) answer = { status: 200, headers: json, bodyBytes: reply.bodyBytes };
  else answer = completion(req, reply, id);
  return { ...answer, ...timing, headers: { ...answer.headers, ...reply.headers } };
}

export async function startFakeLlm(opts: { tls?: boolean; apiKey?: string } = {}): Promise<FakeLlm> {
  const rx = await startHttpsReceiver({ tls: opts.tls ?? false });
  const queue: FakeReply[] = [];
  let served = 0;
  rx.behave((raw) => {
    const req = parsed(raw);
    if (req.method !== 'POST' || req.path !== '/v1/chat/completions') {
      return errorBody(404, `Invalid URL (${req.method} ${req.path})`);
    }
    const presented = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (opts.apiKey !== undefined && presented !== opts.apiKey) {
      // OpenAI quotes (most of) the key it was given; this one quotes all of it, to test redaction.
      return errorBody(401, `Incorrect API key provided: ${presented}`, 'invalid_api_key');
    }
    if (typeof req.body.model !== 'string' || !Array.isArray(req.body.messages)) {
      return errorBody(400, 'model and messages are required');
    }
    return behaviour(req, queue.shift() ?? {}, ++served);
  });
  return {
    baseUrl: rx.urlFor('127.0.0.1', '/v1'),
    port: rx.port,
    caPem: rx.caPem,
    script: (...replies) => {
      queue.push(...replies);
    },
    requests: () => rx.requests.map(parsed),
    reset: () => {
      rx.requests.length = 0;
      rx.responses.length = 0;
      queue.length = 0;
    },
    close: () => rx.close(),
  };
}
