// Egress guard, dial half: an undici Agent that resolves, checks and pins every address it
// dials. Every outbound request (pushes, calls to peers and APIs) goes through one of these,
// built with the policy of its kind (pushes: CIDRs only; calls: CIDRs and hosts); URLs are
// checked before that by address.ts (offline, no DNS).
//
//   const dispatcher = createGuardedDispatcher({ policy });
//   await request(url, { dispatcher, method: 'POST', body });   // refused destinations throw EgressDeniedError
import { promises as dns, type LookupAddress } from 'node:dns';
import type { Socket } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { type EgressPolicy, type EgressRefusal, isDeniedHostname, ipLiteralOf } from './address.js';

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

/**
 * Resolve once and refuse if ANY answer is not allowed: a mixed answer is a rebinding tell.
 * `allowed` already knows whether the host is allow-listed (then every address is).
 */
async function resolveChecked(
  hostname: string,
  trustedHost: boolean,
  allowed: (ip: string) => boolean,
  lookup: Resolver,
  howToAllow: (refused: EgressRefusal) => string,
): Promise<ResolvedAddress[]> {
  const literal = ipLiteralOf(hostname);
  // net.connect never calls `lookup` for an IP literal, so literals are judged here.
  if (literal !== null) {
    if (!allowed(literal)) throw new EgressDeniedError(`address ${literal} is not allowed${howToAllow('address')}`);
    return [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
  }
  if (!trustedHost && isDeniedHostname(hostname)) {
    throw new EgressDeniedError(`host ${hostname} is on the deny list${howToAllow('name')}`);
  }
  const addrs = await lookup(hostname);
  if (addrs.length === 0) throw new EgressDeniedError(`host ${hostname} resolved to nothing`);
  const bad = addrs.find((a) => !allowed(a.address));
  if (bad) {
    throw new EgressDeniedError(
      `host ${hostname} resolves to disallowed address ${bad.address}${howToAllow('address')}`,
    );
  }
  return addrs;
}

/**
 * An undici Agent whose every connection passes the scheme-, resolve-, dial- and peer-time checks.
 * A host the policy allow-lists may use plain http and any address; every other host gets https
 * and global (or CIDR-allow-listed) addresses only.
 */
export function createGuardedDispatcher(opts: GuardedDispatcherOptions): Agent {
  const lookup = opts.lookup ?? systemResolver;
  const base = { timeout: opts.connectTimeoutMs ?? 10_000, ...(opts.ca ? { ca: opts.ca } : {}) };
  const connect: buildConnector.connector = (options, callback) => {
    const trustedHost = opts.policy.isAllowedHost(options.hostname);
    const allowed = (ip: string) => trustedHost || opts.policy.isAllowedAddress(ip);
    const howToAllow = (refused: EgressRefusal) => opts.policy.howToAllow?.(refused, options.hostname) ?? '';
    // The URL checks refuse this already; judged again here so no caller can skip it.
    if (options.protocol !== 'https:' && !trustedHost) {
      const hint = howToAllow('plain-http');
      return callback(new EgressDeniedError(`plain http to ${options.hostname} is not allowed${hint}`), null);
    }
    resolveChecked(options.hostname, trustedHost, allowed, lookup, howToAllow).then(
      (addrs) => {
        // A connector per connection so its `lookup` is pinned to this connection's checked
        // answers; `hostname` stays the name, so SNI, certificate check and Host are unchanged.
        const inner = buildConnector({ ...base, lookup: pinnedLookup(addrs) } as buildConnector.BuildOptions);
        inner(options, (err, socket) => {
          if (err) return callback(err, null);
          // Backstop: judge the peer actually connected to, whatever happened above.
          const peer = (socket as Socket).remoteAddress;
          if (peer === undefined || !allowed(peer)) {
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
