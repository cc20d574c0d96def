// Egress guard, offline half: address classification, the operator allow lists and the URL
// checks (push registration, outbound calls). No DNS here — registration must work offline; the
// dial arm (dispatcher.ts) resolves and re-checks every address at connect time.
//
//   const policy = createEgressPolicy({ allowCidrs: config.push.allowCidrs });
//   const v = checkPushUrl(body.url, policy);
//   if (!v.ok) reply(400, v.code, v.reason);
//   const calls = createEgressPolicy(config.egress);   // + allowHosts: plain http, private addresses
//   const c = checkCallUrl(node.url, calls);
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type EgressUrlArm = 'parse' | 'scheme' | 'address';
export type EgressUrlCode =
  | 'invalid_url'
  | 'unsupported_protocol'
  | 'insecure_scheme'
  | 'denied_host'
  | 'userinfo_not_allowed';
export type EgressUrlVerdict =
  | { ok: true; url: URL }
  | { ok: false; arm: EgressUrlArm; reason: string; code: EgressUrlCode };

export interface EgressPolicy {
  /** True when the address is in an operator-allowlisted CIDR, or is globally routable. */
  isAllowedAddress(ip: string): boolean;
  /**
   * True when the operator allow-listed this host (URL.hostname): it may be reached over plain
   * http and at any address it resolves to. Always false for the push policy.
   */
  isAllowedHost(hostname: string): boolean;
  /**
   * What an operator sets to let a refused destination through, as the end of a refusal's
   * message (` (to allow it, set HANDOFF_EGRESS_ALLOW_HOSTS=llm.corp)`), or '' when nothing
   * can. `refused` is what was wrong: plain http, a private address, a deny-listed name.
   */
  howToAllow?(refused: EgressRefusal, hostname: string): string;
}

export type EgressRefusal = 'plain-http' | 'address' | 'name';

/** The environment variables that relax a policy, named in its refusals. */
export interface EgressSettings {
  /** Allow-lists host names (plain http, any address): HANDOFF_EGRESS_ALLOW_HOSTS. */
  hosts?: string;
  /** Allow-lists CIDRs: HANDOFF_EGRESS_ALLOW_CIDRS, HANDOFF_PUSH_ALLOW_CIDRS. */
  cidrs?: string;
}

export const CALL_EGRESS_SETTINGS: EgressSettings = {
  hosts: 'HANDOFF_EGRESS_ALLOW_HOSTS',
  cidrs: 'HANDOFF_EGRESS_ALLOW_CIDRS',
};
export const PUSH_EGRESS_SETTINGS: EgressSettings = { cidrs: 'HANDOFF_PUSH_ALLOW_CIDRS' };

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

interface EgressAllowLists {
  allowCidrs?: readonly string[];
  /** Host names, exact (`llm.corp`, `localhost`, `127.0.0.1`) or `*.suffix` (any name below it). */
  allowHosts?: readonly string[];
  /** The variables that set these lists, for refusals to name (none: refusals name none). */
  settings?: EgressSettings;
}

/** ` (to allow it, set …)` for a refusal, from the variables that could relax it. */
function allowHint(settings: EgressSettings | undefined, refused: EgressRefusal, hostname: string): string {
  const host = hostKey(hostname);
  const ways = [
    settings?.hosts ? `${settings.hosts}=${host}` : undefined,
    settings?.cidrs && refused === 'address' ? `${settings.cidrs} (its address range)` : undefined,
  ].filter((w): w is string => w !== undefined);
  return ways.length === 0 ? '' : ` (to allow it, set ${ways.join(' or ')})`;
}

/** The allow lists are the ONLY relaxation; there is deliberately no "allow private" switch. */
export function createEgressPolicy(opts: EgressAllowLists = {}): EgressPolicy {
  // Parse eagerly so a typo in configuration fails at start-up, not at the first delivery.
  const cidrs = (opts.allowCidrs ?? []).map((c) => ipaddr.parseCIDR(c));
  const hosts = (opts.allowHosts ?? []).map(parseHostPattern);
  const exact = new Set(hosts.filter((h) => !h.startsWith('.')));
  const suffixes = hosts.filter((h) => h.startsWith('.'));
  return {
    isAllowedAddress(ip: string): boolean {
      const addr = parseIp(ip);
      if (addr === null) return false;
      const listed = cidrs.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
      return listed || !isForbiddenAddress(ip);
    },
    isAllowedHost(hostname: string): boolean {
      const name = hostKey(hostname);
      if (exact.has(name)) return true;
      // A wildcard never covers a deny-listed name (`*.internal` must not open the metadata
      // service); only an exact entry such as `localhost` does.
      return !isDeniedHostname(name) && suffixes.some((s) => name.endsWith(s));
    },
    howToAllow: (refused, hostname) => allowHint(opts.settings, refused, hostname),
  };
}

