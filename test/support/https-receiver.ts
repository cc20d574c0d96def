// A loopback HTTPS receiver for tests (webhooks, outbound calls, the fake LLM), with a throw-away
// CA made by `openssl` at test time (no key material is committed). Its certificate covers
// `receiver.test`, any `*.handoff.test` name and 127.0.0.1. `{ tls: false }` serves plain HTTP.
//
//   const rx = await startHttpsReceiver();
//   rx.behave({ status: 503, headers: { 'retry-after': '7' } });
//   ... deliver to rx.url (or rx.urlFor('receiver.test') with a resolver mapping it to 127.0.0.1)
//   assert.equal(rx.requests.length, 1); await rx.close();
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';

export interface TestCerts {
  caPem: string;
  keyPem: string;
  certPem: string;
}

let cached: TestCerts | undefined;

/** One CA + server certificate per process; openssl is fast but not free. */
export function generateTestCerts(): TestCerts {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'handoff-certs-'));
  const ossl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    ossl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=Handoff Test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
    ossl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=receiver.test');
    writeFileSync(
      join(dir, 'ext.cnf'),
      [
        'subjectAltName=DNS:receiver.test,DNS:*.handoff.test,IP:127.0.0.1',
        'basicConstraints=CA:FALSE',
        'extendedKeyUsage=serverAuth',
      ].join('\n'),
    );
    ossl(
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.pem',
      '-days',
      '2',
      '-extfile',
      'ext.cnf',
    );
    const read = (f: string) => readFileSync(join(dir, f), 'utf8');
    cached = { caPem: read('ca.pem'), keyPem: read('server.key'), certPem: read('server.pem') };
    return cached;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** SNI the client sent (undefined when it dialled an IP literal). */
  servername: string | undefined;
}

export interface Behaviour {
  status?: number;
  delayMs?: number;
  /** Destroy the connection instead of answering. */
  reset?: boolean;
  /** Never answer (the connection stays open until the receiver closes). */
  hang?: boolean;
  /** Sets `Location` (pair with a 3xx status). */
  location?: string;
  headers?: Record<string, string>;
  /** Stream this many bytes of body (chunked, no Content-Length). */
  bodyBytes?: number;
  /** The response body. */
  body?: string;
}

export interface ResponseRecord {
  /** True once the whole response was handed to the kernel. */
  finished: boolean;
  bytesWritten: number;
}

export interface HttpsReceiver {
  url: string;
  port: number;
  caPem: string;
  requests: ReceivedRequest[];
  responses: ResponseRecord[];
  urlFor(host: string, path?: string): string;
  behave(b: Behaviour | ((req: ReceivedRequest) => Behaviour)): void;
  close(): Promise<void>;
}

async function streamBody(res: ServerResponse, total: number, rec: ResponseRecord): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  while (rec.bytesWritten < total && !res.destroyed) {
    const piece = chunk.subarray(0, Math.min(chunk.length, total - rec.bytesWritten));
    rec.bytesWritten += piece.length;
    if (!res.write(piece))
      await new Promise((r) => {
        res.once('drain', r);
        res.once('close', r);
      });
  }
  if (!res.destroyed)
    res.end(() => {
      rec.finished = true;
    });
}

export async function startHttpsReceiver(opts: { host?: string; tls?: boolean } = {}): Promise<HttpsReceiver> {
  const certs = generateTestCerts();
  const requests: ReceivedRequest[] = [];
  const responses: ResponseRecord[] = [];
  let behaviour: Behaviour | ((req: ReceivedRequest) => Behaviour) = { status: 200 };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec: ReceivedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      servername: (req.socket as TLSSocket).servername || undefined,
    };
    requests.push(rec);
    const b = typeof behaviour === 'function' ? behaviour(rec) : behaviour;
    // unref: a delayed answer nobody waits for any more must not hold the test process open.
    if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs).unref());
    if (b.reset) return req.socket.destroy();
    if (b.hang) return;
    const headers: Record<string, string> = { ...b.headers, ...(b.location ? { location: b.location } : {}) };
    res.writeHead(b.status ?? 200, headers);
    const out: ResponseRecord = { finished: false, bytesWritten: 0 };
    responses.push(out);
    if (b.bodyBytes) return streamBody(res, b.bodyBytes, out);
    res.end(b.body ?? '', () => {
      out.finished = true;
    });
  };

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch(() => res.destroy());
  };
  const tls = opts.tls ?? true;
  const server: Server = tls
    ? createHttpsServer({ key: certs.keyPem, cert: certs.certPem }, listener)
    : createHttpServer(listener);
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${tls ? 'https' : 'http'}://${host}:${port}/`,
    port,
    caPem: certs.caPem,
    requests,
    responses,
    urlFor: (h, path = '/') => `${tls ? 'https' : 'http'}://${h}:${port}${path}`,
    behave: (b) => {
      behaviour = b;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
