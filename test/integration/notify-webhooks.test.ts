// Notifications to a webhook (Standard Webhooks signature with HANDOFF_WEBHOOK_SECRET) and to a
// Slack incoming webhook, received by a real https server with a test CA; their decision links;
// and a URL the egress guard refuses, dead-lettered without a request.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { type Json, startTestHost, type TestHost } from '../support/host.js';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import { tokenIn } from '../support/smtp.js';
import { until } from '../support/until.js';

const position = { x: 0, y: 0 };
const SECRET_BYTES = randomBytes(32);
const SECRET = `whsec_${SECRET_BYTES.toString('base64')}`;

function workflow(notify: unknown[]) {
  return {
    id: 'ask-by-hook',
    name: 'Questions by hook',
    version: '1.0.0',
    nodes: [
      {
        id: 'ask',
        typeId: 'core.clarificationGate',
        name: 'Ask',
        position,
        config: { title: 'Which colour?', questions: [{ id: 'colour', question: 'Which colour?' }], notify },
        inputs: {},
      },
    ],
    edges: [],
    triggers: [{ id: 'manual', type: 'manual', enabled: true }],
    variables: [],
    metadata: {},
    settings: {},
  };
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'handoff-notify-hooks-'));
  dirs.push(d);
  return d;
}

