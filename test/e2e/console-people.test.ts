// The console for the person deciding, in a real headless Chromium against real `handoff serve`
// hosts: a run started from a form generated from its workflow's inputSchema, inbox cards that
// show each run's inputs and what is being decided, a reject that reads "Rejected by …", a run
// whose URL is down shown retrying on its page and under its operations row, and a delegate's page
// linked to the peer Handoff's page, which names the agent that asked. Every wait is on a condition
// on the page or the API; nothing sleeps.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { closedPort, getJson, killAllServers, type ServerProcess, startServer } from '../support/server-process.js';
import { getRun, startRun, tmp, untilStatus, untilWaitingOn } from '../support/two-hosts.js';
import { until } from '../support/until.js';

const CHROMIUM = process.env.HANDOFF_CHROMIUM ?? '/usr/bin/chromium';
const WAIT_MS = 20_000;

const LAYOUT = {
  triggers: [{ id: 'manual', type: 'manual', enabled: true }],
  variables: [],
  metadata: {},
  settings: {},
};
const node = (id: string, typeId: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id,
  typeId,
  name: id,
  position: { x: 0, y: 0 },
  config,
  inputs: {},
  ...extra,
});
const edge = (from: string, to: string) => ({ id: `${from}-${to}`, sourceNodeId: from, targetNodeId: to });

/** `brief` (a draft from typed inputs, then an approval) and `fetch_down` (a call that keeps retrying). */
function writeWorkflows(): string {
  const dir = tmp('console-people-wf');
  const brief = {
    id: 'brief',
    name: 'Brief',
    version: '1.0.0',
    description: 'Drafts a brief and asks for its approval.',
    inputSchema: {
      type: 'object',
      required: ['prompt', 'audience'],
      properties: {
        prompt: { type: 'string', description: 'What the brief is about.' },
        audience: { type: 'string', enum: ['customers', 'partners'] },
        count: { type: 'integer', default: 1 },
        urgent: { type: 'boolean' },
        extra: { type: 'object' },
      },
    },
    nodes: [
      node('draft', 'core.transform', { output: { text: 'Brief for {{ inputs.audience }}: {{ inputs.prompt }}' } }),
      node('review', 'core.approvalGate', { title: 'Approve the brief', artifactFrom: 'draft' }),
      node('done', 'core.transform', { output: { ok: true } }, { outputRole: 'artifact' }),
    ],
    edges: [edge('draft', 'review'), edge('review', 'done')],
    ...LAYOUT,
  };
  const fetchDown = {
    id: 'fetch_down',
    name: 'Fetch',
    version: '1.0.0',
    inputSchema: { type: 'object', properties: { url: { type: 'string' } } },
    nodes: [
      node('fetch', 'http.request', {
        method: 'GET',
        url: '{{ inputs.url }}',
        retry: { attempts: 20, backoffMs: 200, maxBackoffMs: 400 },
      }),
    ],
    edges: [],
    ...LAYOUT,
  };
  writeFileSync(join(dir, 'brief.json'), JSON.stringify(brief));
  writeFileSync(join(dir, 'fetch_down.json'), JSON.stringify(fetchDown));
  return dir;
}

