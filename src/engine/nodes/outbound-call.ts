// The one code path of every node that calls out (http.request, llm.chat): one attempt per
// execution, made outside any transaction by the worker; between attempts the node sleeps on a
// durable timer (its attempt count in the node state), so a wait holds no process, lease or
// connection and a restart loses nothing. The outcome is committed with node.completed, after
// which it is never requested again (a crash before that commit re-executes the same attempt,
// with the same Idempotency-Key).
import { performance } from 'node:perf_hooks';
import type { CallFailure } from '../../calls/failure.js';
import { type RetryPolicy, retryDelayMs } from '../../calls/retry.js';
import type { SecretStore } from '../../secrets/store.js';
import { nextRetry, retryEvent } from '../activity.js';
import type { CallServices } from './services.js';
import type { NodeContext, NodeResult } from './types.js';

/** `retry` of a call node's config: attempts in all (the first included) and the backoff. */
export interface RetryConfig {
  attempts?: number;
  /** Ceiling of the first wait; it doubles after each further failure (jittered). Default 1 s. */
  backoffMs?: number;
  /** No wait is longer, a server's Retry-After included. Default 5 min. */
  maxBackoffMs?: number;
}

/** The JSON Schema of `retry`, shared by the call nodes' config schemas. */
export const RETRY_SCHEMA = {
  type: 'object',
  properties: {
    attempts: { type: 'integer', minimum: 1, maximum: 20 },
    backoffMs: { type: 'integer', minimum: 1, maximum: 3_600_000 },
    maxBackoffMs: { type: 'integer', minimum: 1, maximum: 86_400_000 },
  },
  additionalProperties: false,
} as const;

const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 300_000 };

function retryPolicy(retry: RetryConfig | undefined): RetryPolicy {
  return {
    maxAttempts: retry?.attempts ?? DEFAULT_RETRY.maxAttempts,
    baseDelayMs: retry?.backoffMs ?? DEFAULT_RETRY.baseDelayMs,
    maxDelayMs: retry?.maxBackoffMs ?? DEFAULT_RETRY.maxDelayMs,
  };
}

/** What one attempt answers: the node's output, or a classified failure. */
type AttemptOutcome = { ok: true; output: Record<string, unknown> } | CallFailure<string>;

/**
 * Execute one attempt of a call node and say what the engine commits: completed (output, and the
 * outcome in node.completed), a sleep until the next attempt, or the failure.
 */
export async function executeCall(
  ctx: NodeContext<{ retry?: RetryConfig }>,
  attempt: (calls: CallServices) => Promise<AttemptOutcome>,
): Promise<NodeResult> {
  // Woken early (a claim racing the timer): keep waiting, nothing is sent before the time.
  if (ctx.wakeAt !== undefined && ctx.now < ctx.wakeAt) return { kind: 'sleep', wakeAt: ctx.wakeAt };
  const calls = ctx.services?.calls;
  if (calls === undefined) {
    const message = `${ctx.node.typeId} needs the host's outbound-call services, and this engine has none`;
    return { kind: 'failed', error: { code: 'no_call_services', message } };
  }
  const attempts = Number(ctx.state?.attempts ?? 0) + 1;
  const started = performance.now();
  const out = await attempt(calls).catch((err: Error) => templateFailure(err, calls.secrets));
  // The engine scrubs secrets from the whole result (src/engine/scrub.ts): the output included.
  if (out.ok) return { kind: 'completed', output: out.output, detail: { attempts, outcome: out.output } };
  const wait = out.retryable ? retryDelayMs(retryPolicy(ctx.config.retry), attempts, out.retryAfterMs) : null;
  if (wait !== null) {
    // From the end of this attempt (it may have taken its whole timeout).
    const wakeAt = Math.round(ctx.now + (performance.now() - started) + wait);
    const lastError = { code: out.code, ...(out.status !== undefined ? { status: out.status } : {}) };
    const retry = nextRetry(ctx.state, ctx.now, wakeAt, describe(ctx), { code: out.code, message: out.message });
    return { kind: 'sleep', wakeAt, state: { attempts, lastError, retry }, events: [retryEvent(ctx.node.id, retry)] };
  }
  const details = {
    attempts,
    ...(out.status !== undefined ? { status: out.status } : {}),
    ...(out.bodyExcerpt !== undefined ? { bodyExcerpt: out.bodyExcerpt } : {}),
  };
  return { kind: 'failed', error: { code: out.code, message: out.message, details } };
}

/** What a retry of this node calls, for people: its host (never its path or query, which may hold a secret). */
function describe(ctx: NodeContext<{ retry?: RetryConfig }>): string {
  const config = ctx.config as { url?: unknown; baseUrl?: unknown; provider?: unknown };
  if (typeof config.provider === 'string') return `the ${ctx.node.typeId} call to provider ${config.provider}`;
  const url = config.url ?? config.baseUrl;
  if (typeof url === 'string' && !url.includes('{{') && URL.canParse(url)) {
    return `the ${ctx.node.typeId} call to ${new URL(url).host}`;
  }
  return `the ${ctx.node.typeId} call of node ${ctx.node.id}`;
}

/** A template that does not evaluate (or a value the call refuses) fails the node for good. */
function templateFailure(err: Error, secrets: SecretStore): CallFailure<string> {
  return { ok: false, code: 'invalid_request', retryable: false, message: secrets.redact(err.message) };
}
