// Migration 0014: a store written while A2A 0.3 was the internal form reads in the neutral form,
// on SQLite and PostgreSQL:
// - an `a2a.message` event's 0.3 Message (kind, nested file with mimeType) reads back as the
//   neutral Message, also when a large part of it was stored by reference (recorded.ts), and the
//   0.3 adapter encodes it to the very bytes it was stored as;
// - a push delivery from before 0008 (0.3 body, no version) is sent exactly as it would have been;
// - what is already neutral is left as it is (the migration runs once, and is idempotent).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { renderPush } from '../../src/a2a/push.js';
import { v0_3 } from '../../src/a2a/v0_3/codec.js';
import type { Message as WireMessage } from '../../src/a2a/v0_3/types.js';
import type { Message } from '../../src/a2a/model.js';
import { openStore } from '../../src/store/connect.js';
import type { DeliveryRecord } from '../../src/store/model.js';
import { databasePlaces } from '../support/databases.js';
import { undoNeutralA2A } from '../support/migrations.js';
import { newRun } from '../support/runs.js';

const { pgUrl, place } = databasePlaces('neutral');

/** A caller's message as the 0.3 service stored it: every part kind, kind first. */
const OLD_MESSAGE: WireMessage = {
  kind: 'message',
  messageId: 'm1',
  role: 'user',
  taskId: 'run_x',
  parts: [
    { kind: 'text', text: 'draft a brief' },
    { kind: 'data', data: { action: 'accept' }, metadata: { n: 1 } },
    { kind: 'file', file: { uri: 'omitted:5-bytes', name: 'h.txt', mimeType: 'text/plain' } },
  ],
  metadata: { openwop: { nodeId: 'gate' } },
};

const NEUTRAL_MESSAGE: Message = {
  messageId: 'm1',
  role: 'user',
  taskId: 'run_x',
  parts: [
    { kind: 'text', text: 'draft a brief' },
    { kind: 'data', data: { action: 'accept' }, metadata: { n: 1 } },
    { kind: 'file', uri: 'omitted:5-bytes', name: 'h.txt', mediaType: 'text/plain' },
  ],
  metadata: { openwop: { nodeId: 'gate' } },
};

/** A file reference long enough to be stored by reference (RECORDED_MIN_CHARS), its path through `file`. */
const LONG_URI = `https://files.example/${'x'.repeat(70_000)}`;

/** The 0.3 body a pre-0008 delivery holds, as it was sent. */
const OLD_BODY = JSON.stringify({
  kind: 'status-update',
  taskId: 'run_x',
  contextId: 'ctx_x',
  status: { state: 'input-required', timestamp: '2026-01-01T00:00:00.000Z' },
  final: true,
  metadata: { openwop: { runId: 'run_x', interrupt: { kind: 'approval' } } },
});

for (const dialect of ['sqlite', 'postgres'] as const) {
  const skip = dialect === 'postgres' && !pgUrl ? 'HANDOFF_TEST_PG_URL is not set' : false;

  describe(`migration 0014: stored A2A forms become neutral (${dialect})`, { skip }, () => {
    it('0.3 history messages, large ones too, and a version-less push body read and send as before', async () => {
      const where = await place(dialect);
      const first = await openStore(where);
      const large: WireMessage = {
        ...OLD_MESSAGE,
        messageId: 'm2',
        parts: [{ kind: 'file', file: { uri: LONG_URI, mimeType: 'application/pdf' } }],
      };
      const { run } = await first.transaction((tx) =>
        tx.insertRun(newRun({ status: 'running' }), [
          { type: 'a2a.message', payload: { message: OLD_MESSAGE } },
          { type: 'run.started', payload: {} },
        ]),
      );
      const current = (await first.runs.get(run.runId)) as typeof run;
      await first.transaction((tx) =>
        tx.commitRun(current, {}, [{ type: 'a2a.message', payload: { message: large, principalId: 'p1' } }]),
      );
      // The large message's batch holds its file reference by reference, under `file`.
      const { rows } = await sql<{ events: string }>`select "events" from "event_batches"
        where "run_id" = ${run.runId} order by "first_seq"`.execute(first.db);
      assert.ok(rows[1]?.events.startsWith('{"$refs":'), 'the large message is stored by reference');
      await first.outbox.enqueue([
        { taskId: run.runId, configId: 'c1', tenantId: run.tenantId, seq: 1, final: true, body: OLD_BODY },
      ]);
      const oldDelivery = (await first.outbox.list(run.tenantId, {}))[0] as DeliveryRecord;
      assert.equal(oldDelivery.protocolVersion, undefined);
      await undoNeutralA2A(first);
      await first.close();

      const store = await openStore(where);
      try {
        const events = await store.events.listOfTypes(run.runId, ['a2a.message']);
        assert.deepEqual(events[0]?.payload, { message: NEUTRAL_MESSAGE });
        const neutralLarge = {
          ...NEUTRAL_MESSAGE,
          messageId: 'm2',
          parts: [{ kind: 'file', uri: LONG_URI, mediaType: 'application/pdf' }],
        };
        assert.deepEqual(events[1]?.payload, { message: neutralLarge, principalId: 'p1' });
        // The 0.3 adapter sends what was stored, byte for byte.
        const wire = (m: unknown) => v0_3.encodeSendResult({ kind: 'message', message: m as Message });
        assert.equal(JSON.stringify(wire(events[0]?.payload.message)), JSON.stringify(OLD_MESSAGE));
        assert.equal(JSON.stringify(wire(events[1]?.payload.message)), JSON.stringify(large));
        // The old delivery: a version now, a neutral body, and the same bytes on the wire.
        const delivery = (await store.outbox.list(run.tenantId, {}))[0] as DeliveryRecord;
        assert.equal(delivery.protocolVersion, '0.3');
        assert.notEqual(delivery.body, OLD_BODY);
        assert.deepEqual(renderPush(delivery), { body: OLD_BODY, contentType: 'application/json', version: '0.3' });
      } finally {
        await store.close();
      }
    });

    it('neutral rows are left as they are', async () => {
      const where = await place(dialect);
      const first = await openStore(where);
      const { run } = await first.transaction((tx) =>
        tx.insertRun(newRun({ status: 'running' }), [{ type: 'a2a.message', payload: { message: NEUTRAL_MESSAGE } }]),
      );
      const before = await sql<{ events: string }>`select "events" from "event_batches"
        where "run_id" = ${run.runId}`.execute(first.db);
      await undoNeutralA2A(first);
      await first.close();
      const store = await openStore(where);
      try {
        const after = await sql<{ events: string }>`select "events" from "event_batches"
          where "run_id" = ${run.runId}`.execute(store.db);
        assert.deepEqual(after.rows, before.rows);
      } finally {
        await store.close();
      }
    });
  });
}
