// Serving HTTPS (--tls-cert/--tls-key): a real host on a loopback port with a certificate from a
// throw-away test CA, called over TLS by undici trusting only that CA; the CLI refuses half a pair.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { startTestHost, type TestHost } from '../support/host.js';
import { generateTestCerts } from '../support/https-receiver.js';
import { cliPath } from '../support/server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'handoff-tls-'));
const certs = generateTestCerts();
const certFile = join(dir, 'cert.pem');
const keyFile = join(dir, 'key.pem');
writeFileSync(certFile, certs.certPem);
writeFileSync(keyFile, certs.keyPem);

describe('handoff serve over HTTPS', () => {
  let host: TestHost;
  let base: string;
  const trustingTestCa = new Agent({ connect: { ca: certs.caPem } });

  before(async () => {
    host = await startTestHost({ startRunner: false, env: { HANDOFF_TLS_CERT: certFile, HANDOFF_TLS_KEY: keyFile } });
    base = await host.host.listen();
  });
  after(async () => {
    await trustingTestCa.close();
    await host?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('listens on https and answers a client that trusts the test CA', async () => {
    assert.match(base, /^https:\/\/127\.0\.0\.1:\d+$/);
    const res = await request(`${base}/healthz`, { dispatcher: trustingTestCa });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
  });

  it('names its https endpoints in the agent card', async () => {
    const res = await request(`${base}/.well-known/agent-card.json`, { dispatcher: trustingTestCa });
    const card = (await res.body.json()) as { url: string };
    assert.equal(card.url, `${base}/v1/a2a`);
  });

  it('runs A2A over TLS', async () => {
    const res = await request(`${base}/v1/a2a`, {
      dispatcher: trustingTestCa,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: {
          message: { kind: 'message', messageId: 'tls-1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
        },
      }),
    });
    const body = (await res.body.json()) as { result: { status: { state: string } } };
    assert.equal(body.result.status.state, 'completed');
  });

  it('is refused by a client that does not trust the test CA (the certificate is what is checked)', async () => {
    await assert.rejects(request(`${base}/healthz`), (err: Error) =>
      /certificate|self.signed/i.test(String(err.cause ?? err)),
    );
  });

  it('`handoff serve` refuses a certificate without its key, naming both flags (exit 2)', async () => {
    const run = promisify(execFile);
    await assert.rejects(
      run(process.execPath, [cliPath(), 'serve', '--port', '0', '--data', dir, '--tls-cert', certFile], {
        env: { PATH: process.env.PATH ?? '' },
      }),
      (err: Error & { code?: number; stderr?: string }) =>
        err.code === 2 && /--tls-cert/.test(err.stderr ?? '') && /--tls-key/.test(err.stderr ?? ''),
    );
  });
});
