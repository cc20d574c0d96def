// The audit log (docs/operations.md#audit-log) and decisions bound to what was seen: every act of a
// person lands in the tenant's hash chain with the act's own transaction; GET /v1/audit reads it,
// tenant-scoped (an admin key: every tenant); `handoff audit verify` (the compiled CLI) exits 0
// while the chain holds and 1 naming the entry after a row is edited or deleted; a decision sent
// for an artifact a refine replaced is refused 409 `artifact_changed` and changes nothing.
// SQLite always, PostgreSQL too when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { dataMessage, rpc, send } from '../support/a2a.js';
import { bearer, DIALECTS, type Json, PG_URL, type TestHost, startTestHost, withPg } from '../support/host.js';
import { uniqueSchemaName } from '../support/pg.js';
import { cliPath } from '../support/server-process.js';

const KEYS = {
  alice: 'key-alice-0001',
  bob: 'key-bob-000001',
  eve: 'key-eve-000001',
  ops: 'key-ops-000001',
} as const;
const API_KEYS = `${KEYS.alice}=t1:alice,${KEYS.bob}=t1:bob,${KEYS.eve}=t2:eve,${KEYS.ops}=ops:root:admin`;
const as = (who: keyof typeof KEYS) => bearer(KEYS[who]);
/** A secret the host holds: never written to the audit log, even when a decider pastes it. */
const SECRET = 'crm-token-5f2b9c71d0';

const run = promisify(execFile);

