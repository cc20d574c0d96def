// The audit chain in the store itself (src/store/repos/audit.ts): entries recorded by a
// transaction are appended when it commits and not at all when it fails; each tenant has its own
// chain; `verify` names the first entry edited, missing in the middle, or missing at the end (the
// head remembers it), and a head edited to hide a deleted tail. SQLite, and PostgreSQL when set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openStore } from '../../src/store/connect.js';
import type { NewAuditEntry } from '../../src/store/repos/audit.js';
import type { Store } from '../../src/store/store.js';
import { DIALECTS, PG_URL } from '../support/host.js';
import { pgTestSchemas } from '../support/pg.js';

const entry = (tenantId: string, act: string, values: Record<string, unknown> = {}): NewAuditEntry => ({
  tenantId,
  principal: 'alice',
  surface: 'rest',
  act,
  runId: 'run_1',
  values,
});

for (const dialect of DIALECTS) {
  describe(`audit chain in the store (${dialect})`, () => {
    let store: Store;
    let dir: string;
    const schemas = PG_URL ? pgTestSchemas(PG_URL, 'auditc') : undefined;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-audit-chain-'));
      store =
        dialect === 'postgres'
          ? await openStore({ databaseUrl: PG_URL, pgSchema: schemas?.fresh() ?? '', pgPoolSize: 2 })
          : await openStore({ sqliteFile: join(dir, 'handoff.db') });
    });
    after(async () => {
      await store?.close();
      await schemas?.dropAll();
      rmSync(dir, { recursive: true, force: true });
    });

    const record = (...entries: NewAuditEntry[]) =>
      store.transaction(async (tx) => {
        for (const e of entries) tx.recordAudit(e);
      });
    const exec = (text: string) => sql.raw(text).execute(store.db);

    it('one transaction appends its entries in order, one chain per tenant; a failed one appends nothing', async () => {
      await record(entry('a', 'approve', { n: 1 }), entry('b', 'cancel'), entry('a', 'reject', { n: 2 }));
      await assert.rejects(
        store.transaction(async (tx) => {
          tx.recordAudit(entry('a', 'refine'));
          throw new Error('the act failed');
        }),
        /the act failed/,
      );
      const a = (await store.audit.list({ tenantId: 'a', limit: 10 })).entries;
      assert.deepEqual(
        a.map((e) => [e.seq, e.act, e.values.n]),
        [
          [1, 'approve', 1],
          [2, 'reject', 2],
        ],
      );
      assert.equal(a[0]?.prevHash, null);
      assert.equal(a[1]?.prevHash, a[0]?.hash);
      const b = (await store.audit.list({ tenantId: 'b', limit: 10 })).entries;
      assert.deepEqual(
        b.map((e) => [e.seq, e.act, e.prevHash]),
        [[1, 'cancel', null]],
      );
      assert.deepEqual(await store.audit.verify(), { ok: true, entries: 3, tenants: 2 });
    });

    it('verify names the last entry deleted (against the head), then a head edited to hide it', async () => {
      await record(entry('c', 'approve'), entry('c', 'approve'), entry('c', 'reject'));
      await exec(`delete from audit_entries where tenant_id = 'c' and seq = 3`);
      const gone = await store.audit.verify();
      assert.equal(gone.ok, false);
      assert.deepEqual(gone.ok ? undefined : [gone.tenantId, gone.seq, gone.reason], [
        'c',
        3,
        'entry 3 is missing (the chain head is at 3)',
      ]);
      await exec(`update audit_heads set seq = 2 where tenant_id = 'c'`);
      const hidden = await store.audit.verify();
      assert.deepEqual(hidden.ok ? undefined : [hidden.tenantId, hidden.seq], ['c', 2]);
      assert.match(hidden.ok ? '' : hidden.reason, /chain head does not match/);
    });

    it('verify names an entry whose link to the one before was rewritten', async () => {
      await exec(`delete from audit_entries where tenant_id = 'c'`);
      await exec(`delete from audit_heads where tenant_id = 'c'`);
      await record(entry('d', 'approve'), entry('d', 'reject'));
      await exec(`update audit_entries set prev_hash = '${'0'.repeat(64)}' where tenant_id = 'd' and seq = 2`);
      const broken = await store.audit.verify();
      assert.deepEqual(broken.ok ? undefined : [broken.tenantId, broken.seq], ['d', 2]);
      assert.match(broken.ok ? '' : broken.reason, /prevHash is not the hash of the entry before/);
    });
  });
}
