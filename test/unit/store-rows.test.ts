import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deliveryRows, runRows } from '../../src/store/rows.js';
import type { DeliveryRecord, RunRecord } from '../../src/store/model.js';

describe('row mappers', () => {
  const run = {
    runId: 'run_1',
    tenantId: 't',
    principalId: 'p',
    workflowId: 'echo',
    status: 'completed',
    inputs: { prompt: 'hi' },
    state: { outputs: { echo: { echo: 'hi' } }, vars: {} },
    cursor: { ordinals: { echo: 1 } },
    tags: ['a2a:m'],
    metadata: { contentTrust: 'untrusted' },
    nextSeq: 6,
    version: 2,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    completedAt: '2026-01-01T00:00:00.000Z',
  } as RunRecord;
  const delivery = { deliveryId: 'd', taskId: 't', final: true, seq: 1, attempts: 0, body: '{}' } as DeliveryRecord;

  it('read back exactly what they wrote, absent fields absent', () => {
    assert.deepStrictEqual(runRows.fromRow(runRows.toRow(run)), run);
    assert.equal(runRows.toRow(run).error, null);
    assert.equal(runRows.toRow(run).inputs, '{"prompt":"hi"}');
    assert.equal(deliveryRows.toRow(delivery).final, 1);
    assert.equal(deliveryRows.fromRow(deliveryRows.toRow(delivery)).final, true);
  });

  it('column() is one column of toRow()', () => {
    const row = runRows.toRow(run) as unknown as Record<string, unknown>;
    for (const c of runRows.columns) assert.deepStrictEqual(runRows.column(run, c), row[c], c);
    assert.equal(deliveryRows.column(delivery, 'final'), 1);
  });

  it('values() are the columns of toRow() in order', () => {
    const cases: Array<
      [{ columns: readonly string[]; toRow(r: never): unknown; values(r: never): unknown[] }, unknown]
    > = [
      [runRows, run],
      [deliveryRows, delivery],
    ];
    for (const [rows, rec] of cases) {
      const row = rows.toRow(rec as never) as Record<string, unknown>;
      assert.deepStrictEqual(
        rows.values(rec as never),
        rows.columns.map((c) => row[c]),
      );
    }
  });

  it('fromPrefixed() reads a joined row whose columns carry a prefix, as fromRow() reads the plain row', () => {
    const row = runRows.toRow(run) as unknown as Record<string, unknown>;
    const joined = Object.fromEntries(Object.entries(row).map(([c, v]) => [`r_${c}`, v]));
    assert.deepStrictEqual(runRows.fromPrefixed('r_')(joined), run);
    assert.equal(runRows.fromPrefixed('r_'), runRows.fromPrefixed('r_'), 'made once per prefix');
    const withoutId: Partial<RunRecord> = { ...run };
    delete withoutId.runId;
    assert.deepStrictEqual(runRows.fromPrefixed('r_')({ ...joined, r_run_id: null }), withoutId, 'NULL is absent');
  });
});
