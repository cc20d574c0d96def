// Notifications from gates and their one-time decision links, on a real SMTP server on loopback:
// the gate's e-mail (text and HTML: title, workflow, inputs, draft, deadline, links), the link's
// GET (changes nothing) and POST (decides through the engine as its recipient, once), the refusals
// (tampered or unknown 404 alike, used 409, expired 410, not an approver 403), a dead letter and
// its retry, and the load-time refusal of an e-mail notify without HANDOFF_SMTP_URL.
// SQLite always, PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Clock } from '../../src/engine/clock.js';
import { bearer, DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';
import { type SmtpServer, startSmtpServer, tokenIn } from '../support/smtp.js';
import { until } from '../support/until.js';

const KEYS = { alice: 'key-alice-000', bob: 'key-bob-00000', boss: 'key-boss-0000' } as const;
const API_KEYS =
  'key-alice-000=acme:alice:alice@example.com,key-bob-00000=acme:bob:bob@example.com,key-boss-0000=acme:boss:boss@example.com';
const as = (who: keyof typeof KEYS) => bearer(KEYS[who]);
const HOUR = 3_600_000;
const position = { x: 0, y: 0 };

/** A clock only the test moves (it starts at the real time, so the worker's own waits agree). */
class TestClock implements Clock {
  t = Date.now();
  now(): number {
    return this.t;
  }
}

/** draft → review (an approval gate with `gate` config) → final. */
function workflow(id: string, gate: Record<string, unknown>) {
  return {
    id,
    name: `Launch note (${id})`,
    version: '1.0.0',
    nodes: [
      {
        id: 'draft',
        typeId: 'core.transform',
        name: 'Draft',
        position,
        config: { output: { text: 'Hello {{ inputs.prompt }}' } },
        inputs: {},
      },
      {
        id: 'review',
        typeId: 'core.approvalGate',
        name: 'Review',
        position,
        config: { title: 'Review the launch note', artifactFrom: 'draft', ...gate },
        inputs: {},
      },
      { id: 'final', typeId: 'core.transform', name: 'Final', position, config: { output: { ok: true } }, inputs: {} },
    ],
    edges: [
      { id: 'e1', sourceNodeId: 'draft', targetNodeId: 'review' },
      { id: 'e2', sourceNodeId: 'review', targetNodeId: 'final' },
    ],
    triggers: [{ id: 'manual', type: 'manual', enabled: true }],
    variables: [],
    metadata: {},
    settings: {},
  };
}

const WORKFLOWS = [
  workflow('mail-review', {
    approversList: ['alice'],
    timeoutMs: 24 * HOUR,
    notify: [{ channel: 'email', to: ['approvers', 'carol@example.com'] }],
  }),
  workflow('mail-escalate', {
    approversList: ['alice'],
    timeoutMs: HOUR,
    onTimeout: 'escalate',
    escalateTo: ['boss'],
    notify: [{ channel: 'email', to: ['approvers'] }],
  }),
  // Routed by group (RFC 0104): a link decides as its recipient, who has no groups, so none is sent.
  workflow('mail-group', {
    approverGroupRefs: ['finance'],
    notify: [{ channel: 'email', to: ['dora@example.com'] }],
  }),
  workflow('mail-remind', {
    approversList: ['bob'],
    timeoutMs: 2 * HOUR,
    remindBeforeMs: HOUR,
    notify: [{ channel: 'email', to: ['approvers'] }],
  }),
];

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function workflowDir(defs: unknown[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-notify-wf-'));
  dirs.push(dir);
  for (const d of defs) writeFileSync(join(dir, `${(d as { id: string }).id}.json`), JSON.stringify(d));
  return dir;
}

const mailsTo = (smtp: SmtpServer, address: string) => smtp.mails.filter((m) => m.to.includes(address));

for (const dialect of DIALECTS) {
  describe(`notifications by e-mail and decision links (${dialect})`, () => {
    let t: TestHost;
    let smtp: SmtpServer;
    const clock = new TestClock();
    before(async () => {
      smtp = await startSmtpServer();
      t = await startTestHost({
        pg: dialect === 'postgres',
        apiKeys: API_KEYS,
        clock,
        workflows: [workflowDir(WORKFLOWS)],
        env: {
          HANDOFF_SMTP_URL: smtp.url,
          HANDOFF_SMTP_FROM: 'Handoff <handoff@example.com>',
          HANDOFF_PUBLIC_URL: 'https://handoff.example.com',
          HANDOFF_PUSH_RETRY_SCHEDULE: '1h',
        },
      });
    });
    after(async () => {
      await t?.close();
      await smtp?.close();
    });

    let runId: string;
    let token: string;

    it('e-mails the approvers (by their configured address) and the named addresses when the gate opens', async () => {
      runId = await t.createRun('mail-review', { prompt: 'the moon' }, as('alice'));
      await t.waitForStatus(runId, ['waiting-approval'], as('alice'));
      const [toAlice] = await until(
        'alice’s mail',
        () => mailsTo(smtp, 'alice@example.com').length === 1 && mailsTo(smtp, 'alice@example.com'),
      );
      const [toCarol] = await until(
        'carol’s mail',
        () => mailsTo(smtp, 'carol@example.com').length === 1 && mailsTo(smtp, 'carol@example.com'),
      );
      const mail = toAlice as Json;
      assert.match(mail.subject, /Review the launch note/);
      for (const part of [mail.text, mail.html]) {
        assert.match(part, /Review the launch note/, 'the gate’s title');
        assert.match(part, /Launch note \(mail-review\)/, 'the workflow');
        assert.match(part, /the moon/, 'the inputs');
        assert.match(part, /Hello the moon/, 'the draft');
        assert.match(part, /Deadline/, 'the deadline');
        assert.match(part, /https:\/\/handoff\.example\.com\/console\/decide\//, 'the decide page, at the public URL');
      }
      assert.match(mail.text, /https:\/\/handoff\.example\.com\/v1\/interrupts\//, 'the API form of the link');
      token = tokenIn(mail.text) as string;
      assert.ok(token);
      assert.equal(tokenIn(mail.html), token);
      // carol is no approver: told, but her mail carries no link that could decide.
      assert.equal(tokenIn((toCarol as Json).text), undefined);
      assert.equal(smtp.mails.length, 2, 'one mail per recipient');
      const stored = await t.host.store.db.selectFrom('decision_links').selectAll().execute();
      assert.ok(
        stored.every((l) => l.token_hash !== token && !JSON.stringify(l).includes(token.split('.')[0] as string)),
        'only a hash of the token is stored',
      );
    });

    it('GET shows the gate without an API key and changes nothing', async () => {
      const before = await t.events(runId, as('alice'));
      const res = await t.get(`/v1/interrupts/${token}`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.title, 'Review the launch note');
      assert.equal(res.body.kind, 'approval');
      assert.equal(res.body.recipient, 'alice');
      assert.deepEqual(res.body.artifact, { text: 'Hello the moon' });
      assert.ok(res.body.actions.includes('accept'));
      assert.ok(res.body.deadline);
      assert.equal((await t.get(`/v1/interrupts/${token}`)).status, 200, 'a second look is fine too');
      assert.equal((await t.events(runId, as('alice'))).length, before.length);
      assert.equal((await t.get(`/v1/runs/${runId}`, as('alice'))).body.status, 'waiting-approval');
    });

    it('a tampered or unknown token is 404, the two alike', async () => {
      const [random, sig] = token.split('.') as [string, string];
      const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
      const tampered = await t.get(`/v1/interrupts/${random}.${flip(sig)}`);
      const otherRandom = await t.get(`/v1/interrupts/${flip(random)}.${sig}`);
      const garbage = await t.post('/v1/interrupts/not-a-token', { resumeValue: { action: 'accept' } });
      const long = await t.get(`/v1/interrupts/${token}${'A'.repeat(150)}`);
      for (const r of [tampered, otherRandom, garbage, long]) {
        assert.equal(r.status, 404);
        assert.deepEqual(r.body, tampered.body);
      }
    });

    it('POST decides once, as the recipient, through the engine; a second use is 409', async () => {
      const res = await t.post(`/v1/interrupts/${token}`, { resumeValue: { action: 'accept' } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.interrupt.outcome, 'resolved');
      const done = await t.waitForStatus(runId, ['completed'], as('alice'));
      assert.equal(done.nodeStates?.review?.decidedBy ?? 'alice', 'alice');
      const log = await t.events(runId, as('alice'));
      const used = log.find((e: Json) => e.type === 'decision-link.used');
      assert.equal(used.payload.recipient, 'alice');
      const received = log.find((e: Json) => e.type === 'approval.received');
      assert.equal(received.payload.decidedBy, 'alice');
      assert.ok(used.sequence < received.sequence);
      const again = await t.post(`/v1/interrupts/${token}`, { resumeValue: { action: 'reject' } });
      assert.equal(again.status, 409);
      assert.equal(again.body.error, 'link_used');
      assert.equal((await t.get(`/v1/interrupts/${token}`)).status, 409);
    });

    it('a bad resume value is refused and leaves the link unspent', async () => {
      const id = await t.createRun('mail-review', { prompt: 'mars' }, as('alice'));
      await t.waitForStatus(id, ['waiting-approval'], as('alice'));
      const mail = await until('the second mail to alice', () => mailsTo(smtp, 'alice@example.com')[1]);
      const link = tokenIn(mail.text) as string;
      const bad = await t.post(`/v1/interrupts/${link}`, { resumeValue: { action: 'launch' } });
      assert.equal(bad.status, 400);
      const ok = await t.post(`/v1/interrupts/${link}`, { resumeValue: { action: 'reject', feedback: 'no' } });
      assert.equal(ok.status, 200, ok.text);
      assert.equal((await t.waitForStatus(id, ['failed'], as('alice'))).error.code, 'interrupt_rejected');
    });

    it('escalation e-mails the new approvers, with links of their own; the old link ended with its deadline (410)', async () => {
      const id = await t.createRun('mail-escalate', { prompt: 'venus' }, as('alice'));
      await t.waitForStatus(id, ['waiting-approval'], as('alice'));
      const before = mailsTo(smtp, 'alice@example.com').length;
      const toAlice = await until('alice’s mail of the escalating gate', () =>
        smtp.mails.find((m) => m.to.includes('alice@example.com') && m.text.includes('venus')),
      );
      assert.ok(before >= 1);
      clock.t += HOUR + 1000;
      t.host.runner.kick();
      const toBoss = await until('the escalation mail to boss', () => mailsTo(smtp, 'boss@example.com')[0]);
      assert.match(toBoss.subject, /Escalated/);
      const refused = await t.post(`/v1/interrupts/${tokenIn(toAlice.text)}`, { resumeValue: { action: 'accept' } });
      assert.equal(refused.status, 410, refused.text);
      const ok = await t.post(`/v1/interrupts/${tokenIn(toBoss.text)}`, { resumeValue: { action: 'accept' } });
      assert.equal(ok.status, 200, ok.text);
      await t.waitForStatus(id, ['completed'], as('boss'));
    });

    it('reminds remindBeforeMs before the deadline; a link past its expiry is 410', async () => {
      const id = await t.createRun('mail-remind', { prompt: 'pluto' }, as('bob'));
      await t.waitForStatus(id, ['waiting-approval'], as('bob'));
      const first = await until('bob’s mail', () => mailsTo(smtp, 'bob@example.com')[0]);
      assert.doesNotMatch(first.subject, /Reminder/);
      clock.t += HOUR + 1000;
      t.host.notifyWorker.kick();
      const reminder = await until('the reminder', () => mailsTo(smtp, 'bob@example.com')[1]);
      assert.match(reminder.subject, /Reminder/);
      assert.equal(tokenIn(reminder.text), tokenIn(first.text), 'the reminder carries the same link');
      clock.t += 2 * HOUR;
      const late = await t.post(`/v1/interrupts/${tokenIn(first.text)}`, { resumeValue: { action: 'accept' } });
      assert.equal(late.status, 410);
      assert.equal(late.body.error, 'link_expired');
    });

    it('limits the uses of one link (429 with Retry-After), and a limited POST decides nothing', async () => {
      const id = await t.createRun('mail-review', { prompt: 'jupiter' }, as('alice'));
      await t.waitForStatus(id, ['waiting-approval'], as('alice'));
      const mail = await until('the mail of this run', () =>
        smtp.mails.find((m) => m.text.includes('jupiter') && m.to.includes('alice@example.com')),
      );
      const link = tokenIn(mail.text) as string;
      for (let i = 0; i < 10; i++) assert.equal((await t.get(`/v1/interrupts/${link}`)).status, 200);
      const limited = await t.post(`/v1/interrupts/${link}`, { resumeValue: { action: 'accept' } });
      assert.equal(limited.status, 429);
      assert.equal(limited.body.error, 'rate_limited');
      assert.ok(Number(limited.headers['retry-after']) > 0);
      assert.equal((await t.get(`/v1/runs/${id}`, as('alice'))).body.status, 'waiting-approval');
      // Another link is not held back by this one's limit.
      assert.equal((await t.get(`/v1/interrupts/${token}`)).status, 409);
    });

    it('a refused message is dead-lettered, listed, and sent again by an operator’s retry', async () => {
      smtp.refuse(true);
      const id = await t.createRun('mail-review', { prompt: 'saturn' }, as('alice'));
      await t.waitForStatus(id, ['waiting-approval'], as('alice'));
      const dead = await until('the dead letters', async () => {
        const r = await t.get(`/v1/notifications?runId=${id}&state=dead`, as('alice'));
        return r.body.notifications.length === 2 && r.body.notifications;
      });
      assert.match(dead[0].lastError, /550|mailbox unavailable/);
      smtp.refuse(false);
      const sentBefore = smtp.mails.length;
      for (const n of dead) {
        const r = await t.post(`/v1/notifications/${n.notificationId}/retry`, undefined, as('alice'));
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.state, 'pending');
      }
      await until('both sent after the retry', () => smtp.mails.length === sentBefore + 2);
      // The SMTP server has both before the worker records the second as sent: wait for the record.
      const states = await until('both recorded as sent', async () => {
        const listed = await t.get(`/v1/notifications?runId=${id}`, as('alice'));
        const s = listed.body.notifications.map((n: Json) => n.state);
        return s.every((x: string) => x === 'sent') && s;
      });
      assert.deepEqual(states, ['sent', 'sent']);
      const metrics = (await t.get('/metrics')).text;
      assert.match(metrics, /handoff_notification_attempts_total\{[^}]*channel="email"[^}]*outcome="dead"[^}]*\} 2/);
      const notDead = await t.post(`/v1/notifications/${dead[0].notificationId}/retry`, undefined, as('alice'));
      assert.equal(notDead.status, 404);
    });

    it('a gate routed by group tells its recipients without a link that could decide', async () => {
      const id = await t.createRun('mail-group', { prompt: 'the sea' }, as('alice'));
      await t.waitForStatus(id, ['waiting-approval'], as('alice'));
      const [toDora] = await until(
        'dora’s mail',
        () => mailsTo(smtp, 'dora@example.com').length === 1 && mailsTo(smtp, 'dora@example.com'),
      );
      assert.match((toDora as Json).text, /Hello the sea/);
      assert.equal(tokenIn((toDora as Json).text), undefined);
      const links = await t.host.store.db
        .selectFrom('decision_links')
        .select('run_id')
        .where('run_id', '=', id)
        .execute();
      assert.deepEqual(links, []);
    });

    it('the retention purge takes a run’s notifications and links with it', async () => {
      const terminal = await t.host.store.db
        .selectFrom('runs')
        .select('run_id')
        .where('status', 'in', ['completed', 'failed', 'cancelled'])
        .execute();
      assert.ok(terminal.length > 0);
      await t.host.store.purgeTerminalBefore(new Date(clock.t + 365 * 24 * HOUR));
      const ids = terminal.map((r) => r.run_id);
      for (const table of ['notifications', 'decision_links'] as const) {
        const left = await t.host.store.db.selectFrom(table).select('run_id').where('run_id', 'in', ids).execute();
        assert.deepEqual(left, [], table);
      }
      assert.equal((await t.get(`/v1/interrupts/${token}`)).status, 404, 'a purged run’s link is unknown');
    });
  });
}

describe('a workflow with an e-mail notify', () => {
  it('authenticates to the SMTP server with the password of the secret SMTP_PASSWORD', async () => {
    const smtp = await startSmtpServer({ auth: { user: 'mailer', pass: 'pw-from-a-secret' } });
    const url = new URL(smtp.url);
    url.username = 'mailer';
    const t = await startTestHost({
      workflows: [workflowDir([workflow('anyone-mail', { notify: [{ channel: 'email', to: ['ops@example.com'] }] })])],
      env: {
        HANDOFF_SMTP_URL: url.toString(),
        HANDOFF_SMTP_FROM: 'handoff@example.com',
        HANDOFF_SECRET_SMTP_PASSWORD: 'pw-from-a-secret',
      },
    });
    try {
      await t.createRun('anyone-mail', { prompt: 'auth' });
      const [mail] = await smtp.waitFor(1);
      assert.deepEqual(mail?.to, ['ops@example.com']);
      assert.ok(tokenIn(mail?.text ?? ''), 'a gate anyone may decide gives every recipient a link');
    } finally {
      await t.close();
      await smtp.close();
    }
  });

  it('fails to load without HANDOFF_SMTP_URL, naming the setting', async () => {
    await assert.rejects(
      startTestHost({ workflows: [workflowDir([WORKFLOWS[0]])] }),
      (err: Error) => /HANDOFF_SMTP_URL/.test(err.message) && /mail-review/.test(err.message),
    );
  });
});
