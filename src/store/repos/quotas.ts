// The two tenant quotas that need the database (docs/security.md): the tenant's open runs, and a
// request-rate window shared by every instance on PostgreSQL.
import { statement } from '../statements.js';
import { Repo } from './repo.js';
import { ACTIVE_TERMS } from './runs.js';

// Under the partial index runs_tenant_status, whose predicate it repeats (runs.ts).
export const COUNT_ACTIVE = statement(`select count(*) as "n" from "runs" where "tenant_id" = ? and ${ACTIVE_TERMS}`);

// One row per key: a hit inside the window counts, the first hit after it opens a new window.
const HIT = statement(
  `insert into "rate_limits" ("key", "hits", "reset_at") values (?, 1, ?)
   on conflict ("key") do update set
     "hits" = case when "rate_limits"."reset_at" <= ? then 1 else "rate_limits"."hits" + 1 end,
     "reset_at" = case when "rate_limits"."reset_at" <= ? then ? else "rate_limits"."reset_at" end
   returning "hits", "reset_at"`,
);

export class Quotas extends Repo {
  /** The tenant's runs that are not terminal. */
  async activeRuns(tenantId: string): Promise<number> {
    return Number((await this.first<{ n: number | string }>(COUNT_ACTIVE, [tenantId]))?.n ?? 0);
  }

  /** Count one hit of `key` in its fixed window; the hits so far and when the window ends (epoch ms). */
  async hitRateWindow(key: string, windowMs: number): Promise<{ hits: number; resetAt: number }> {
    const now = this.now().getTime();
    const next = now + windowMs;
    const row = await this.first<{ hits: number; reset_at: number }>(HIT, [key, next, now, now, next]);
    return { hits: Number(row?.hits), resetAt: Number(row?.reset_at) };
  }
}