/** `handoff audit verify` against the host's database: its exit code and output. */
async function verify(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cliPath(), 'audit', 'verify', ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

for (const dialect of DIALECTS) {
  describe(`audit log and artifact binding (${dialect})`, () => {
    let t: TestHost;
    let dataDir: string;
    let schema: string | undefined;
    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'handoff-audit-'));
      schema = dialect === 'postgres' ? uniqueSchemaName('audit') : undefined;
      t = await startTestHost({
        pg: dialect === 'postgres',
        apiKeys: API_KEYS,
        dataDir,
        ...(schema ? { pgSchema: schema } : {}),
        env: { HANDOFF_SECRET_CRM_TOKEN: SECRET },
      });
    });
    after(async () => {
      await t?.close();
      rmSync(dataDir, { recursive: true, force: true });
      if (schema) await withPg((c) => c.query(`drop schema if exists ${schema} cascade`));
    });

    const atGate = async (who: keyof typeof KEYS = 'alice'): Promise<{ runId: string; snap: Json }> => {
      const runId = await t.createRun('approval', { prompt: 'launch' }, as(who));
      const snap = await t.waitForStatus(runId, ['waiting-approval'], as(who));
      return { runId, snap };
    };
    const audit = async (query: string, who: keyof typeof KEYS = 'alice'): Promise<Json> => {
      const res = await t.get(`/v1/audit${query}`, as(who));
      assert.equal(res.status, 200, res.text);
      return res.body;
    };

    it('the snapshot shows artifactHash; a refine over REST from the console, then an A2A approve, are recorded in order', async () => {
      const { runId, snap } = await atGate();
      assert.match(snap.interrupt.artifactHash, /^sha256:[0-9a-f]{64}$/);
      const refine = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'refine', refineFeedback: { scope: 'whole', text: 'shorter' } } },
        { ...as('alice'), 'handoff-surface': 'console' },
      );
      assert.equal(refine.status, 200, refine.text);
      const again = await t.waitForStatus(runId, ['waiting-approval'], as('bob'));
      assert.notEqual(again.interrupt.artifactHash, snap.interrupt.artifactHash, 'the refine changed the draft');
      // The A2A view shows the same hash, and a reply bound to it is applied.
      const task = (await rpc(t, 'tasks/get', { id: runId }, { headers: as('bob') })).body.result;
      assert.equal(task.metadata.openwop.interrupt.artifactHash, again.interrupt.artifactHash);
      const reply = await send(
        t,
        dataMessage({ action: 'accept', expectedArtifactHash: again.interrupt.artifactHash }, { taskId: runId }),
        { headers: as('bob') },
      );
      assert.equal(reply.body.error, undefined, reply.text);
      await t.waitForStatus(runId, ['completed'], as('alice'));

      const { entries } = await audit(`?runId=${runId}`);
      assert.deepEqual(
        entries.map((e: Json) => [e.act, e.principal, e.surface, e.nodeId, e.subjectHash]),
        [
          ['refine', 'alice', 'console', 'review', snap.interrupt.artifactHash],
          ['approve', 'bob', 'a2a', 'review', again.interrupt.artifactHash],
        ],
      );
      assert.deepEqual(entries[0].values.resumeValue.refineFeedback, { scope: 'whole', text: 'shorter' });
      assert.equal(entries[1].prevHash, entries[0].hash, 'the chain links one entry to the one before');
    });

    it('a cancel, a push-config set and delete are recorded; another tenant sees none of it, an admin key sees all', async () => {
      const { runId } = await atGate();
      const set = await rpc(
        t,
        'tasks/pushNotificationConfig/set',
        {
          taskId: runId,
          pushNotificationConfig: { id: 'hook', url: 'https://example.com/hook', token: 'tok-secret-123' },
        },
        { headers: as('alice') },
      );
      assert.equal(set.body.error, undefined, set.text);
      const del = await rpc(
        t,
        'tasks/pushNotificationConfig/delete',
        { id: runId, pushNotificationConfigId: 'hook' },
        { headers: as('alice') },
      );
      assert.equal(del.body.error, undefined, del.text);
      const cancel = await t.post(`/v1/runs/${runId}/cancel`, { reason: `not needed ${SECRET}` }, as('bob'));
      assert.equal(cancel.status, 200, cancel.text);

      const { entries } = await audit(`?runId=${runId}`);
      assert.deepEqual(
        entries.map((e: Json) => [e.act, e.principal, e.surface]),
        [
          ['push-config.set', 'alice', 'a2a'],
          ['push-config.delete', 'alice', 'a2a'],
          ['cancel', 'bob', 'rest'],
        ],
      );
      assert.doesNotMatch(JSON.stringify(entries), /tok-secret-123/, 'a push token is never recorded');
      assert.equal(entries[2].values.reason, 'not needed [redacted]', 'a secret the host holds is scrubbed');

      assert.deepEqual((await audit(`?runId=${runId}`, 'eve')).entries, [], 'another tenant sees nothing');
      const all = await audit(`?runId=${runId}`, 'ops');
      assert.equal(all.entries.length, 3, 'an admin key reads every tenant');
      const tenants = new Set((await audit('?limit=1000', 'ops')).entries.map((e: Json) => e.tenantId));
      assert.ok(tenants.has('t1'));
    });

    it('pages: limit and nextSince walk the log without repeats; a since time filters', async () => {
      const first = await audit('?limit=1');
      assert.equal(first.entries.length, 1);
      assert.ok(first.nextSince);
      const second = await audit(`?limit=1&since=${encodeURIComponent(first.nextSince)}`);
      assert.equal(second.entries.length, 1);
      assert.notEqual(second.entries[0].hash, first.entries[0].hash);
      const future = await audit(`?since=${encodeURIComponent('2999-01-01T00:00:00Z')}`);
      assert.deepEqual(future.entries, []);
      const bad = await t.get('/v1/audit?since=not-a-cursor', as('alice'));
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.body.error, 'validation_error');
    });

    it('race: a decision carrying the hash from before a refine is refused 409 artifact_changed; nothing changes', async () => {
      const { runId, snap } = await atGate();
      const seen = snap.interrupt.artifactHash;
      const refine = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        {
          resumeValue: { action: 'refine', refineFeedback: { scope: 'whole', text: 'more' } },
          expectedArtifactHash: seen,
        },
        as('alice'),
      );
      assert.equal(refine.status, 200, refine.text);
      const now = await t.waitForStatus(runId, ['waiting-approval'], as('bob'));
      const events = (await t.events(runId, as('bob'))).length;
      const entries = (await audit(`?runId=${runId}`)).entries.length;

      const late = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' }, expectedArtifactHash: seen },
        as('bob'),
      );
      assert.equal(late.status, 409, late.text);
      assert.equal(late.body.error, 'artifact_changed');
      assert.equal(late.body.details.artifactHash, now.interrupt.artifactHash);
      const ifMatch = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        {
          ...as('bob'),
          'if-match': `"${seen}"`,
        },
      );
      assert.equal(ifMatch.status, 409, ifMatch.text);
      assert.equal(ifMatch.body.error, 'artifact_changed');
      const a2a = await send(t, dataMessage({ action: 'accept', expectedArtifactHash: seen }, { taskId: runId }), {
        headers: as('bob'),
      });
      assert.equal(a2a.body.error?.data?.error, 'artifact_changed', a2a.text);
      // A2A 1.0 (SendMessage), the hash in the message's metadata.openwop.
      const v1 = await rpc(
        t,
        'SendMessage',
        {
          message: {
            messageId: `msg-${runId}-v1`,
            role: 'ROLE_USER',
            taskId: runId,
            parts: [{ data: { action: 'accept' } }],
            metadata: { openwop: { expectedArtifactHash: seen } },
          },
        },
        { headers: { ...as('bob'), 'a2a-version': '1.0' } },
      );
      assert.equal(v1.body.error?.code, -32004, v1.text);
      assert.match(v1.body.error.message, /^artifact_changed: /);
      assert.equal(v1.body.error.data?.[0]?.metadata?.error, 'artifact_changed', v1.text);

      const after = await t.get(`/v1/runs/${runId}`, as('bob'));
      assert.deepEqual(after.body, now, 'the run and its open interrupt are as they were');
      assert.equal((await t.events(runId, as('bob'))).length, events, 'no event was appended');
      assert.equal((await audit(`?runId=${runId}`)).entries.length, entries, 'a refused decision is no act');

      const bound = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        {
          ...as('bob'),
          'if-match': now.interrupt.artifactHash,
        },
      );
      assert.equal(bound.status, 200, bound.text);
    });

    it('handoff audit verify: exit 0 with the count; 1 naming the entry after a row is edited, or deleted', async () => {
      const target =
        dialect === 'postgres'
          ? { args: ['--database-url', PG_URL as string, '--pg-schema', schema as string], env: {} }
          : { args: ['--data', dataDir], env: {} };
      // SQLite: the host holds its file exclusively; verify reads it once the host is closed.
      const count = (await audit('?limit=1000', 'ops')).entries.length;
      await t.close();
      const good = await verify(target.args, target.env);
      assert.equal(good.code, 0, good.out);
      assert.match(good.out, new RegExp(`verified: ${count} entries`));

      const sqlAll = async (text: string): Promise<void> => {
        if (dialect === 'postgres') await withPg((c) => c.query(`set search_path to ${schema}; ${text}`));
        else {
          const db = new Database(join(dataDir, 'handoff.db'));
          try {
            db.exec(text);
          } finally {
            db.close();
          }
        }
      };
      await sqlAll(`update audit_entries set "values" = '{"edited":true}' where tenant_id = 't1' and seq = 2`);
      const edited = await verify(target.args, target.env);
      assert.equal(edited.code, 1, edited.out);
      assert.match(edited.out, /tenant "t1" entry 2: its hash does not match/);

      await sqlAll(`delete from audit_entries where tenant_id = 't1' and seq = 2`);
      const deleted = await verify(target.args, target.env);
      assert.equal(deleted.code, 1, deleted.out);
      assert.match(deleted.out, /tenant "t1" entry 2: entry 2 is missing/);
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`audit chain under concurrent decisions (${dialect})`, () => {
    // PostgreSQL: two hosts (two stores, two pools) on one schema, as two instances would be.
    const hosts: TestHost[] = [];
    let schema: string | undefined;
    before(async () => {
      schema = dialect === 'postgres' ? uniqueSchemaName('audit') : undefined;
      const count = dialect === 'postgres' ? 2 : 1;
      for (let i = 0; i < count; i++) {
        hosts.push(
          await startTestHost({
            pg: dialect === 'postgres',
            apiKeys: API_KEYS,
            ...(schema ? { pgSchema: schema } : {}),
          }),
        );
      }
    });
    after(async () => {
      for (const h of hosts) await h.close();
      if (schema) await withPg((c) => c.query(`drop schema if exists ${schema} cascade`));
    });

    it('decisions of one tenant committed at once on every instance make one unbroken chain', async () => {
      const [a] = hosts as [TestHost];
      const runs: string[] = [];
      for (let i = 0; i < 12; i++) runs.push(await a.createRun('approval', { prompt: `p${i}` }, as('alice')));
      for (const runId of runs) await a.waitForStatus(runId, ['waiting-approval'], as('alice'));
      const answers = await Promise.all(
        runs.map((runId, i) => {
          const host = hosts[i % hosts.length] as TestHost;
          return host.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue: { action: 'accept' } }, as('bob'));
        }),
      );
      for (const res of answers) assert.equal(res.status, 200, res.text);

      const verdict = await a.host.store.audit.verify();
      assert.deepEqual(verdict, { ok: true, entries: 12, tenants: 1 });
      const { entries } = (await a.get('/v1/audit?limit=100', as('alice'))).body;
      assert.deepEqual(
        entries.map((e: Json) => e.seq).sort((x: number, y: number) => x - y),
        Array.from({ length: 12 }, (_, i) => i + 1),
      );
      assert.deepEqual(new Set(entries.map((e: Json) => e.runId)), new Set(runs));
    });
  });
}
