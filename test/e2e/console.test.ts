// The web console driven in a real headless Chromium (Debian's `chromium`, driven by playwright-core)
// against a real `handoff serve`: sign in, the live inbox, every kind of decision, a run waiting at
// two gates at once (two inbox rows, two forms, a timeline grouped by branch), a dead letter
// retried, tenants kept apart, and a decision made elsewhere shown instead of overwritten.
// Every wait is on a condition on the page or the API; nothing sleeps.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { skillMessage } from '../support/a2a.js';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import {
  getJson,
  httpJson,
  killAllServers,
  postJson,
  type ServerProcess,
  startServer,
} from '../support/server-process.js';
import { signInWithKey } from '../support/console-browser.js';
import { until } from '../support/until.js';

/** Debian's Chromium; `.ci/run` installs it. Missing is a failure, never a skip. */
const CHROMIUM = process.env.HANDOFF_CHROMIUM ?? '/usr/bin/chromium';
const ALICE = 'key-console-alice';
const BOB = 'key-console-bob01';
const CAROL = 'key-console-carol';
const API_KEYS = `${ALICE}=ta:alice,${BOB}=ta:bob,${CAROL}=tb:carol`;
/** Bound of one wait on the page: generous for a loaded CI machine, never reached when all is well. */
const WAIT_MS = 20_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('web console in Chromium', { timeout: 240_000 }, () => {
  let srv: ServerProcess;
  let browser: Browser;
  let rx: HttpsReceiver;
  const dirs: string[] = [];
  let refusedFile = '';

  before(async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `Chromium is missing at ${CHROMIUM}: \`apt-get install -y chromium\` (or set HANDOFF_CHROMIUM)`,
    );
    rx = await startHttpsReceiver();
    const dataDir = mkdtempSync(join(tmpdir(), 'handoff-console-'));
    dirs.push(dataDir);
    const caFile = join(dataDir, 'receiver-ca.pem');
    writeFileSync(caFile, rx.caPem);
    // One workflow file that does not load: `serve` starts without it and lists it.
    const extra = join(dataDir, 'workflows');
    mkdirSync(extra);
    writeFileSync(join(extra, 'broken.json'), '{ "id": ');
    refusedFile = join(extra, 'broken.json');
    srv = await startServer({
      dataDir,
      env: {
        HANDOFF_API_KEYS: API_KEYS,
        HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8',
        HANDOFF_PUSH_CA_FILE: caFile,
        HANDOFF_PUSH_RETRY_SCHEDULE: '100ms',
        HANDOFF_WORKFLOWS: extra,
      },
    });
    // Root runs Chromium only without its sandbox; the pages are our own, on loopback.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await killAllServers();
    await rx?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const signIn = (key: string): Promise<Page> => signInWithKey(browser, srv.url, key, WAIT_MS);

  /** The inbox has read its list and follows changes: a run created now can only arrive live. */
  const inboxReady = async (page: Page) => {
    await page.locator('.stream', { hasText: 'Live' }).waitFor();
    await page.locator('ul.cards, p.empty').first().waitFor();
  };
  const startRun = async (workflowId: string, key = ALICE, inputs: Json = {}) => {
    const res = await postJson(`${srv.url}/v1/runs`, { workflowId, inputs }, { token: key });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.runId as string;
  };
  const getRun = async (runId: string, key = ALICE) =>
    (await getJson(`${srv.url}/v1/runs/${runId}`, { token: key })).body;
  const decide = async (runId: string, nodeId: string, resumeValue: Json, key = BOB) => {
    const res = await postJson(`${srv.url}/v1/runs/${runId}/interrupts/${nodeId}`, { resumeValue }, { token: key });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  const runStatus = (page: Page, words: string) => page.locator('.page-head .status', { hasText: words }).waitFor();
  const note = (page: Page, text: string | RegExp) => page.getByRole('status').filter({ hasText: text }).waitFor();
  const openRun = async (page: Page, runId: string) => {
    await page.goto(`${srv.url}/console/runs/${runId}`);
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
  };

  it('signs in with an API key kept for the session; a wrong key is refused in words', async () => {
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(`${srv.url}/`);
    assert.equal(new URL(page.url()).pathname, '/console', 'the root sends a browser to the console');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter an API key' }).waitFor();
    await page.getByLabel('API key').fill('key-not-known-here');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'did not accept that key' }).waitFor();
    await page.getByLabel('API key').fill(ALICE);
    await page.getByLabel('API key').press('Enter');
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    // Kept in this tab's session: a reload stays signed in; signing out forgets it.
    await page.reload();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.context().close();
  });

  it('shows a new approval run in the inbox live; edit-accept completes it', async () => {
    const page = await signIn(ALICE);
    await inboxReady(page);
    const runId = await startRun('approval', ALICE, { prompt: 'console live' });
    const card = page.locator(`.card[data-run-id="${runId}"]`);
    await card.waitFor();
    assert.match(String(await card.textContent()), /approval[\s\S]*A decision[\s\S]*Anyone in your tenant/);
    assert.ok(await card.locator('time[datetime][title]').count(), 'relative time with the exact time on hover');

    await card.getByRole('link', { name: 'Review the draft' }).click();
    await page.locator('[data-testid=draft]', { hasText: 'Draft: console live' }).waitFor();
    await page.getByText('Edit, then accept', { exact: true }).click();
    const editor = page.getByLabel('Edited text');
    assert.equal(await editor.inputValue(), 'Draft: console live', 'the editor starts from the draft');
    await editor.fill('Final: console live, edited');
    await page.getByRole('button', { name: 'Accept with these edits' }).click();
    await note(page, 'Accepted with your edits');
    await runStatus(page, 'Completed');
    await page.locator('[data-testid=artifact]', { hasText: 'Final: console live, edited' }).waitFor();
    const run = await getRun(runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.nodeStates.final.text, 'Final: console live, edited');
    // The audit log on the page: the act, who, where, when, and the draft it was decided on; the
    // console sent the hash of the draft it showed, so the decision was bound to it.
    const audit = (await getJson(`${srv.url}/v1/audit?runId=${runId}`, { token: ALICE })).body.entries;
    assert.equal(audit.length, 1);
    assert.equal(audit[0].values.expectedArtifactHash, audit[0].subjectHash);
    const line = page.locator('[data-testid=audit-entry]');
    await line
      .filter({ hasText: /^Edited and approved by alice via console, .+, draft sha256:[0-9a-f]{12}…$/ })
      .waitFor();
    assert.equal(await line.locator('code').getAttribute('title'), audit[0].subjectHash);
    // Back in the inbox the decided run is gone.
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Inbox' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    await until('the decided run leaves the inbox', async () => (await card.count()) === 0, WAIT_MS);
    await page.context().close();
  });

  it('refine: the re-drafted artifact appears, on a phone-width screen', async () => {
    const page = await signIn(ALICE);
    await page.setViewportSize({ width: 390, height: 844 });
    const runId = await startRun('approval', ALICE, { prompt: 'console refine' });
    await openRun(page, runId);
    await page.getByText('Ask for a revision', { exact: true }).click();
    await page.getByLabel('What to revise').selectOption('section');
    await page.getByLabel('What should change').fill('shorter please');
    await page.getByRole('button', { name: 'Request the revision' }).click();
    await page.locator('[data-testid=draft]', { hasText: 'Draft: console refine [revised: shorter please]' }).waitFor();
    await runStatus(page, 'Waiting for approval');
    await note(page, 'Revision requested');
    assert.equal(
      await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'),
      true,
      'nothing runs off the side of a phone screen',
    );
    await page.context().close();
  });

  it('answers a clarification with the keyboard', async () => {
    const page = await signIn(ALICE);
    const runId = await startRun('clarify');
    await openRun(page, runId);
    const answer = page.getByLabel('What should the greeting say?');
    await answer.focus();
    await page.keyboard.type('Hello from the console');
    await page.keyboard.press('Tab');
    const focused = page.locator(':focus');
    assert.equal(await focused.textContent(), 'Send answers', 'Tab reaches the submit button');
    await page.keyboard.press('Enter');
    await runStatus(page, 'Completed');
    await page.locator('[data-testid=artifact]', { hasText: 'Hello from the console' }).waitFor();
    assert.equal((await getRun(runId)).nodeStates.ask.answers.name, 'Hello from the console');
    await page.context().close();
  });

  it('a run waiting at two gates at once: two inbox rows, two forms, each decided at its own node', async () => {
    const inbox = await signIn(ALICE);
    await inboxReady(inbox);
    const runId = await startRun('two-reviewers', ALICE, { prompt: 'two reviewers' });
    const rows = inbox.locator(`.card[data-run-id="${runId}"]`);
    const row = (nodeId: string) => inbox.locator(`.card[data-run-id="${runId}"][data-node-id="${nodeId}"]`);
    await row('legal').waitFor();
    await row('finance').waitFor();
    assert.equal(await rows.count(), 2, 'one row per open interrupt');
    assert.match(String(await row('finance').textContent()), /Finance: review the draft[\s\S]*Step\s*finance/);
    const href = await row('legal').getByRole('link', { name: 'Legal: review the draft' }).getAttribute('href');
    assert.equal(href, `/console/runs/${runId}#decide-legal`, "the row leads to its own node's form");

    // The task page opened from the legal row: two forms, each naming its node; legal's has focus.
    const page = await signIn(ALICE);
    await page.goto(`${srv.url}${href}`);
    const form = (nodeId: string) => page.locator(`section.panel[data-node-id="${nodeId}"]`);
    await form('legal').waitFor();
    await form('finance').waitFor();
    assert.equal(await page.locator('section.panel').count(), 2);
    assert.match(String(await form('finance').textContent()), /Finance: review the draft[\s\S]*Step\s*finance/);
    await until(
      "legal's form has the focus",
      async () => (await page.evaluate('document.activeElement?.closest("section.panel")?.dataset.nodeId')) === 'legal',
      WAIT_MS,
    );

    // Deciding finance leaves legal's form, and legal's inbox row, as they were.
    await form('finance').getByRole('button', { name: 'Accept', exact: true }).click();
    await note(page, 'Accepted at finance');
    await form('finance').waitFor({ state: 'detached' });
    assert.equal(await page.locator('section.panel').count(), 1);
    await form('legal').getByRole('button', { name: 'Accept', exact: true }).waitFor();
    await runStatus(page, 'Waiting for approval');
    await until('the finance row leaves the inbox', async () => (await rows.count()) === 1, WAIT_MS);
    assert.equal(await row('legal').count(), 1);
    assert.deepEqual(
      (await getRun(runId)).interrupts.map((i: Json) => i.nodeId),
      ['legal'],
    );

    // Deciding legal completes the run.
    await form('legal').getByRole('button', { name: 'Accept', exact: true }).click();
    await note(page, 'Accepted. The run is now completed');
    await runStatus(page, 'Completed');
    assert.equal(await page.locator('section.panel').count(), 0);
    const run = await getRun(runId);
    assert.equal(run.status, 'completed');
    assert.deepEqual(run.nodeStates.publish.approvedBy, { legal: 'alice', finance: 'alice' });
    await until('the run leaves the inbox', async () => (await rows.count()) === 0, WAIT_MS);

    // The timeline: each branch's events in a group of their own, what precedes the fork and what
    // follows the join on the run's own line.
    const top = (type: string) => page.locator(`#timeline-title + ol.timeline > li[data-event-type="${type}"]`);
    const branch = (id: string) => page.locator(`#timeline-title + ol.timeline > li.branch[data-branch="${id}"]`);
    await top('run.completed').waitFor();
    assert.equal(await top('run.started').count(), 1);
    for (const nodeId of ['legal', 'finance']) {
      const events = branch(`fork#0/${nodeId}`).locator('li[data-event-type]');
      const types = await events.evaluateAll((lis) => lis.map((li) => li.getAttribute('data-event-type')));
      assert.ok(types.includes('approval.requested') && types.includes('approval.received'), types.join());
      assert.match(String(await branch(`fork#0/${nodeId}`).textContent()), new RegExp(`^Branch ${nodeId}`));
    }
    assert.equal(await page.locator('li.branch').count(), 2, 'two branches, no more');
    assert.equal(await top('artifact.created').count(), 1, 'the publish step after the join is on the top level');
    await inbox.context().close();
    await page.context().close();
  });

  it('retries a dead-lettered push delivery; its webhook is shown without its token', async () => {
    rx.behave({ status: 500 });
    const hook = rx.urlFor('127.0.0.1', '/hook');
    const send = await postJson(
      `${srv.url}/v1/a2a`,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: {
          message: skillMessage('echo', 'push me'),
          configuration: { pushNotificationConfig: { url: hook, token: 'tok-secret-1' } },
        },
      },
      { token: ALICE },
    );
    assert.equal(send.status, 200, JSON.stringify(send.body));
    const taskId = send.body.result.id as string;
    const dead = await until(
      'the delivery dead-lettered',
      async () => {
        const res = await getJson(`${srv.url}/v1/a2a/deliveries?taskId=${taskId}&state=dead`, { token: ALICE });
        return res.body.deliveries[0] as Json;
      },
      WAIT_MS,
    );
    rx.behave({ status: 200 });

    const page = await signIn(ALICE);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Operations' }).click();
    const row = page.locator(`tr[data-delivery-id="${dead.deliveryId}"]`);
    await row.and(page.locator('[data-state=dead]')).waitFor();
    assert.match(String(await row.textContent()), /Dead letter[\s\S]*HTTP 500/);
    await page.getByRole('button', { name: `Retry delivery ${dead.deliveryId}` }).click();
    await page.locator(`tr[data-delivery-id="${dead.deliveryId}"][data-state=delivered]`).waitFor();
    assert.ok(rx.requests.some((r) => r.headers['x-handoff-delivery-id'] === dead.deliveryId && r.path === '/hook'));

    await openRun(page, taskId);
    await page.getByRole('cell', { name: hook }).waitFor();
    assert.ok(!(await page.content()).includes('tok-secret-1'), 'the token is never shown');
    await page.context().close();
  });

  it("shows tenant B none of tenant A's runs", async () => {
    const theirs = await startRun('approval', ALICE, { prompt: 'tenant A only' });
    const page = await signIn(CAROL);
    await inboxReady(page);
    const mine = await startRun('approval', CAROL, { prompt: 'tenant B' });
    await page.locator(`.card[data-run-id="${mine}"]`).waitFor();
    assert.equal(await page.locator(`.card[data-run-id="${theirs}"]`).count(), 0);
    assert.equal(await page.locator('.card').count(), 1, 'only its own waiting run');

    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Operations' }).click();
    await page.locator(`table.runs tr[data-run-id="${mine}"]`).waitFor();
    assert.equal(await page.locator('table.runs tbody tr').count(), 1);

    await openRunMissing(page, theirs);
    await page.context().close();
  });

  async function openRunMissing(page: Page, runId: string) {
    await page.goto(`${srv.url}/console/runs/${runId}`);
    await page.getByRole('heading', { name: 'Run not found' }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'another tenant' }).waitFor();
  }

  it('shows a decision made elsewhere while the page is open, and never overwrites it', async () => {
    // Live: the page sees the other decision arrive and says who made it.
    const page = await signIn(ALICE);
    const live = await startRun('approval', ALICE, { prompt: 'decided elsewhere' });
    await openRun(page, live);
    await page.getByRole('button', { name: 'Accept', exact: true }).waitFor();
    await decide(live, 'review', { action: 'accept' }, BOB);
    await note(page, /Decided elsewhere .*bob chose accept/);
    await runStatus(page, 'Completed');
    assert.equal(await page.getByRole('button', { name: 'Accept', exact: true }).count(), 0);

    // Stale: the page hears nothing (its event stream is cut), someone rejects, then the page
    // tries to accept. The host refuses; the page says so and shows the run as it now is.
    const stale = await startRun('approval', ALICE, { prompt: 'stale page' });
    await page.route('**/v1/runs/*/events', (route) => route.abort());
    await page.goto(`${srv.url}/console/runs/${stale}`);
    const accept = page.getByRole('button', { name: 'Accept', exact: true });
    await accept.waitFor();
    await page.locator('.stream', { hasText: 'Reconnecting' }).waitFor();
    await decide(stale, 'review', { action: 'reject', feedback: 'not this one' }, BOB);
    await accept.click();
    await page.getByRole('status').filter({ hasText: 'Someone else decided first' }).waitFor();
    await runStatus(page, 'Rejected'); // a reject is an outcome, not a red Failed (issue 35)
    const run = await getRun(stale);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'interrupt_rejected');
    await page.context().close();
  });

  it('lists a refused workflow file with its problem on the operations page', async () => {
    const page = await signIn(ALICE);
    await page.goto(`${srv.url}/console/operations`);
    const refused = page.locator('ul.refused > li', { hasText: refusedFile });
    await refused.waitFor();
    assert.match(String(await refused.textContent()), /invalid JSON/);
    const health = await getJson(`${srv.url}/healthz`);
    assert.equal(health.body.status, 'degraded');
  });

  it('keeps the API unchanged for clients that are not browsers', async () => {
    const res = await httpJson('GET', `${srv.url}/`, undefined, { token: ALICE });
    assert.equal(res.status, 404);
  });
});
