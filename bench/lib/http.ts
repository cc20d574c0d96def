// The harness's one HTTP client outside autocannon's load (lib/load.ts): set-up calls, probes,
// /metrics scrapes and the workloads driven in code (push, cluster). node:http, an optional JSON
// body, the whole answer as text. Without an `agent` every request has its own connection
// (Connection: close), so no pooled socket lingers in a server's counts; with a keep-alive Agent it
// serves as a load client.
import { type Agent, request } from 'node:http';
import { request as requestTls } from 'node:https';

export interface HttpAnswer {
  status: number;
  text: string;
}

export interface HttpOptions {
  /** Sent as JSON. */
  body?: unknown;
  agent?: Agent;
  timeoutMs?: number;
  /** Extra request headers (e.g. `A2A-Version: 1.0`). */
  headers?: Record<string, string>;
}

// Certificate authorities an https URL is checked against (a scenario's test CA), beside none:
// the bench only ever talks https to servers it started with a certificate of its own CA.
let trusted: string[] = [];

/** Trust this CA (PEM) for every https request of this process, readiness probes included. */
export function trustCa(pem: string): void {
  trusted = [...trusted, pem];
}

export function http(method: 'GET' | 'POST', url: string, opts: HttpOptions = {}): Promise<HttpAnswer> {
  const data = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const headers: Record<string, string> = {
    ...(data === undefined
      ? {}
      : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) }),
    ...opts.headers,
  };
  return new Promise((resolve, reject) => {
    const tls = url.startsWith('https:');
    const send = tls ? requestTls : request;
    const options = {
      method,
      agent: opts.agent ?? false,
      timeout: timeoutMs,
      headers,
      ...(tls ? { ca: trusted } : {}),
    };
    const req = send(url, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out after ${timeoutMs} ms`)));
    req.end(data);
  });
}

/** The parsed JSON of an answer, or undefined if it is not JSON. */
export function jsonOf<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
