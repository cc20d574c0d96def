// The two tenant quotas that need the database (docs/security.md): the tenant's open runs, and a
// request-rate window shared by every instance on PostgreSQL. Fixed SQL (statements.ts).
import type { Kysely } from 'kysely';
import type { Database } from './db.js';
import type { Dialect } from './store.js';
import { statement } from './statements.js';

const COUNT_ACTIVE = statement(
  `select count(*) as "n" from "runs" where "tenant_id" = ? and "status" not in ('completed', 'failed', 'cancelled')`,
);

/** The tenant's runs that are not terminal (under the runs_tenant_status index). */
export async function countActiveRuns(db: Kysely<Database>, dialect: Dialect, tenantId: string): Promise<number> {
  const { rows } = await db.executeQuery(COUNT_ACTIVE.with<{ n: number | string }>(dialect, [tenantId]));
  return Number(rows[0]?.n ?? 0);
}

// One row per key: a hit inside the window counts, the first hit after it opens a new window.
const HIT = statement(
  `insert into "rate_limits" ("key", "hits", "reset_at") values (?, 1, ?)
   on conflict ("key") do update set
     "hits" = case when "rate_limits"."reset_at" <= ? then 1 else "rate_limits"."hits" + 1 end,
     "reset_at" = case when "rate_limits"."reset_at" <= ? then ? else "rate_limits"."reset_at" end
   returning "hits", "reset_at"`,
);

/** Count one hit of `key` in its fixed window; the hits so far and when the window ends (epoch ms). */
export async function hitRateWindow(
  db: Kysely<Database>,
  dialect: Dialect,
  key: string,
  windowMs: number,
  now = Date.now(),
): Promise<{ hits: number; resetAt: number }> {
  const next = now + windowMs;
  const { rows } = await db.executeQuery(
    HIT.with<{ hits: number; reset_at: number }>(dialect, [key, next, now, now, next]),
  );
  const row = rows[0] as { hits: number; reset_at: number };
  return { hits: Number(row.hits), resetAt: Number(row.reset_at) };
}
