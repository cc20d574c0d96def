// The web console signs in with the host's OpenID provider (oidc-provider on loopback: its
// development login page, authorization code + PKCE), in a real headless Chromium against a real
// `handoff serve`; the token is kept in memory only, so a reload asks again. `npm run build:console` first.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { startProvider, type TestProvider } from '../support/oidc.js';
import { freePort, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';

const CHROMIUM = process.env.HANDOFF_CHROMIUM ?? '/usr/bin/chromium';
const WAIT_MS = 20_000;
const KEY = 'key-console-ops1';

describe('console sign-in with the OpenID provider (Chromium)', { timeout: 120_000 }, () => {
  let idp: TestProvider;
  let srv: ServerProcess;
  let browser: Browser;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}`);
    const port = await freePort();
    const audience = `http://127.0.0.1:${port}`;
    idp = await startProvider({ audience, tenant: 'acme', consoleRedirect: `${audience}/console` });
    srv = await startServer({
      dataDir: mkdtempSync(join(tmpdir(), 'handoff-console-oidc-')),
      port,
      env: {
        HANDOFF_API_KEYS: `${KEY}=acme:ops`,
        HANDOFF_OIDC_ISSUER: idp.issuer,
        HANDOFF_OIDC_AUDIENCE: audience,
        HANDOFF_OIDC_CONSOLE_CLIENT_ID: 'handoff-console',
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await killAllServers();
    await idp?.close();
  });

  it('signs in at the provider, sees its tenant’s runs, and keeps the token in memory only', async () => {
    const run = await postJson(
      `${srv.url}/v1/runs`,
      { workflowId: 'approval', inputs: { prompt: 'x' } },
      { token: KEY },
    );
    assert.equal(run.status, 201, JSON.stringify(run.body));
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(`${srv.url}/console`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.ok(await page.getByLabel('API key').isVisible(), 'the API-key prompt stays');
    await page.getByRole('button', { name: 'Sign in with your organization' }).click();
    // The provider's development login: any user name.
    await page.locator('input[name="login"]').fill('alice');
    await page.locator('input[name="password"]').fill('anything');
    await page.locator('button[type="submit"]').click();
    // …and its consent page: the console asks for the operations' scopes.
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    assert.equal(new URL(page.url()).search, '', 'the code left the address bar');
    await page.locator('ul.cards li').first().waitFor();
    const stored = await page.evaluate(() => {
      const w = globalThis as unknown as { sessionStorage: object; localStorage: object };
      return JSON.stringify({ ...w.sessionStorage, ...w.localStorage });
    });
    assert.doesNotMatch(stored, /eyJ/, 'no token in web storage');
    // Memory only: a reload asks to sign in again.
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.context().close();
  });
});
