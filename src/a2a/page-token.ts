// ListTasks page tokens: an opaque cursor over the keyset (status timestamp desc, task id desc).
// The next page is every task strictly after the last one shown, in that order, so a task created
// meanwhile (newer, hence before the cursor) never shifts a page or shows twice.
//
//   const token = encodePageToken({ timestamp: last.updatedAt, taskId: last.taskId });
//   const after = decodePageToken(token);   // -32602 naming pageToken when malformed
//
// The token is a store cursor (src/store/cursor.ts) over that pair.
import { type A2AError, invalidParams } from './errors.js';
import { decodeKeysetCursor, encodeCursor } from '../store/cursor.js';
import type { TaskCursor } from './model.js';

export function encodePageToken(cursor: TaskCursor): string {
  return encodeCursor([cursor.timestamp, cursor.taskId]);
}

/** The cursor a token stands for; -32602 when it is not one this server issued. */
export function decodePageToken(token: string, field = 'pageToken'): TaskCursor {
  const bad = (): A2AError =>
    invalidParams(`${field}: is not a page token from this server; pass nextPageToken unchanged`, {
      errors: [{ path: field, message: 'is not a page token from this server' }],
    });
  const key = decodeKeysetCursor(token);
  if (!key) throw bad();
  return { timestamp: key[0], taskId: key[1] };
}