describe('web console for the person deciding, in Chromium', { timeout: 240_000 }, () => {
  let a: ServerProcess;
  let b: ServerProcess;
  let browser: Browser;
  let port: number;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: \`apt-get install -y chromium\``);
    port = await closedPort();
    b = await startServer({ dataDir: tmp('console-people-b') });
    a = await startServer({
      dataDir: tmp('console-people-a'),
      env: {
        HANDOFF_WORKFLOWS: writeWorkflows(),
        HANDOFF_AGENTS: `reviewer=${b.url}`,
        HANDOFF_AGENT_POLL_MIN_MS: '50',
        HANDOFF_AGENT_POLL_MAX_MS: '250',
        HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1',
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await killAllServers();
  });

  /** A fresh browser session at `url` (these hosts have no API keys: no sign-in). */
  async function open(url: string): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(url);
    return page;
  }

  it('starts a run from a form generated from the inputSchema; a required field left empty is said in words', async () => {
    const page = await open(`${a.url}/console`);
    await page.getByRole('link', { name: 'Start a run' }).click();
    await page.getByRole('heading', { name: 'Start a run' }).waitFor();
    await page.getByLabel('Workflow').selectOption('brief');
    await page.getByLabel('prompt (required)').waitFor();

    // Nothing typed in a required field: refused on the page, nothing started.
    await page.getByRole('button', { name: 'Start the run' }).click();
    await page.getByRole('alert').filter({ hasText: 'prompt is required.' }).waitFor();
    const before = (await getJson(`${a.url}/v1/runs?workflowId=brief`)).body.runs.length;

    await page.getByLabel('prompt (required)').fill('The autumn launch');
    await page.getByLabel('audience (required)').selectOption('partners');
    await page.getByLabel('count').fill('3');
    await page.getByLabel('urgent').check();
    await page.getByLabel('extra').fill('{"region": "EU"}');
    await page.getByRole('button', { name: 'Start the run' }).click();

    // The run's page opens: its inputs, what is to decide, and why it waits.
    await page.waitForURL(/\/console\/runs\/run_/);
    const runId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1) as string);
    await page.getByTestId('activity-summary').filter({ hasText: 'Waiting for approval: Approve the brief' }).waitFor();
    await page
      .getByTestId('deciding')
      .filter({ hasText: 'Approve the brief: Brief for partners: The autumn launch' })
      .waitFor();
    await page.getByTestId('inputs').getByText('The autumn launch').waitFor();
    const run = await getRun(a.url, runId);
    assert.deepEqual(run.inputs, {
      prompt: 'The autumn launch',
      audience: 'partners',
      count: 3,
      urgent: true,
      extra: { region: 'EU' },
    });
    assert.equal((await getJson(`${a.url}/v1/runs?workflowId=brief`)).body.runs.length, before + 1);
    await page.context().close();
  });

  it('inbox cards tell two runs of one workflow apart; a reject reads "Rejected by …", in words', async () => {
    const first = await startRun(a.url, 'brief', { prompt: 'Winter sale', audience: 'customers' });
    const second = await startRun(a.url, 'brief', { prompt: 'Spring partner summit', audience: 'partners' });
    const page = await open(`${a.url}/console`);
    const card = (runId: string) => page.locator(`li.card[data-run-id="${runId}"]`);
    await card(first).getByText('Winter sale').first().waitFor();
    await card(second).getByText('Spring partner summit').first().waitFor();
    await card(first).getByText('Approve the brief: Brief for customers: Winter sale').waitFor();
    await card(first).getByText('Waiting for approval: Approve the brief').waitFor();

    await card(first).getByRole('link', { name: 'Approve the brief' }).click();
    await page.getByText('Reject', { exact: true }).click();
    await page.getByRole('button', { name: 'Reject the draft' }).click();
    await page.getByTestId('rejected').filter({ hasText: 'Rejected by' }).waitFor();
    await page.locator('.page-head .status').filter({ hasText: 'Rejected' }).waitFor();
    assert.equal(await page.locator('.page-head .status-failed').count(), 0, 'a rejected run is not a red Failed');
    const timeline = page.locator('ol.timeline');
    await timeline
      .getByText(/rejected$/)
      .first()
      .waitFor();
    await timeline.getByText(/^Rejected by /).waitFor();
    await timeline.getByText('Asked for approval: Approve the brief').waitFor();
    const words = await timeline.locator('.what').allInnerTexts();
    assert.ok(
      words.every((w) => !/\b[a-z0-9]+\.[a-z]+(\.[a-z]+)?\b/.test(w)),
      `event type names in the timeline: ${words.join(' | ')}`,
    );
    await page.context().close();
  });

  it('a run whose URL is down: retrying on its page and under its operations row', async () => {
    const runId = await startRun(a.url, 'fetch_down', { url: `http://127.0.0.1:${port}/hook` });
    await until('the run retried twice', async () => (await getRun(a.url, runId)).activity?.attempt >= 2);
    const page = await open(`${a.url}/console/runs/${runId}`);
    await page.getByRole('heading', { name: 'Retrying' }).waitFor();
    await page
      .getByTestId('activity-summary')
      .filter({ hasText: /Retrying the http\.request call/ })
      .waitFor();
    await page.getByText('Attempts so far').waitFor();
    await page.getByText('Next attempt').waitFor();

    await page.getByRole('link', { name: 'Operations' }).click();
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    await row.locator('[data-activity="retrying"]').filter({ hasText: 'Retrying the http.request call' }).waitFor();
    await page.context().close();
  });

  it("a delegate's page links to the peer Handoff's page of its task, which names the agent that asked", async () => {
    const runId = await startRun(a.url, 'delegate', { prompt: 'the Q3 report' });
    const peerTaskId = await untilWaitingOn(a.url, runId, 'input-required');
    const page = await open(`${a.url}/console/runs/${runId}`);
    await page.getByRole('heading', { name: 'Waiting on another agent' }).waitFor();
    const link = page.getByTestId('peer-task-link');
    await link.waitFor();
    assert.equal(await link.getAttribute('href'), `${b.url}/console/runs/${peerTaskId}`);
    await page.getByTestId('peer-console-link').waitFor();

    // The peer's page: who asked, and the decision.
    await link.click();
    await page.waitForURL(`${b.url}/console/runs/${peerTaskId}`);
    await page
      .getByTestId('asked-by')
      .filter({ hasText: `for its task ${runId}` })
      .waitFor();
    await page
      .locator('ol.timeline')
      .getByText(/^Agent .+ sent a message$/)
      .waitFor();
    await page.getByRole('button', { name: 'Accept', exact: true }).click();
    await untilStatus(b.url, peerTaskId, ['completed']);

    // Back on the caller: the run completes, its timeline in words.
    await untilStatus(a.url, runId, ['completed']);
    await page.goto(`${a.url}/console/runs/${runId}`);
    const timeline = page.locator('ol.timeline');
    await timeline.getByText('Asked agent reviewer').waitFor();
    await timeline.getByText('Agent reviewer completed the task').waitFor();
    await page.context().close();
  });
});
