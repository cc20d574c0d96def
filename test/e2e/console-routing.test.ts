// The console names who may decide a gate routed by group or role (OpenWOP RFC 0104), in a real
// headless Chromium against a real `handoff serve`: the inbox card and the run's decision panel
// say "Group finance" rather than "Anyone in your tenant", a gate naming people and refs names
// both, and a finance member no list names decides from the run page. Every wait is on a condition
// on the page or the API; nothing sleeps.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { signInWithKey } from '../support/console-browser.js';
import { until } from '../support/until.js';

const CHROMIUM = process.env.HANDOFF_CHROMIUM ?? '/usr/bin/chromium';
const WAIT_MS = 20_000;
/** alice is in finance; bob in no group and holds no role (HANDOFF_API_KEYS, JSON form). */
const ALICE = 'key-routing-alice';
const BOB = 'key-routing-bob01';
const API_KEYS = JSON.stringify({
  [ALICE]: { tenant: 'acme', principal: 'alice', groups: ['finance'] },
  [BOB]: { tenant: 'acme', principal: 'bob' },
});

const gate = (id: string, config: Record<string, unknown>) => ({
  id,
  nodes: [{ id: 'review', typeId: 'core.approvalGate', config: { title: `Review ${id}`, ...config } }],
});
const WORKFLOWS = {
  'by-group': gate('by-group', { approverGroupRefs: ['finance'] }),
  mixed: gate('mixed', { approversList: ['dana'], approverGroupRefs: ['finance'], approverRoleRefs: ['controller'] }),
};

describe('console: who may decide a gate routed by group or role, in Chromium', { timeout: 120_000 }, () => {
  let srv: ServerProcess;
  let browser: Browser;
  let dir: string;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: \`apt-get install -y chromium\``);
    dir = mkdtempSync(join(tmpdir(), 'handoff-console-routing-'));
    const workflows = join(dir, 'workflows');
    mkdirSync(workflows);
    for (const [id, def] of Object.entries(WORKFLOWS)) {
      writeFileSync(join(workflows, `${id}.json`), JSON.stringify(def));
    }
    srv = await startServer({ dataDir: dir, env: { HANDOFF_API_KEYS: API_KEYS, HANDOFF_WORKFLOWS: workflows } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await killAllServers();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const signIn = (key: string): Promise<Page> => signInWithKey(browser, srv.url, key, WAIT_MS);
  const startRun = async (workflowId: string) => {
    const res = await postJson(`${srv.url}/v1/runs`, { workflowId, inputs: {} }, { token: BOB });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const runId = res.body.runId as string;
    await until(
      `${runId} waits for approval`,
      async () => (await getJson(`${srv.url}/v1/runs/${runId}`, { token: BOB })).body.status === 'waiting-approval',
      WAIT_MS,
    );
    return runId;
  };
  /** The "Who may decide" of a list of facts. */
  const whoMayDecide = (scope: Locator | Page) => scope.locator('div:has(> dt:text-is("Who may decide")) > dd');

  it('the inbox card and the decision panel name the group, and a member of it decides', async () => {
    const byGroup = await startRun('by-group');
    const mixed = await startRun('mixed');

    const page = await signIn(BOB);
    const card = (runId: string) => page.locator(`li.card[data-run-id="${runId}"]`);
    await card(byGroup).waitFor();
    assert.equal(await whoMayDecide(card(byGroup)).textContent(), 'Group finance');
    await card(mixed).waitFor();
    assert.equal(await whoMayDecide(card(mixed)).textContent(), 'dana or group finance, role controller');

    // The run's page: its decision panel says the same.
    await card(byGroup).getByRole('link', { name: 'Review by-group' }).click();
    const panel = page.locator('section.panel[data-node-id="review"]');
    await panel.waitFor();
    assert.equal(await whoMayDecide(panel).textContent(), 'Group finance');
    await page.context().close();

    // alice, whom no list names but whose key says finance, accepts on the run's page.
    const alice = await signIn(ALICE);
    await alice.goto(`${srv.url}/console/runs/${byGroup}`);
    await alice.getByRole('button', { name: 'Accept', exact: true }).click();
    await alice.locator('.page-head .status', { hasText: 'Completed' }).waitFor();
    const run = (await getJson(`${srv.url}/v1/runs/${byGroup}`, { token: BOB })).body;
    assert.equal(run.status, 'completed');
    await alice.context().close();
  });
});
