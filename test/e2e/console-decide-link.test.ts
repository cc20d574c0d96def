// The decision link's page in a real headless Chromium against a real `handoff serve` and a real
// SMTP server: the link from the e-mail opens /console/decide/{token} with no API key, shows the
// draft and the actions without deciding (a GET), and pressing Accept decides as the recipient,
// once. The operations page lists a notification that could not be sent and retries it.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { type SmtpServer, startSmtpServer, tokenIn } from '../support/smtp.js';
import { until } from '../support/until.js';

const CHROMIUM = process.env.HANDOFF_CHROMIUM ?? '/usr/bin/chromium';
const ALICE = 'key-decide-alice';
const WAIT_MS = 20_000;
const position = { x: 0, y: 0 };

const WORKFLOW = {
  id: 'mail-note',
  name: 'A note e-mailed for approval',
  version: '1.0.0',
  nodes: [
    {
      id: 'draft',
      typeId: 'core.transform',
      name: 'Draft',
      position,
      config: { output: { text: 'Draft: {{ inputs.prompt }}' } },
      inputs: {},
    },
    {
      id: 'review',
      typeId: 'core.approvalGate',
      name: 'Review',
      position,
      config: {
        title: 'Approve the note',
        artifactFrom: 'draft',
        approversList: ['alice'],
        notify: [{ channel: 'email', to: ['approvers'] }],
      },
      inputs: {},
    },
  ],
  edges: [{ id: 'e1', sourceNodeId: 'draft', targetNodeId: 'review' }],
  triggers: [{ id: 'manual', type: 'manual', enabled: true }],
  variables: [],
  metadata: {},
  settings: {},
};

describe('a decision link in Chromium', { timeout: 240_000 }, () => {
  let srv: ServerProcess;
  let smtp: SmtpServer;
  let browser: Browser;
  const dirs: string[] = [];

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}`);
    smtp = await startSmtpServer();
    const dataDir = mkdtempSync(join(tmpdir(), 'handoff-decide-'));
    dirs.push(dataDir);
    writeFileSync(join(dataDir, 'mail-note.json'), JSON.stringify(WORKFLOW));
    srv = await startServer({
      dataDir,
      env: {
        HANDOFF_API_KEYS: `${ALICE}=t1:alice:alice@example.com`,
        HANDOFF_WORKFLOWS: dataDir,
        HANDOFF_SMTP_URL: smtp.url,
        HANDOFF_SMTP_FROM: 'handoff@example.com',
        HANDOFF_PUSH_RETRY_SCHEDULE: '1h',
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await killAllServers();
    await smtp?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const startRun = async (prompt: string) => {
    const res = await postJson(`${srv.url}/v1/runs`, { workflowId: 'mail-note', inputs: { prompt } }, { token: ALICE });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.runId as string;
  };
  const getRun = async (runId: string) => (await getJson(`${srv.url}/v1/runs/${runId}`, { token: ALICE })).body;

  it('opens without an API key, shows the draft, decides only when Accept is pressed, once', async () => {
    const runId = await startRun('the first note');
    const mail = await until('the e-mail', () => smtp.mails.find((m) => m.text.includes('the first note')));
    const link = /(http:\/\/\S+\/console\/decide\/\S+)/.exec(mail.text)?.[1] as string;
    assert.ok(link && tokenIn(link));
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Approve the note', exact: true }).waitFor();
    await page.locator('[data-testid=draft]', { hasText: 'Draft: the first note' }).waitFor();
    assert.equal((await getRun(runId)).status, 'waiting-approval', 'opening the page decided nothing');
    await page.getByRole('button', { name: 'Accept' }).click();
    await page.getByRole('heading', { name: 'Thank you' }).waitFor();
    const done = await until('the run completed', async () => {
      const r = await getRun(runId);
      return r.status === 'completed' && r;
    });
    assert.equal(done.status, 'completed');
    // The same link again: it cannot decide any more, and says so.
    await page.goto(link);
    await page.getByRole('heading', { name: 'This link cannot decide' }).waitFor();
    await page.getByText('used already').waitFor();
    await page.context().close();
  });

  it('the operations page lists a notification that could not be sent, and retries it', async () => {
    smtp.refuse(true);
    const runId = await startRun('the refused note');
    await until('the dead letter', async () => {
      const r = await getJson(`${srv.url}/v1/notifications?runId=${runId}&state=dead`, { token: ALICE });
      return r.body.notifications?.length === 1;
    });
    smtp.refuse(false);
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(`${srv.url}/console`);
    await page.getByLabel('API key').fill(ALICE);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await page.goto(`${srv.url}/console/operations`);
    const row = page.locator('tr[data-notification-id]', { hasText: 'alice@example.com' });
    await row.waitFor();
    assert.match(String(await row.textContent()), /550|mailbox unavailable/);
    await row.getByRole('button', { name: /Retry/ }).click();
    await page.getByRole('status').filter({ hasText: 'queued again' }).waitFor();
    await until('the retried e-mail', () => smtp.mails.find((m) => m.text.includes('the refused note')));
    await page.context().close();
  });
});
