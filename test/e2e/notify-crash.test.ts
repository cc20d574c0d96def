// A crash between "the gate opened" and "its e-mail was sent": a real server process is SIGKILLed
// while its SMTP conversation for the gate's notification is still waiting for the server's reply
// (the real SMTP server on loopback holds it), and the restarted process sends it — once. The
// outbox row was written in the gate's own transaction, so the restart finds it.
// SQLite always, PostgreSQL when HANDOFF_TEST_PG_URL is set (there the dead process's lease must
// first expire: HANDOFF_PUSH_LEASE_MS).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';
import { getJson, killAllServers, postJson, startServer } from '../support/server-process.js';
import { startSmtpServer, tokenIn } from '../support/smtp.js';
import { until } from '../support/until.js';

const PG_URL = pgTestUrl();
const pgSchemas = PG_URL ? pgTestSchemas(PG_URL, 'notifycrash') : undefined;
const dirs: string[] = [];
const position = { x: 0, y: 0 };

const WORKFLOW = {
  id: 'mail-gate',
  name: 'A gate that e-mails',
  version: '1.0.0',
  nodes: [
    { id: 'draft', typeId: 'core.transform', name: 'Draft', position, config: { output: { text: 'hi' } }, inputs: {} },
    {
      id: 'review',
      typeId: 'core.approvalGate',
      name: 'Review',
      position,
      config: { title: 'Review', artifactFrom: 'draft', notify: [{ channel: 'email', to: ['ops@example.com'] }] },
      inputs: {},
    },
  ],
  edges: [{ id: 'e1', sourceNodeId: 'draft', targetNodeId: 'review' }],
  triggers: [{ id: 'manual', type: 'manual', enabled: true }],
  variables: [],
  metadata: {},
  settings: {},
};

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

after(async () => {
  await killAllServers();
  await pgSchemas?.dropAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

for (const dialect of PG_URL ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  describe(`a gate's e-mail across SIGKILL (${dialect})`, () => {
    it('is sent once, by the restarted process', async () => {
      const smtp = await startSmtpServer();
      after(() => smtp.close());
      smtp.hold(true);
      const workflows = tempDir('handoff-notify-crash-wf-');
      writeFileSync(join(workflows, 'mail-gate.json'), JSON.stringify(WORKFLOW));
      const env: Record<string, string> = {
        HANDOFF_WORKFLOWS: workflows,
        HANDOFF_SMTP_URL: smtp.url,
        HANDOFF_SMTP_FROM: 'handoff@example.com',
        HANDOFF_PUSH_LEASE_MS: '6000',
      };
      if (dialect === 'postgres' && pgSchemas) {
        Object.assign(env, { HANDOFF_DATABASE_URL: pgSchemas.url, HANDOFF_PG_SCHEMA: pgSchemas.fresh() });
      }
      const dataDir = tempDir('handoff-notify-crash-data-');
      let srv = await startServer({ dataDir, env });
      const created = await postJson(`${srv.url}/v1/runs`, { workflowId: 'mail-gate', inputs: {} });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const runId = created.body.runId as string;
      await until('the message on the wire, unanswered', () => smtp.attempts >= 1, {
        detail: () => srv.logs().slice(-2000),
      });
      assert.equal(smtp.mails.length, 0);
      await srv.kill();

      smtp.hold(false);
      srv = await startServer({ dataDir, env });
      const [mail] = await until('the e-mail sent by the restarted process', () => smtp.waitFor(1), {
        deadlineMs: 60_000,
        detail: () => srv.logs().slice(-2000),
      });
      assert.deepEqual(mail?.to, ['ops@example.com']);
      assert.ok(tokenIn(mail?.text ?? ''), 'with its decision link');
      const listed = await until('the notification recorded as sent', async () => {
        const r = await getJson(`${srv.url}/v1/notifications?runId=${runId}`);
        return r.body.notifications?.[0]?.state === 'sent' && r.body.notifications;
      });
      assert.equal(listed.length, 1, 'one notification');
      assert.equal(smtp.mails.length, 1, 'sent once');
      const run = (await getJson(`${srv.url}/v1/runs/${runId}`)).body;
      assert.equal(run.status, 'waiting-approval');
    });
  });
}
