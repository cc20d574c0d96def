// Screenshots of the console for the docs (docs/console-inbox.png, -task.png, -start.png), taken
// from a real `handoff serve` with a few demo runs, in Debian's Chromium (HANDOFF_CHROMIUM to use
// another). Run with `npm run screenshots` (it builds first).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const executablePath = process.env.HANDOFF_CHROMIUM ?? '/usr/bin/chromium';

const port = await new Promise((resolve, reject) => {
  const srv = createServer().listen(0, '127.0.0.1', () => {
    const { port } = srv.address();
    srv.close(() => resolve(port));
  });
  srv.on('error', reject);
});
const base = `http://127.0.0.1:${port}`;
const data = mkdtempSync(join(tmpdir(), 'handoff-screens-'));
const server = spawn(
  process.execPath,
  [join(root, 'dist/src/cli/main.js'), 'serve', '--port', String(port), '--data', data],
  { env: { ...process.env, HANDOFF_LOG_LEVEL: 'warn' }, stdio: 'inherit' },
);

async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function ready() {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the server did not start');
}

const start = async (workflowId, prompt, tags = []) =>
  (await call('POST', '/v1/runs', { workflowId, inputs: prompt ? { prompt } : {}, tags })).runId;

let browser;
try {
  await ready();
  await start('echo', 'Welcome note');
  await start('approval', 'Press release for the 2.0 launch', ['marketing']);
  await start('clarify');
  await start('two-reviewers', 'Pricing page copy', ['pricing']); // two inbox rows: legal and finance
  const shown = await start('approval', 'Launch plan for the Q3 release', ['launch', 'q3']);
  await call('POST', `/v1/runs/${shown}/interrupts/review`, {
    resumeValue: { action: 'refine', refineFeedback: { scope: 'whole', text: 'name the owners' } },
  });
  await call('POST', `/v1/runs/${shown}/interrupts/review`, {
    resumeValue: { action: 'ask', question: 'Who signs off on the budget line?' },
  });

  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
  await page.goto(`${base}/console`);
  await page.locator(`.card[data-run-id="${shown}"]`).waitFor();
  await page.locator('.stream', { hasText: 'Live' }).waitFor();
  await page.screenshot({ path: join(root, 'docs/console-inbox.png') });

  await page.goto(`${base}/console/start/approval`);
  await page.getByLabel('prompt').fill('Press release for the 2.0 launch');
  await page.screenshot({ path: join(root, 'docs/console-start.png') });

  await page.goto(`${base}/console/runs/${shown}`);
  await page.locator('.timeline li').nth(10).waitFor();
  await page.getByText('Edit, then accept', { exact: true }).click();
  await page.locator('.stream', { hasText: 'Live' }).waitFor();
  await page.screenshot({ path: join(root, 'docs/console-task.png'), fullPage: true });
  console.log('wrote docs/console-inbox.png, docs/console-task.png and docs/console-start.png');
} finally {
  await browser?.close();
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(data, { recursive: true, force: true });
}
