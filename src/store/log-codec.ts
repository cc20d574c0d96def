// The stored form of an event batch's JSON text (event_batches.events, repos/events.ts).
//
// A waiting run's log is written once and read rarely, yet it was the largest part of what the
// run kept on disk: about 1,100 bytes of JSON for an approval gate (issue 38), most of it the
// engine's own vocabulary (event types, payload keys, the gate's fixed fields) spelled out again
// in every run. A batch of LOG_DEFLATE_MIN_CHARS or more is therefore stored deflated (raw
// DEFLATE, node:zlib) against a preset dictionary of that vocabulary: about 240 bytes for that
// gate. SQLite keeps the bytes as a BLOB (its columns take any type); PostgreSQL's column is
// text, so there they are base64 behind a marker. A shorter batch, and every batch written
// before this form existed, is plain JSON text (it starts with `[` or `{`), read as it always was.
//
// The dictionary is part of the stored format: a batch names the dictionary it was deflated
// against (its first byte, or the character after the marker), so a new dictionary gets a new
// number and the old one stays here for as long as rows may hold it.
import { constants, deflateRawSync, inflateRawSync } from 'node:zlib';

/** Batches shorter than this stay JSON text: the few bytes deflate would save cost more CPU than disk. */
export const LOG_DEFLATE_MIN_CHARS = 512;

/** The marker of a deflated batch on PostgreSQL (JSON text never starts with it). */
const PG_MARKER = '~';

/**
 * Dictionary 1: the engine's event vocabulary, most frequent last (DEFLATE reaches nearer bytes
 * for fewer bits). Never edit it: rows deflated against it would no longer read back.
 */
const DICTIONARY_1 = Buffer.from(
  [
    '{"type":"a2a.task.updated","nodeId":"',
    '{"type":"a2a.task.linked","nodeId":"',
    '{"type":"child.started","nodeId":"',
    '{"type":"child.ended","nodeId":"',
    '{"type":"branch.withdrawn","nodeId":"',
    '{"type":"interrupt.expired","nodeId":"',
    '{"type":"interrupt.escalated","nodeId":"',
    '{"type":"clarification.resolved","nodeId":"',
    '{"type":"approval.ask","nodeId":"',
    '{"type":"node.failed","nodeId":"',
    '{"type":"node.cancelled","nodeId":"',
    '{"type":"run.cancelling","payload":{',
    '{"type":"run.cancelled","payload":{',
    '{"type":"run.failed","payload":{"error":{"code":"',
    '"message":"',
    '{"type":"node.resumed","nodeId":"',
    '{"type":"approval.received","nodeId":"',
    '"principalId":"',
    '"action":"accept"',
    '"decidedBy":"',
    '{"type":"interrupt.resolved","nodeId":"',
    '"resolution":{',
    '{"type":"a2a.message","payload":{"message":{"kind":"message","messageId":"',
    '"role":"user","parts":[{"kind":"text","text":"',
    '"metadata":{"skillId":"',
    '{"type":"artifact.created","nodeId":"',
    '"payload":{"artifactId":"',
    '"name":"',
    '"data":{',
    '{"type":"run.completed","payload":{"outputs":{',
    '"requiredApprovals":1,"rejectionPolicy":"single-veto","artifactFrom":"',
    '"actions":["accept","reject","refine","edit-accept","ask"],',
    '"artifact":{"text":"',
    '"description":"',
    '"title":"',
    '{"type":"interrupt.requested","nodeId":"',
    '"payload":{"interruptId":"int_',
    '","kind":"approval","key":"run_',
    '{"type":"approval.requested","nodeId":"',
    '{"type":"node.suspended","nodeId":"',
    '"payload":{"kind":"approval","interruptId":"int_',
    '"timestamp":"20',
    'Z","payload":{',
    '{"type":"node.completed","nodeId":"',
    '"payload":{"ordinal":0}}',
    '{"type":"node.started","nodeId":"',
    '"payload":{"ordinal":0,"typeId":"core.transform"}}',
    '[{"type":"run.started","payload":{"workflowId":"',
  ].join(''),
);

/** Dictionaries by the number a stored batch names. */
const DICTIONARIES: ReadonlyArray<Buffer | undefined> = [undefined, DICTIONARY_1];
const CURRENT = 1;

/** What `event_batches.events` holds: JSON text, or (SQLite) the deflated bytes. */
export type StoredLog = string | Uint8Array;

/** The stored form of a batch's JSON text on `dialect`. */
export function encodeLog(text: string, dialect: 'sqlite' | 'postgres'): StoredLog {
  if (text.length < LOG_DEFLATE_MIN_CHARS) return text;
  const bytes = deflateRawSync(text, { dictionary: DICTIONARIES[CURRENT], level: constants.Z_BEST_SPEED });
  if (dialect === 'postgres') return `${PG_MARKER}${CURRENT}${bytes.toString('base64')}`;
  const out = Buffer.allocUnsafe(bytes.length + 1);
  out[0] = CURRENT;
  bytes.copy(out, 1);
  return out;
}

/** The JSON text of a stored batch, whichever form it was stored in. */
export function decodeLog(stored: StoredLog): string {
  if (typeof stored === 'string') {
    if (!stored.startsWith(PG_MARKER)) return stored;
    return inflate(Number(stored[1]), Buffer.from(stored.slice(2), 'base64'));
  }
  const bytes = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  return inflate(bytes[0] as number, bytes.subarray(1));
}

function inflate(version: number, bytes: Buffer): string {
  const dictionary = DICTIONARIES[version];
  if (!dictionary) throw new Error(`event batch deflated against unknown dictionary ${version}`);
  return inflateRawSync(bytes, { dictionary }).toString('utf8');
}
