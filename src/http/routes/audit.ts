// The audit log, read (docs/operations.md#audit-log): the caller's tenant's entries, oldest first,
// a page at a time; an admin key (HANDOFF_API_KEYS `admin`) reads every tenant's.
import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../store/store.js';
import type { AuditEntry as AuditRecord } from '../../store/repos/audit.js';
import { HttpError } from '../errors.js';
import { type AuditEntry, AuditPage, AuditQuery, failure, ref, typed, UNAUTHORIZED } from '../schemas.js';

/** An ISO 8601 time as `since` (else `since` is a page's `nextSince`). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

export function auditRoutes(app: FastifyInstance, store: Store): void {
  typed(app).get(
    '/v1/audit',
    {
      schema: {
        operationId: 'listAuditEntries',
        tags: ['audit'],
        summary: 'The audit log: every act of a person or an operator, hash-chained',
        description:
          'Entries of the caller’s tenant (an admin key: of every tenant), oldest first by time, one page at a ' +
          'time (`nextSince`). Each entry holds the hash of the one before in its tenant’s chain; ' +
          '`handoff audit verify` checks every chain.',
        querystring: AuditQuery,
        response: {
          200: ref(AuditPage, 'One page of entries.'),
          400: failure(
            'Invalid query, or a `since` that is neither a time nor a page’s `nextSince` (`validation_error`).',
          ),
          401: UNAUTHORIZED,
        },
      },
    },
    async (req) => {
      const { runId, since, limit } = req.query;
      const time = since !== undefined && ISO_TIME.test(since) ? Date.parse(since) : undefined;
      if (time !== undefined && Number.isNaN(time))
        throw new HttpError(400, 'validation_error', 'since is not a valid time');
      try {
        const page = await store.audit.list({
          ...(req.caller.admin ? {} : { tenantId: req.caller.tenantId }),
          ...(runId !== undefined ? { runId } : {}),
          ...(time !== undefined ? { since: new Date(time).toISOString() } : {}),
          ...(since !== undefined && time === undefined ? { after: since } : {}),
          limit: limit ?? 100,
        });
        return {
          entries: page.entries.map(entryView),
          ...(page.nextCursor !== undefined ? { nextSince: page.nextCursor } : {}),
        };
      } catch (err) {
        if (err instanceof RangeError) throw new HttpError(400, 'validation_error', err.message);
        throw err;
      }
    },
  );
}

function entryView(e: AuditRecord): Static<typeof AuditEntry> {
  return {
    seq: e.seq,
    time: e.time,
    tenantId: e.tenantId,
    principal: e.principal,
    surface: e.surface,
    act: e.act,
    ...(e.runId !== undefined ? { runId: e.runId } : {}),
    ...(e.nodeId !== undefined ? { nodeId: e.nodeId } : {}),
    values: e.values,
    ...(e.subjectHash !== undefined ? { subjectHash: e.subjectHash } : {}),
    prevHash: e.prevHash,
    hash: e.hash,
  };
}
