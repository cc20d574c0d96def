// ListTasks page tokens: an opaque cursor over the keyset (status timestamp desc, task id desc).
// The next page is every task strictly after the last one shown, in that order, so a task created
// meanwhile (newer, hence before the cursor) never shifts a page or shows twice.
//
//   const token = encodePageToken({ timestamp: last.updatedAt, taskId: last.taskId });
//   const after = decodePageToken(token);   // -32602 naming pageToken when malformed
//
// The token is base64url of a JSON pair. It is not signed: a forged one only moves the caller
// within its own list, which is scoped to its tenant before the cursor applies.
import { type A2AError, invalidParams } from './errors.js';
import type { TaskCursor } from './model.js';

/** Far above any real token (a timestamp and a task id); bounds the work on hostile input. */
const MAX_TOKEN_LENGTH = 1024;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export function encodePageToken(cursor: TaskCursor): string {
  return Buffer.from(JSON.stringify([cursor.timestamp, cursor.taskId])).toString('base64url');
}

/** The cursor a token stands for; -32602 when it is not one this server issued. */
export function decodePageToken(token: string, field = 'pageToken'): TaskCursor {
  const bad = (): A2AError =>
    invalidParams(`${field}: is not a page token from this server; pass nextPageToken unchanged`, {
      errors: [{ path: field, message: 'is not a page token from this server' }],
    });
  if (token.length > MAX_TOKEN_LENGTH || !BASE64URL.test(token)) throw bad();
  let pair: unknown;
  try {
    pair = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(pair) || pair.length !== 2) throw bad();
  const [timestamp, taskId] = pair as unknown[];
  if (typeof timestamp !== 'string' || !ISO_TIMESTAMP.test(timestamp) || Number.isNaN(Date.parse(timestamp))) {
    throw bad();
  }
  if (typeof taskId !== 'string' || taskId === '') throw bad();
  return { timestamp, taskId };
}
