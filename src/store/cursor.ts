// Opaque page cursors for keyset pagination: the sort key of the last row a page showed, as
// base64url JSON. The next page is every row strictly after it, so rows inserted meanwhile never
// shift a page or show twice. Not signed: a forged cursor only moves within a list its caller may
// already see (every list is scoped before the cursor applies).
import { type SelectQueryBuilder, type SqlBool, sql } from 'kysely';

/** Far above any real cursor; bounds the work a hostile one can cause. */
const MAX_CURSOR_LENGTH = 1024;

export const encodeCursor = (key: readonly string[]): string => Buffer.from(JSON.stringify(key)).toString('base64url');

/** The key of a cursor this server gave (`size` non-empty strings), or undefined for anything else. */
export function decodeCursor(cursor: string, size: number): string[] | undefined {
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    const ok = Array.isArray(key) && key.length === size && key.every(isKeyPart);
    return ok ? (key as string[]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A part of a key this server can have given: a non-empty string without U+0000, which no id or
 * timestamp holds and PostgreSQL text cannot (a forged one failed the query: a 500).
 */
const isKeyPart = (k: unknown): boolean => typeof k === 'string' && k !== '' && !k.includes('\u0000');

/** The sort timestamps of the keyset lists: ISO 8601, as the store writes them. */
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const isTimestamp = (text: string): boolean => ISO_TIMESTAMP.test(text) && !Number.isNaN(Date.parse(text));

/**
 * The key of a keyset cursor over (timestamp, id) — the run list's and the task lists' — or
 * undefined when it is not one this server gave: so a forged one is refused before any query.
 */
export function decodeKeysetCursor(cursor: string): [string, string] | undefined {
  const [timestamp, id] = decodeCursor(cursor, 2) ?? [];
  return timestamp !== undefined && id !== undefined && isTimestamp(timestamp) ? [timestamp, id] : undefined;
}

/**
 * `q` newest first by the key (`columns`, both descending), strictly after the key `after`, one
 * row more than a page (the statement keysetPage runs; the plan tests read it too).
 */
export function keysetQuery<DB, TB extends keyof DB, O>(
  q: SelectQueryBuilder<DB, TB, O>,
  columns: readonly [string, string],
  limit: number,
  after?: readonly [string, string],
): SelectQueryBuilder<DB, TB, O> {
  const [first, second] = columns;
  const page = after ? q.where(sql<SqlBool>`(${sql.ref(first)}, ${sql.ref(second)}) < (${after[0]}, ${after[1]})`) : q;
  return page
    .orderBy(sql.ref(first), 'desc')
    .orderBy(sql.ref(second), 'desc')
    .limit(limit + 1);
}

/**
 * One page of `q` newest first by the key (`columns`, both descending), strictly after the key
 * `after` (the last row of the previous page). `more`: another page follows.
 */
export async function keysetPage<DB, TB extends keyof DB, O>(
  q: SelectQueryBuilder<DB, TB, O>,
  columns: readonly [string, string],
  limit: number,
  after?: readonly [string, string],
): Promise<{ rows: O[]; more: boolean }> {
  const rows = await keysetQuery(q, columns, limit, after).execute();
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}
