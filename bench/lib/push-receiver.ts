// A loopback HTTPS webhook receiver for the push scenario: a throw-away CA and a server
// certificate for IP 127.0.0.1 made by `openssl` into a temp dir (the CA's PEM file stays there
// for the server's HANDOFF_PUSH_CA_FILE until cleanup()), and a node:https server that records,
// per request, the receipt time (epoch ms, sub-ms precision, taken when the body has been read
// completely — before anything else is done with it), the delivery and task ids, and the pushed
// state and timestamp. It answers 200 with an empty body at once, over keep-alive. TLS handshakes
// and session reuse are counted, so the connection behaviour of the sender is visible too.
//
//   const certs = makePushCerts();                  // certs.caFile → HANDOFF_PUSH_CA_FILE
//   const rx = await startPushReceiver(certs);      // rx.url('/hook')
//   await rx.waitFor(() => rx.receipts.length >= n, 10_000);
//   await rx.close(); certs.cleanup();
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { nowMs } from './clock.js';
import { jsonOf } from './http.js';

export interface PushCerts {
  /** The CA certificate, in a temp dir (holding nothing secret worth keeping) removed by cleanup(). */
  caFile: string;
  keyPem: string;
  certPem: string;
  cleanup(): void;
}

/** CA + server certificate (SAN IP:127.0.0.1), EC P-256, valid 2 days. Throws if openssl fails. */
export function makePushCerts(): PushCerts {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-bench-push-ca-'));
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  const ossl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', timeout: 20_000 });
  };
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
      '/CN=Handoff bench push CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
    ossl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(
      join(dir, 'ext.cnf'),
      ['subjectAltName=IP:127.0.0.1', 'basicConstraints=CA:FALSE', 'extendedKeyUsage=serverAuth'].join('\n'),
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
    const read = (f: string): string => readFileSync(join(dir, f), 'utf8');
    const certs = {
      caFile: join(dir, 'ca.pem'),
      keyPem: read('server.key'),
      certPem: read('server.pem'),
      cleanup,
    };
    // Only the CA certificate has to stay on disk (the server reads it at start-up).
    for (const f of ['ca.key', 'server.key', 'server.csr', 'server.pem', 'ext.cnf', 'ca.srl'])
      rmSync(join(dir, f), { force: true });
    return certs;
  } catch (err) {
    cleanup();
    const e = err as { stderr?: Buffer; message?: string };
    throw new Error(`openssl failed: ${(e.stderr?.toString() || e.message || String(err)).split('\n')[0]}`);
  }
}

/** One received push. */
export interface PushReceipt {
  /** Receipt time: request body fully read (epoch ms, sub-ms). */
  at: number;
  /** Number of the TLS connection it came on (1, 2, … in handshake order). */
  conn: number;
  /** X-Handoff-Delivery-Id header. */
  deliveryId?: string;
  /** X-A2A-Task-Id header. */
  taskId?: string;
  /** From the body (a TaskStatusUpdateEvent): taskId, status.state. */
  bodyTaskId?: string;
  state?: string;
  /** status.timestamp (the transition's commit time) as epoch ms, NaN if absent. */
  commitAt: number;
}

export interface PushReceiver {
  port: number;
  url(path?: string): string;
  receipts: PushReceipt[];
  /** TLS handshakes completed, how many resumed a session, peak simultaneously open connections. */
  stats(): { handshakes: number; resumed: number; openPeak: number; open: number; requests: number };
  /** Resolves true once `done()` holds (checked after every receipt and every 100 ms), false on timeout. */
  waitFor(done: () => boolean, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

export async function startPushReceiver(certs: Pick<PushCerts, 'keyPem' | 'certPem'>): Promise<PushReceiver> {
  const receipts: PushReceipt[] = [];
  const waiters = new Set<() => void>();
  let handshakes = 0;
  let resumed = 0;
  let open = 0;
  let openPeak = 0;
  let requests = 0;
  const connIds = new WeakMap<object, number>();

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = nowMs();
      const raw = Buffer.concat(chunks);
      const rec: PushReceipt = { at, conn: connIds.get(req.socket) ?? 0, commitAt: NaN };
      const deliveryId = header(req, 'x-handoff-delivery-id');
      const taskId = header(req, 'x-a2a-task-id');
      if (deliveryId !== undefined) rec.deliveryId = deliveryId;
      if (taskId !== undefined) rec.taskId = taskId;
      const body = jsonOf<{ taskId?: string; status?: { state?: string; timestamp?: string } }>(raw.toString('utf8'));
      if (body?.taskId !== undefined) rec.bodyTaskId = body.taskId;
      if (body?.status?.state !== undefined) rec.state = body.status.state;
      if (body?.status?.timestamp !== undefined) rec.commitAt = Date.parse(body.status.timestamp);
      receipts.push(rec);
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      for (const w of [...waiters]) w();
    });
  };

  const server: Server = createServer({ key: certs.keyPem, cert: certs.certPem }, handle);
  server.keepAliveTimeout = 30_000; // the sender decides when to drop idle connections
  server.on('secureConnection', (socket: TLSSocket) => {
    handshakes++;
    connIds.set(socket, handshakes);
    if (socket.isSessionReused()) resumed++;
    open++;
    openPeak = Math.max(openPeak, open);
    socket.once('close', () => open--);
  });
  server.on('tlsClientError', () => {
    // a sender that does not trust our CA shows up as missing receipts; nothing to do here
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    url: (path = '/hook') => `https://127.0.0.1:${port}${path}`,
    receipts,
    stats: () => ({ handshakes, resumed, openPeak, open, requests }),
    waitFor: (done, timeoutMs) =>
      new Promise<boolean>((resolve) => {
        if (done()) return resolve(true);
        const check = (): void => {
          if (!done()) return;
          finish(true);
        };
        const finish = (ok: boolean): void => {
          waiters.delete(check);
          clearInterval(tick);
          clearTimeout(timer);
          resolve(ok);
        };
        const tick = setInterval(check, 100);
        const timer = setTimeout(() => finish(done()), timeoutMs);
        waiters.add(check);
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
