// How the host serves the web console: the page at /console and its client routes, content-hashed
// assets cached for good, the page revalidated by ETag, a CSP, public on a host with keys, and `/`
// redirecting browsers while API clients get exactly what they got before.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { consoleRoutes, defaultConsoleDir } from '../../src/http/routes/console.js';
import { errorHandler } from '../../src/http/errors.js';
import { bearer, startTestHost, type TestHost } from '../support/host.js';

const KEY = 'key-console-serve-1';
const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('console serving', () => {
  let keyed: TestHost;
  let open: TestHost;
  const assets = readdirSync(join(defaultConsoleDir(), 'assets'));
  const script = assets.find((f) => /^app-[A-Z0-9]+\.js$/.test(f));

  before(async () => {
    keyed = await startTestHost({ apiKeys: `${KEY}=t1:alice` });
    open = await startTestHost();
  });
  after(async () => {
    await keyed?.close();
    await open?.close();
  });

  it('serves the page at /console and each client route, without a key, revalidated by ETag', async () => {
    assert.ok(script, `a built script in ${assets.join(', ')}`);
    for (const path of ['/console', '/console/operations', '/console/runs/run_anything']) {
      const res = await keyed.get(path, HTML);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/);
      assert.match(res.text, new RegExp(`<script type="module" src="/console/assets/${script}">`));
      assert.equal(res.headers['cache-control'], 'no-cache');
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /script-src 'self'/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      const etag = String(res.headers.etag);
      const again = await keyed.get(path, { 'if-none-match': etag });
      assert.equal(again.status, 304);
      assert.equal(again.text, '');
      assert.equal((await keyed.get(path, { 'if-none-match': `"other", W/${etag}` })).status, 304);
    }
  });

  it('serves content-hashed assets as immutable, and 404 for any other name', async () => {
    const res = await keyed.get(`/console/assets/${script}`);
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/javascript/);
    assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
    const style = assets.find((f) => f.endsWith('.css'));
    assert.match(String((await keyed.get(`/console/assets/${style}`)).headers['content-type']), /^text\/css/);
    for (const name of ['app-NOPE.js', '..%2Fpackage.json', 'index.html']) {
      const missing = await keyed.get(`/console/assets/${name}`);
      assert.equal(missing.status, 404, name);
      assert.equal(missing.body.error, 'not_found');
    }
    assert.equal((await keyed.get('/console/nope')).status, 404, 'not a console page');
  });

  it('redirects a browser at / to the console; API clients get what they got before', async () => {
    for (const t of [keyed, open]) {
      const browser = await t.get('/', HTML);
      assert.equal(browser.status, 302);
      assert.equal(browser.headers.location, '/console');
    }
    // A host with keys: 401 without a key, then the 404 of an unknown route.
    const anonymous = await keyed.get('/', { accept: 'application/json' });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error, 'unauthenticated');
    const client = await keyed.get('/', bearer(KEY));
    assert.equal(client.status, 404);
    assert.deepEqual(client.body, { error: 'not_found', message: 'no route GET /' });
    assert.equal((await open.get('/')).status, 404);
    assert.equal((await open.post('/', {}, HTML)).status, 404, 'only GET is redirected');
  });

  it('answers 503 in words when the console was not built', async () => {
    const app = Fastify();
    app.setErrorHandler(errorHandler);
    consoleRoutes(app, join(defaultConsoleDir(), 'not-here'));
    const res = await app.inject({ method: 'GET', url: '/console' });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().error, 'console_not_built');
    assert.match(res.json().message, /npm run build/);
    assert.equal((await app.inject({ method: 'GET', url: '/console/assets/app-x.js' })).statusCode, 404);
    await app.close();
  });
});
