// Egress guard, delivery half: an undici Agent that resolves, checks and pins every
// address it dials, plus `deliver()`, one bounded POST that never follows redirects.
// Every outbound push goes through here; registration uses checkPushUrl (egress-address.ts).
//
//   const dispatcher = createGuardedDispatcher({ policy });
//   const r = await deliver(dispatcher, url, { headers, body, timeoutMs: 5000, maxResponseBytes: 65536 });
//   if (!r.ok && !r.permanent) scheduleRetry(r.retryAfterMs);
import { promises as dns, type LookupAddress } from 'node:dns';
import type { Socket } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { isDeniedHostname, ipLiteralOf, type EgressPolicy } from './egress-address.js';

export * from './egress-address.js';

export type ResolvedAddress = { address: string; family: 4 | 6 };
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface GuardedDispatcherOptions {
  policy: EgressPolicy;
  /** Injectable so tests can simulate rebinding; defaults to the system resolver. */
  lookup?: Resolver;
  /** Extra trust anchor (tests' self-signed CA). Public CAs stay trusted only if it is absent. */
  ca?: string | Buffer;
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
}

/** Error raised by the connector when a destination is refused. Permanent for delivery. */
export class EgressDeniedError extends Error {
  readonly code = 'EGRESS_DENIED';
  constructor(message: string) {
    super(message);
    this.name = 'EgressDeniedError';
  }
}

const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

type LookupCb = (err: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A net.connect `lookup` that only ever answers with addresses already checked, in the form
 * asked: Node 20's autoSelectFamily calls it with `all: true` and expects an array.
 */
function pinnedLookup(addrs: ResolvedAddress[]) {
  return (_host: string, opts: { all?: boolean; family?: number }, cb: LookupCb): void => {
    const fam = opts.family === 4 || opts.family === 6 ? opts.family : 0;
    const usable = addrs.filter((a) => fam === 0 || a.family === fam);
    if (usable.length === 0) {
      cb(new EgressDeniedError('no checked address of the requested family'), []);
      return;
    }
    if (opts.all) {
      cb(
        null,
        usable.map((a) => ({ address: a.address, family: a.family })),
      );
      return;
    }
    const first = usable[0]!;
    cb(null, first.address, first.family);
  };
}

/** Resolve once and refuse if ANY answer is forbidden: a mixed answer is a rebinding tell. */
async function resolveChecked(hostname: string, policy: EgressPolicy, lookup: Resolver): Promise<ResolvedAddress[]> {
  const literal = ipLiteralOf(hostname);
  // net.connect never calls `lookup` for an IP literal, so literals are judged here.
  if (literal !== null) {
    if (!policy.isAllowedAddress(literal)) throw new EgressDeniedError(`address ${literal} is not allowed`);
    return [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
  }
  if (isDeniedHostname(hostname)) throw new EgressDeniedError(`host ${hostname} is on the deny list`);
  const addrs = await lookup(hostname);
  if (addrs.length === 0) throw new EgressDeniedError(`host ${hostname} resolved to nothing`);
  const bad = addrs.find((a) => !policy.isAllowedAddress(a.address));
  if (bad) throw new EgressDeniedError(`host ${hostname} resolves to disallowed address ${bad.address}`);
  return addrs;
}

/** An undici Agent whose every connection passes the resolve-, dial- and peer-time checks. */
export function createGuardedDispatcher(opts: GuardedDispatcherOptions): Agent {
  const lookup = opts.lookup ?? systemResolver;
  const base = { timeout: opts.connectTimeoutMs ?? 10_000, ...(opts.ca ? { ca: opts.ca } : {}) };
  const connect: buildConnector.connector = (options, callback) => {
    resolveChecked(options.hostname, opts.policy, lookup).then(
      (addrs) => {
        // A connector per connection so its `lookup` is pinned to this connection's checked
        // answers; `hostname` stays the name, so SNI, certificate check and Host are unchanged.
        const inner = buildConnector({ ...base, lookup: pinnedLookup(addrs) } as buildConnector.BuildOptions);
        inner(options, (err, socket) => {
          if (err) return callback(err, null);
          // Backstop: judge the peer actually connected to, whatever happened above.
          const peer = (socket as Socket).remoteAddress;
          if (peer === undefined || !opts.policy.isAllowedAddress(peer)) {
            (socket as Socket).destroy();
            return callback(new EgressDeniedError(`connected peer ${peer ?? '?'} is not allowed`), null);
          }
          callback(null, socket as Socket);
        });
      },
      (err: Error) => callback(err, null),
    );
  };
  return new Agent({
    connect,
    headersTimeout: opts.headersTimeoutMs ?? 10_000,
    bodyTimeout: opts.bodyTimeoutMs ?? 10_000,
  });
}

export interface DeliverOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  maxResponseBytes: number;
}

export type DeliveryErrorCode =
  | 'egress_denied'
  | 'insecure_scheme'
  | 'redirect'
  | 'http_status'
  | 'timeout'
  | 'network';

export interface DeliveryResult {
  ok: boolean;
  status?: number;
  retryAfterMs?: number;
  error?: DeliveryErrorCode;
  detail?: string;
  /** True when retrying cannot help: dead-letter now. */
  permanent: boolean;
}

/** Retry-After is either delta-seconds or an HTTP date; anything else is ignored. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // HTTP dates start with a day name; this keeps V8's lenient Date.parse off inputs like "-1".
  const at = /^[A-Za-z]/.test(v) ? Date.parse(v) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function classifyStatus(status: number, retryAfterMs: number | undefined): DeliveryResult {
  const base = { status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  if (status >= 200 && status < 300) return { ok: true, ...base, permanent: false };
  // A redirect is never followed (it could point anywhere); it is a failed, retryable attempt.
  if (status >= 300 && status < 400) return { ok: false, ...base, error: 'redirect', permanent: false };
  const retryable = status === 408 || status === 429 || status >= 500;
  return { ok: false, ...base, error: 'http_status', permanent: !retryable };
}

function classifyError(err: unknown): DeliveryResult {
  const e = err as { code?: string; name?: string; message?: string };
  const detail = e.message ?? String(err);
  if (e.code === 'EGRESS_DENIED') return { ok: false, error: 'egress_denied', detail, permanent: true };
  const timedOut = e.name === 'TimeoutError' || /TIMEOUT/.test(e.code ?? '');
  return { ok: false, error: timedOut ? 'timeout' : 'network', detail, permanent: false };
}

/** One POST attempt, bounded in time and in bytes read. Never throws. */
export async function deliver(dispatcher: Agent, url: string | URL, opts: DeliverOptions): Promise<DeliveryResult> {
  const target = new URL(url);
  // Registration already checked; re-check the scheme so a stored http:// row can't slip out.
  if (target.protocol !== 'https:' || target.username || target.password) {
    return {
      ok: false,
      error: 'insecure_scheme',
      detail: 'push URLs must be https without credentials',
      permanent: true,
    };
  }
  try {
    const res = await request(target, {
      method: 'POST',
      dispatcher,
      headers: opts.headers,
      body: opts.body,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    // We don't need the body: read at most the cap, then drop the stream (and the connection).
    await res.body.dump({ limit: Math.max(1, opts.maxResponseBytes) }).catch(() => undefined);
    return classifyStatus(res.statusCode, parseRetryAfter(res.headers['retry-after']));
  } catch (err) {
    return classifyError(err);
  }
}
