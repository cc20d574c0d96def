// Migration 0014: what the store kept in the A2A 0.3 wire form, converted to the protocol-neutral
// form the A2A core now speaks (src/a2a/model.ts) — the history messages of `a2a.message` events,
// and the bodies of push deliveries written before a delivery kept its version (0008). A frozen
// copy of the 0.3 → neutral mapping (the store imports nothing outside it, and a migration must
// keep meaning what it meant when it shipped). Idempotent: a neutral message passes unchanged.
import { type Kysely, sql } from 'kysely';
import { isEnvelope, readRefs } from './recorded.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A 0.3 part → the neutral part: a file's `file` object is flattened and `mimeType` is `mediaType`. */
function neutralPart(part: unknown): unknown {
  if (!isObject(part) || part.kind !== 'file' || !isObject(part.file)) return part;
  const { file, ...rest } = part;
  const { mimeType, ...content } = file;
  return { ...rest, ...content, ...(mimeType === undefined ? {} : { mediaType: mimeType }) };
}

/** A 0.3 Message (with `kind: 'message'`) → the neutral Message. */
export function neutralMessage(message: unknown): unknown {
  if (!isObject(message)) return message;
  const { kind: _kind, ...rest } = message;
  return Array.isArray(rest.parts) ? { ...rest, parts: rest.parts.map(neutralPart) } : rest;
}

/** Convert the message of each `a2a.message` event of a batch, in place; true when any changed. */
function convertBatch(events: unknown[]): boolean {
  let changed = false;
  for (const e of events) {
    if (!isObject(e) || e.type !== 'a2a.message' || !isObject(e.payload)) continue;
    const before = JSON.stringify(e.payload.message);
    e.payload.message = neutralMessage(e.payload.message);
    changed ||= JSON.stringify(e.payload.message) !== before;
  }
  return changed;
}

const PAGE = 500;

interface BatchRow {
  run_id: string;
  first_seq: number;
  events: string;
}

/** The batches that hold an `a2a.message`, page by page on the key, each rewritten if it changed. */
async function convertEventBatches(db: Kysely<unknown>): Promise<void> {
  let after: { runId: string; firstSeq: number } | undefined;
  for (;;) {
    const page = await sql<BatchRow>`select "run_id", "first_seq", "events" from "event_batches"
      where "events" like ${'%"a2a.message"%'}
      ${after ? sql`and ("run_id" > ${after.runId} or ("run_id" = ${after.runId} and "first_seq" > ${after.firstSeq}))` : sql``}
      order by "run_id", "first_seq" limit ${PAGE}`.execute(db);
    for (const row of page.rows) {
      const text = await convertedText(db, row);
      if (text === undefined) continue;
      await sql`update "event_batches" set "events" = ${text}
        where "run_id" = ${row.run_id} and "first_seq" = ${row.first_seq}`.execute(db);
    }
    const last = page.rows.at(-1);
    if (!last || page.rows.length < PAGE) return;
    after = { runId: last.run_id, firstSeq: Number(last.first_seq) };
  }
}

/**
 * The batch's new text, or undefined when nothing changed. A batch that holds a large part by
 * reference (recorded.ts) gets the parts inside its messages back inline: a reference's path may
 * run through what the conversion moves (a file part's `file`).
 */
async function convertedText(db: Kysely<unknown>, row: BatchRow): Promise<string | undefined> {
  const parsed: unknown = JSON.parse(row.events);
  if (Array.isArray(parsed)) return convertBatch(parsed) ? JSON.stringify(parsed) : undefined;
  if (!isEnvelope(parsed) || !Array.isArray(parsed.value)) return undefined;
  const events = parsed.value as unknown[];
  const inMessage = (path: Array<string | number>) => {
    const e = events[path[0] as number];
    return isObject(e) && e.type === 'a2a.message';
  };
  const fetch = async (hash: string) => {
    const { rows } = await sql<{ value: string }>`select "value" from "run_values"
      where "run_id" = ${row.run_id} and "hash" = ${hash} order by "slice"`.execute(db);
    return rows.length === 0 ? undefined : rows.map((r) => r.value).join('');
  };
  await readRefs(parsed, row.run_id, fetch, inMessage);
  const refs = parsed.$refs.filter(([path]) => !inMessage(path));
  if (!convertBatch(events) && refs.length === parsed.$refs.length) return undefined;
  return refs.length === 0 ? JSON.stringify(events) : JSON.stringify({ $refs: refs, value: events });
}

interface OutboxRow {
  delivery_id: string;
  body: string;
}

/** A 0.3 status-update push body → the neutral outbox body `{event, final}`. */
export function neutralPushBody(body: string): string {
  const wire = JSON.parse(body) as Json;
  const { kind: _kind, final, status, ...rest } = wire;
  const s = isObject(status) ? status : {};
  const neutralStatus = s.message === undefined ? s : { ...s, message: neutralMessage(s.message) };
  return JSON.stringify({ event: { kind: 'status-update', update: { ...rest, status: neutralStatus } }, final });
}

/** Deliveries from before 0008 (no version): their 0.3 body becomes neutral, their version 0.3. */
async function convertOutbox(db: Kysely<unknown>): Promise<void> {
  for (;;) {
    const { rows } = await sql<OutboxRow>`select "delivery_id", "body" from "push_outbox"
      where "protocol_version" is null limit ${PAGE}`.execute(db);
    for (const row of rows) {
      await sql`update "push_outbox" set "body" = ${neutralPushBody(row.body)}, "protocol_version" = '0.3'
        where "delivery_id" = ${row.delivery_id}`.execute(db);
    }
    if (rows.length < PAGE) return;
  }
}

export async function neutralA2AForms(db: Kysely<unknown>): Promise<void> {
  await convertEventBatches(db);
  await convertOutbox(db);
}