/** How a host is compared: lower case, no trailing dot, no IPv6 brackets. */
function hostKey(hostname: string): string {
  return hostname
    .toLowerCase()
    .replace(/\.+$/, '')
    .replace(/^\[(.*)\]$/, '$1');
}

const HOST_NAME = /^(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/;

/**
 * An allow-list entry → its comparison form: `*.corp.example` → `.corp.example`, an IP literal in
 * the canonical spelling URL parsing gives it (so `0x7f.1` is `127.0.0.1`). Throws on anything else.
 */
export function parseHostPattern(entry: string): string {
  const raw = entry.trim().toLowerCase();
  const wildcard = raw.startsWith('*.');
  const name = wildcard ? raw.slice(2) : raw;
  const invalid = new Error(`'${entry}' is not a host name, '*.' followed by one, or an IP address`);
  const bare = name.replace(/^\[(.*)\]$/, '$1');
  // A port, path or userinfo would be dropped silently by URL parsing below: refuse them instead.
  if (/[/@?#\\\s]/.test(name) || (isIP(bare) === 0 && name.includes(':'))) throw invalid;
  let canonical: string;
  try {
    canonical = hostKey(new URL(`http://${isIP(bare) === 6 ? `[${bare}]` : name}/`).hostname);
  } catch {
    throw invalid;
  }
  const literal = isIP(canonical) !== 0;
  if ((!literal && !HOST_NAME.test(canonical)) || (wildcard && literal)) throw invalid;
  return wildcard ? `.${canonical}` : canonical;
}

const STRICT_POLICY = createEgressPolicy();

// The names of docs/protocol/egress.md#denied-names, plus the loopback aliases common /etc/hosts files ship with.
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

const deny = (arm: EgressUrlArm, code: EgressUrlCode, reason: string): EgressUrlVerdict => ({
  ok: false,
  arm,
  code,
  reason,
});

/** Registration arm of push URLs: https only, whatever the policy (it allow-lists no host). */
export function checkPushUrl(raw: string, policy: EgressPolicy = STRICT_POLICY): EgressUrlVerdict {
  return checkUrl(raw, policy, (url) => `push URLs must use https (${url.protocol}//${url.host} does not)`);
}

/**
 * The URL of an outbound call (each redirect hop too): the push rules, except that a host on the
 * policy's allow list may use plain http and any address. The dispatcher re-checks at dial time.
 */
export function checkCallUrl(raw: string, policy: EgressPolicy): EgressUrlVerdict {
  return checkUrl(
    raw,
    policy,
    (url) =>
      `plain http to ${url.hostname} is refused: outbound calls must use https unless the host is allow-listed` +
      (policy.howToAllow?.('plain-http', url.hostname) ?? ''),
  );
}

/**
 * The order of docs/protocol/egress.md#registration: parse → http(s) → https → userinfo → host.
 * The scheme is judged before the host, so `http://10.0.0.5` reports the scheme arm.
 * WHATWG parsing has already canonicalised `0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`, etc.
 */
function checkUrl(raw: string, policy: EgressPolicy, insecureReason: (url: URL) => string): EgressUrlVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return deny('parse', 'invalid_url', 'URL does not parse');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return deny('scheme', 'unsupported_protocol', `protocol ${url.protocol} is not supported`);
  }
  const allowedHost = policy.isAllowedHost(url.hostname);
  if (url.protocol !== 'https:' && !allowedHost) return deny('scheme', 'insecure_scheme', insecureReason(url));
  // Credentials in the URL would be sent to whoever the host turns out to be, and `a@b` forms
  // are a classic way to make a reviewer misread the destination.
  if (url.username !== '' || url.password !== '') {
    return deny('address', 'userinfo_not_allowed', 'credentials in the URL are not allowed');
  }
  if (allowedHost) return { ok: true, url };
  const literal = ipLiteralOf(url.hostname);
  if (literal !== null) {
    return policy.isAllowedAddress(literal)
      ? { ok: true, url }
      : deny(
          'address',
          'denied_host',
          `address ${literal} is not a public address${policy.howToAllow?.('address', url.hostname) ?? ''}`,
        );
  }
  if (isDeniedHostname(url.hostname)) {
    const hint = policy.howToAllow?.('name', url.hostname) ?? '';
    return deny('address', 'denied_host', `host ${url.hostname} is on the deny list${hint}`);
  }
  return { ok: true, url };
}
