// The Retry-After response header (RFC 9110 §10.2.3), shared by every outbound caller that backs off:
// how to read it, and how far to honour it.

/** Retry-After is either delta-seconds or an HTTP date; anything else is ignored. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // HTTP dates start with a day name; this keeps V8's lenient Date.parse off inputs like "-1".
  const at = /^[A-Za-z]/.test(v) ? Date.parse(v) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait before a retry: the caller's own backoff, or a longer Retry-After — but a Retry-After
 * only up to `longestMs`, the caller's longest wait. A server may slow its callers down, never park
 * them (`Retry-After: 999999999` is 31 years).
 */
export function retryWaitMs(ownMs: number, retryAfterMs: number | undefined, longestMs: number): number {
  return Math.max(ownMs, Math.min(retryAfterMs ?? 0, longestMs));
}
