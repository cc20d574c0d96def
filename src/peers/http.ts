// The `fetch` the A2A SDK is given: every request to a peer goes through undici with one of
// Handoff's dispatchers, and this is where HTTP-level answers become PeerErrors before the SDK
// sees them (the SDK reports most of them as bare Errors with the status in the message text).
//
//   const fetchImpl = peerFetch({ dispatcher, timeoutMs, policy });   // policy: input-derived peers
import { fetch as undiciFetch, type Dispatcher, Response } from 'undici';
import { checkPushUrl, type EgressPolicy } from '../egress/address.js';
import { parseRetryAfter } from '../egress/retry-after.js';
import { INVALID_AGENT_RESPONSE, peerError, refusedError, transportError } from './errors.js';

export interface PeerFetchOptions {
  dispatcher: Dispatcher;
  /** Bounds a request the SDK sends without a signal (the agent card). */
  timeoutMs: number;
  /** Set for URLs that came from run input: each URL must pass the egress guard's URL check. */
  policy?: EgressPolicy;
}

/** A non-streaming answer larger than this is refused (SSE events are bounded by the SDK, 4 MiB each). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** How much of an error answer is read to find a JSON-RPC or REST error object in it. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** A URL for messages: origin and path, no query (it could carry something private). */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return u.origin + u.pathname;
  } catch {
    return 'an invalid URL';
  }
}

/**
 * The offline arm of the egress guard, for URLs that came from run input: https only, no
 * credentials, no private, loopback, link-local or denied host (the dispatcher checks again at dial).
 */
export function checkInputUrl(url: string, policy: EgressPolicy): void {
  const verdict = checkPushUrl(url, policy);
  if (verdict.ok) return;
  const reason = verdict.code === 'insecure_scheme' ? 'a URL from run input must use https' : verdict.reason;
  throw refusedError(`${shownUrl(url)}: ${reason}`);
}

export function peerFetch(opts: PeerFetchOptions): typeof fetch {
  const call = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' || input instanceof URL ? String(input) : input.url;
    const what = `${init?.method ?? 'GET'} ${shownUrl(url)}`;
    if (opts.policy) checkInputUrl(url, opts.policy);
    const res = await undiciFetch(url, {
      ...(init as object),
      dispatcher: opts.dispatcher,
      // A redirect could lead anywhere (and carry the bearer token there): never followed.
      redirect: 'manual',
      signal: init?.signal ?? AbortSignal.timeout(opts.timeoutMs),
    });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      throw refusedError(`${what}: the peer answered HTTP ${res.status} (a redirect, not followed)`);
    }
    if (res.status === 429 || res.status >= 500) {
      await res.body?.cancel();
      throw transportError(`${what}: HTTP ${res.status}`, parseRetryAfter(res.headers.get('retry-after') ?? undefined));
    }
    if (res.status >= 400) return errorAnswer(res, what);
    return bounded(res, what);
  };
  return call as unknown as typeof fetch;
}

/**
 * A 4xx that carries a JSON-RPC or REST error object goes on to the SDK, which turns it into a
 * typed A2A error; anything else is the HTTP status itself.
 */
async function errorAnswer(res: Response, what: string): Promise<Response> {
  const text = await readText(res, MAX_ERROR_BODY_BYTES);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = (body as { error?: unknown } | undefined)?.error;
  if (error !== null && typeof error === 'object') {
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  throw peerError(res.status, `${what}: HTTP ${res.status}`);
}

async function readText(res: Response, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    chunks.push(Buffer.from(chunk));
    size += chunk.byteLength;
    if (size >= limit) break;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** Streams pass through; any other answer is cut off (as an invalid answer) past MAX_ANSWER_BYTES. */
function bounded(res: Response, what: string): Response {
  if (!res.body || res.headers.get('content-type')?.startsWith('text/event-stream')) return res;
  let size = 0;
  const limit = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > MAX_ANSWER_BYTES) {
        controller.error(peerError(INVALID_AGENT_RESPONSE, `${what}: answer larger than ${MAX_ANSWER_BYTES} bytes`));
        return;
      }
      controller.enqueue(chunk);
    },
  });
  return new Response(res.body.pipeThrough(limit), {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}
