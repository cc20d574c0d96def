// What makes a call to a peer recognisable: a message id derived from the call's idempotency key
// (a node re-executed after a crash sends the same id, and a peer that dedups by message id —
// Handoff does — answers with the task it already made), a context id derived from it too (a peer
// that does not dedup makes a second task in the same context, where ListTasks finds it to
// cancel), and a W3C trace context per request.
//
//   messageIdFor(`${runId}:${nodeId}:${ordinal}`)            first turn of a call
//   contextIdFor(`${runId}:${nodeId}:${ordinal}`)            its context (every turn)
//   messageIdFor(`${runId}:${nodeId}:${ordinal}:reply:1`)    its first follow-up message
//   traceparentFor(runId)                                    one trace per run, a new span per request
import { createHash, randomBytes } from 'node:crypto';

const digest = (label: string, value: string): Buffer => createHash('sha256').update(`${label}\n${value}`).digest();

/** The message id of a call's turn: the same key always gives the same id. */
export const messageIdFor = (idempotencyKey: string): string => uuidOf('handoff.peer-message', idempotencyKey);

/** The context of a call's first message (UUID-shaped like messageIdFor, from another digest). */
export const contextIdFor = (idempotencyKey: string): string => uuidOf('handoff.peer-context', idempotencyKey);

/**
 * A UUID-shaped id from a sha256 of the label and key: version 8 (RFC 9562's custom layout),
 * variant 10. Peers that expect a UUID accept it.
 */
function uuidOf(label: string, key: string): string {
  const b = digest(label, key).subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The 32-hex trace id every call of one run shares (W3C Trace Context forbids all zeros). */
export function traceIdFor(runId: string): string {
  const id = digest('handoff.trace', runId).subarray(0, 16).toString('hex');
  return /^0+$/.test(id) ? `${id.slice(0, 31)}1` : id;
}

/** `traceparent` for one request of `runId`: version 00, a fresh span id, sampled. */
export function traceparentFor(runId: string): string {
  let span = randomBytes(8).toString('hex');
  if (/^0+$/.test(span)) span = '0000000000000001';
  return `00-${traceIdFor(runId)}-${span}-01`;
}
