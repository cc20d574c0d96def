// Tenant quotas (docs/security.md): a request rate per tenant (@fastify/rate-limit, keyed by the
// authenticated tenant; its window in memory on SQLite — one process owns the file — and in a
// PostgreSQL table shared by every instance otherwise), and a ceiling on a tenant's open runs.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';
import { HttpError } from './errors.js';

/** Retry-After for a tenant at its open-run ceiling: runs end on their own schedule, not the caller's. */
const ACTIVE_RUNS_RETRY_AFTER_S = 10;

/** HANDOFF_TENANT_RATE: 429 + Retry-After past `max` requests of one tenant per window. */
export async function registerTenantRate(
  app: FastifyInstance,
  config: Config,
  store: Store,
  isPublic: (req: FastifyRequest) => boolean,
): Promise<void> {
  const rate = config.quotas.tenantRate;
  if (!rate) return;
  await app.register(rateLimit, {
    max: rate.max,
    timeWindow: rate.windowMs,
    // After authentication (an onRequest hook added before this plugin): the key is the tenant.
    // Public routes have no caller; the allow list below lets them through.
    keyGenerator: (req: FastifyRequest) => `tenant:${(req.caller as FastifyRequest['caller'] | undefined)?.tenantId}`,
    // Health, metrics, discovery and the card answer without a tenant; probes must never be refused.
    allowList: (req: FastifyRequest) => req.caller === undefined || isPublic(req),
    // A database hiccup must not turn every request into an error: the request goes on unlimited.
    skipOnError: true,
    errorResponseBuilder: (_req, ctx) =>
      new HttpError(
        429,
        'rate_limited',
        `this tenant sent more than ${ctx.max} requests in ${rate.windowMs / 1000} s (HANDOFF_TENANT_RATE); retry in ${Math.ceil(ctx.ttl / 1000)} s`,
        { retryAfterSeconds: Math.ceil(ctx.ttl / 1000) },
      ),
    ...(store.dialect === 'postgres' ? { store: sharedWindowStore(store) } : {}),
  });
}

type Incr = (err: Error | null, res: { current: number; ttl: number }) => void;

/** The plugin's custom store interface over the rate_limits table (one fixed window per key). */
function sharedWindowStore(store: Store) {
  return class SharedWindow {
    incr(key: string, cb: Incr, timeWindow: number): void {
      const now = Date.now();
      store.quotas.hitRateWindow(key, timeWindow).then(
        ({ hits, resetAt }) => cb(null, { current: hits, ttl: Math.max(0, resetAt - now) }),
        (err: Error) => cb(err, { current: 0, ttl: 0 }),
      );
    }

    child(): SharedWindow {
      return this;
    }
  };
}

/** A run the tenant may not start now: 429 `too_many_active_runs`, `Retry-After` set on the reply.
 * The REST API sends it as is; the A2A bindings answer it in their own error form. */
export class TooManyActiveRuns extends HttpError {
  constructor(message: string) {
    super(429, 'too_many_active_runs', message, { retryAfterSeconds: ACTIVE_RUNS_RETRY_AFTER_S });
  }
}

/**
 * HANDOFF_TENANT_MAX_ACTIVE_RUNS, the one check of every route that starts a run (the REST run
 * API, A2A JSON-RPC and HTTP+JSON): a tenant that already has that many runs that are not
 * terminal is refused before anything is started.
 */
export class RunQuota {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {}

  /** Throws TooManyActiveRuns (after setting Retry-After on `reply`) when the caller's tenant is at its ceiling. */
  async admit(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const max = this.config.quotas.tenantMaxActiveRuns;
    if (max === undefined) return;
    const active = await this.store.quotas.activeRuns(req.caller.tenantId);
    if (active < max) return;
    void reply.header('Retry-After', String(ACTIVE_RUNS_RETRY_AFTER_S));
    throw new TooManyActiveRuns(
      `this tenant already has ${active} runs that are not finished (HANDOFF_TENANT_MAX_ACTIVE_RUNS is ${max}); retry when some have ended`,
    );
  }
}