describe('webhook and Slack notifications', () => {
  let rx: HttpsReceiver;
  let t: TestHost;
  before(async () => {
    rx = await startHttpsReceiver();
    const dir = tempDir();
    writeFileSync(join(dir, 'ca.pem'), rx.caPem);
    const wf = workflow([
      { channel: 'webhook', url: rx.urlFor('127.0.0.1', '/hook') },
      { channel: 'slack', url: rx.urlFor('127.0.0.1', '/services/T0/B0/secret') },
    ]);
    writeFileSync(join(dir, 'ask-by-hook.json'), JSON.stringify(wf));
    writeFileSync(
      join(dir, 'relay-by-hook.json'),
      JSON.stringify({
        id: 'relay-by-hook',
        nodes: [
          {
            id: 'review',
            typeId: 'core.approvalGate',
            config: {
              title: 'Relayed review',
              requiredApprovals: 2,
              voterIdentity: 'declared',
              notify: [{ channel: 'webhook', url: rx.urlFor('127.0.0.1', '/relay-hook') }],
            },
          },
        ],
      }),
    );
    t = await startTestHost({
      workflows: [dir],
      env: {
        HANDOFF_WEBHOOK_SECRET: SECRET,
        HANDOFF_PUSH_CA_FILE: join(dir, 'ca.pem'),
        HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8',
        HANDOFF_PUSH_RETRY_SCHEDULE: '1h',
      },
    });
  });
  after(async () => {
    await t?.close();
    await rx?.close();
  });

  it('the webhook is signed as Standard Webhooks specify, and carries the gate and its links', async () => {
    const runId = await t.createRun('ask-by-hook', { topic: 'paint' });
    await t.waitForStatus(runId, ['waiting-input']);
    const hook = await until('the webhook', () => rx.requests.find((r) => r.path === '/hook'));
    const id = String(hook.headers['webhook-id']);
    const ts = String(hook.headers['webhook-timestamp']);
    assert.match(ts, /^\d+$/);
    const expected = createHmac('sha256', SECRET_BYTES).update(`${id}.${ts}.${hook.body}`).digest('base64');
    assert.equal(hook.headers['webhook-signature'], `v1,${expected}`);
    // …and a Standard Webhooks receiver's own check passes.
    new Webhook(SECRET).verify(hook.body, {
      'webhook-id': id,
      'webhook-timestamp': ts,
      'webhook-signature': String(hook.headers['webhook-signature']),
    });
    const body = JSON.parse(hook.body) as Json;
    assert.equal(body.type, 'interrupt.opened');
    assert.equal(body.data.runId, runId);
    assert.equal(body.data.title, 'Which colour?');
    assert.deepEqual(body.data.inputs, { topic: 'paint' });
    assert.equal(body.data.questions[0].id, 'colour');
    assert.ok(body.data.links.decide && body.data.links.api);

    const slack = await until('the Slack message', () => rx.requests.find((r) => r.path.startsWith('/services/')));
    const message = JSON.parse(slack.body) as Json;
    assert.match(message.text, /Which colour\?/);
    assert.equal(message.blocks[0].type, 'header');
    assert.equal(message.blocks[0].text.text, 'Which colour?');
    assert.match(JSON.stringify(message.blocks), /\/console\/decide\//);

    // The webhook's link answers the question, decided by the hook it went to.
    const token = tokenIn(body.data.links.decide) as string;
    const answered = await t.post(`/v1/interrupts/${token}`, { resumeValue: { answers: { colour: 'blue' } } });
    assert.equal(answered.status, 200, answered.text);
    await t.waitForStatus(runId, ['completed']);
    const log = await t.events(runId);
    const resolved = log.find((e: Json) => e.type === 'clarification.resolved');
    assert.equal(resolved.payload.decidedBy, `webhook:127.0.0.1:${rx.port}`);
    // The operators' list shows the hooks' origins, never the paths (a Slack URL's path is its key).
    const listed = await t.get(`/v1/notifications?runId=${runId}`);
    assert.deepEqual(listed.body.notifications.map((n: Json) => n.state).sort(), ['sent', 'sent']);
    assert.ok(!JSON.stringify(listed.body).includes('secret'));
  });

  it('a decision link votes as its recipient: a voter it names is dropped, even where the gate counts declared voters', async () => {
    const runId = await t.createRun('relay-by-hook', {});
    await t.waitForStatus(runId, ['waiting-approval']);
    const hook = await until('the webhook', () => rx.requests.find((r) => r.path === '/relay-hook'));
    const token = tokenIn(JSON.parse(hook.body).data.links.decide) as string;
    const res = await t.post(`/v1/interrupts/${token}`, { resumeValue: { action: 'accept', voter: 'ceo' } });
    assert.equal(res.status, 200, res.text);
    const snap = (await t.get(`/v1/runs/${runId}`)).body;
    assert.equal(snap.status, 'waiting-approval');
    assert.deepEqual(
      snap.interrupt.votes.map((v: Json) => [v.principal, v.castBy]),
      [[`webhook:127.0.0.1:${rx.port}`, undefined]],
    );
  });
});

describe('a notification URL the egress guard refuses', () => {
  it('is dead-lettered without a request (and one address’s link requests are rate-limited)', async () => {
    const rx = await startHttpsReceiver();
    const dir = tempDir();
    writeFileSync(
      join(dir, 'ask-by-hook.json'),
      JSON.stringify(workflow([{ channel: 'webhook', url: rx.urlFor('127.0.0.1', '/hook') }])),
    );
    const t = await startTestHost({ workflows: [dir], env: { HANDOFF_WEBHOOK_SECRET: SECRET } });
    try {
      const runId = await t.createRun('ask-by-hook', {});
      const [dead] = await until('the dead letter', async () => {
        const r = await t.get(`/v1/notifications?runId=${runId}&state=dead`);
        return r.body.notifications.length === 1 && r.body.notifications;
      });
      assert.match(dead.lastError, /egress_denied/);
      assert.equal(rx.requests.length, 0);
      // One address may try 60 links a minute: guessing tokens is rate-limited too.
      for (let i = 0; i < 60; i++) assert.equal((await t.get(`/v1/interrupts/guess-${i}`)).status, 404);
      const limited = await t.get('/v1/interrupts/guess-60');
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers['retry-after']) > 0);
    } finally {
      await t.close();
      await rx.close();
    }
  });

  it('a webhook notify without HANDOFF_WEBHOOK_SECRET fails to load', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'ask-by-hook.json'),
      JSON.stringify(workflow([{ channel: 'webhook', url: 'https://example.com/h' }])),
    );
    await assert.rejects(startTestHost({ workflows: [dir] }), /HANDOFF_WEBHOOK_SECRET/);
  });
});
