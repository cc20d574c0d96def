// Egress guard, offline half: address classification, the operator allowlist and the
// registration-time URL check. No DNS here — registration must work offline; the delivery
// arm (egress.ts) resolves and re-checks every address at dial time.
//
//   const policy = createEgressPolicy({ allowCidrs: config.push.allowCidrs });
//   const v = checkPushUrl(body.url, policy);
//   if (!v.ok) reply(400, v.code, v.reason);
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type PushUrlArm = 'parse' | 'scheme' | 'address';
export type PushUrlCode =
  | 'invalid_url'
  | 'unsupported_protocol'
  | 'insecure_scheme'
  | 'denied_host'
  | 'userinfo_not_allowed';
export type PushUrlVerdict = { ok: true; url: URL } | { ok: false; arm: PushUrlArm; reason: string; code: PushUrlCode };

export interface EgressPolicy {
  /** True when the address is in an operator-allowlisted CIDR, or is globally routable. */
  isAllowedAddress(ip: string): boolean;
}

// 2000::/3 is the only IPv6 space handed out as global unicast. ipaddr.js calls some
// non-global forms 'unicast' (e.g. IPv4-compatible `::7f00:1`, `::2`, `1::`); this closes them.
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

function parseIp(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  // net.isIP is strict (dotted quad / RFC 4291 text); odd spellings never reach ipaddr.js.
  if (isIP(bare) === 0) return null;
  try {
    const addr = ipaddr.parse(bare);
    // IPv4-mapped (::ffff:a.b.c.d) is the IPv4 address as far as the kernel is concerned.
    return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
      ? (addr as ipaddr.IPv6).toIPv4Address()
      : addr;
  } catch {
    return null;
  }
}

/**
 * Fail-closed: anything that is not provably global unicast is forbidden, including strings
 * that do not parse. NAT64, 6to4, Teredo, IPv4-compatible and documentation ranges all fail
 * either ipaddr.js `range() === 'unicast'` or the 2000::/3 rule, so embedded IPv4 can't leak.
 */
export function isForbiddenAddress(ip: string): boolean {
  const addr = parseIp(ip);
  if (addr === null) return true;
  if (addr.range() !== 'unicast') return true;
  return addr.kind() === 'ipv6' && !addr.match(GLOBAL_UNICAST_V6);
}

/** The allowlist is the ONLY relaxation; there is deliberately no "allow private" switch. */
export function createEgressPolicy(opts: { allowCidrs?: readonly string[] } = {}): EgressPolicy {
  // Parse eagerly so a typo in configuration fails at start-up, not at the first delivery.
  const cidrs = (opts.allowCidrs ?? []).map((c) => ipaddr.parseCIDR(c));
  return {
    isAllowedAddress(ip: string): boolean {
      const addr = parseIp(ip);
      if (addr === null) return false;
      const listed = cidrs.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
      return listed || !isForbiddenAddress(ip);
    },
  };
}

const STRICT_POLICY = createEgressPolicy();

// OpenWOP §4.1/§4.3 names, plus the loopback aliases common /etc/hosts files ship with.
const DENIED_NAMES = new Set([
  'localhost',
  'localhost.localdomain',
  'ip6-localhost',
  'ip6-loopback',
  'metadata',
  'metadata.google.internal',
  'instance-data',
]);
const DENIED_SUFFIXES = ['.localhost', '.internal', '.local'];

/** Names refused regardless of DNS or allowlist. Input is URL.hostname (lower-case, punycoded). */
export function isDeniedHostname(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return DENIED_NAMES.has(name) || DENIED_SUFFIXES.some((s) => name.endsWith(s));
}

/** URL.hostname → bare IP literal (brackets stripped), or null when it is a name. */
export function ipLiteralOf(hostname: string): string | null {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}

const deny = (arm: PushUrlArm, code: PushUrlCode, reason: string): PushUrlVerdict => ({ ok: false, arm, code, reason });

/**
 * Registration arm (OpenWOP §4.3 order): parse → http(s) → https → userinfo → host.
 * The scheme is judged before the host, so `http://10.0.0.5` reports the scheme arm.
 * WHATWG parsing has already canonicalised `0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`, etc.
 */
export function checkPushUrl(raw: string, policy: EgressPolicy = STRICT_POLICY): PushUrlVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return deny('parse', 'invalid_url', 'URL does not parse');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return deny('scheme', 'unsupported_protocol', `protocol ${url.protocol} is not supported`);
  }
  if (url.protocol !== 'https:') return deny('scheme', 'insecure_scheme', 'push URLs must use https');
  // Credentials in the URL would be sent to whoever the host turns out to be, and `a@b` forms
  // are a classic way to make a reviewer misread the destination.
  if (url.username !== '' || url.password !== '') {
    return deny('address', 'userinfo_not_allowed', 'credentials in the URL are not allowed');
  }
  const literal = ipLiteralOf(url.hostname);
  if (literal !== null) {
    return policy.isAllowedAddress(literal)
      ? { ok: true, url }
      : deny('address', 'denied_host', `address ${literal} is not a public address`);
  }
  if (isDeniedHostname(url.hostname)) {
    return deny('address', 'denied_host', `host ${url.hostname} is on the deny list`);
  }
  return { ok: true, url };
}
