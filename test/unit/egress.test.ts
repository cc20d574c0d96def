// The URL arm of the egress guard (push registration, outbound calls), table-driven. Every row
// states its verdict and, when refused, the arm and code. Loops generate rows over ranges, but the
// expectation is explicit.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  CALL_EGRESS_SETTINGS,
  checkCallUrl,
  checkPushUrl,
  createEgressPolicy,
  isForbiddenAddress,
  type EgressPolicy,
  type EgressUrlArm,
  type EgressUrlCode,
  type EgressUrlVerdict,
  parseHostPattern,
  PUSH_EGRESS_SETTINGS,
} from '../../src/egress/address.js';

type Expect = 'ok' | readonly [EgressUrlArm, EgressUrlCode];
type Row = readonly [url: string, expect: Expect];

const OK = 'ok';
const DENIED = ['address', 'denied_host'] as const;
const USERINFO = ['address', 'userinfo_not_allowed'] as const;
const INSECURE = ['scheme', 'insecure_scheme'] as const;
const PROTOCOL = ['scheme', 'unsupported_protocol'] as const;
const INVALID = ['parse', 'invalid_url'] as const;

const https = (host: string, path = '/push') => `https://${host}${path}`;

const conformance: Row[] = [
  ['https://10.0.0.5/push', DENIED], // RFC 0100 leg: private address → address arm
  ['http://push.example.com/push', INSECURE], // RFC 0100 leg: plain http → scheme arm
];

// Every spelling WHATWG canonicalises to loopback (decimal, octal, hex, short, padded, mapped).
const loopback: Row[] = [
  '127.0.0.1',
  '127.1',
  '127.0.1',
  '0x7f.1',
  '0x7f.0.0.1',
  '0x7f.0x0.0x0.0x1',
  '0x7f000001',
  '2130706433',
  '017700000001',
  '0177.0.0.1',
  '0177.1',
  '127.000.000.001',
  '127.0.0.1.',
  '127.255.255.254',
  '127.10.20.30',
  '%31%32%37.0.0.1',
  '１２７.０.０.１',
  '①②⑦.0.0.1',
  '[::1]',
  '[0:0:0:0:0:0:0:1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:ffff:127.0.0.1]',
  '[::127.0.0.1]',
  '[::7f00:1]',
  '[64:ff9b::127.0.0.1]',
  '[64:ff9b::7f00:1]',
].map((h) => [https(h), DENIED] as const);
for (const b of [0, 1, 2, 100, 254]) loopback.push([https(`127.${b}.${b}.2`), DENIED]);

const privateV4: Row[] = [];
for (const a of [0, 1, 10, 128, 255]) privateV4.push([https(`10.${a}.0.1`), DENIED]);
for (let b = 16; b <= 31; b++) privateV4.push([https(`172.${b}.0.1`), DENIED]);
for (const c of [0, 1, 100, 255]) privateV4.push([https(`192.168.${c}.1`), DENIED]);
privateV4.push([https('0xa.1'), DENIED], [https('012.1.2.3'), DENIED], [https('167772161'), DENIED]);

const linkLocal: Row[] = ['169.254.0.1', '169.254.169.254', '169.254.170.2', '169.254.255.255', '0xa9fea9fe'].map(
  (h) => [https(h), DENIED] as const,
);

const cgnat: Row[] = [];
for (let b = 64; b <= 127; b += 9) cgnat.push([https(`100.${b}.0.1`), DENIED]);
cgnat.push([https('100.127.255.254'), DENIED]);

const special: Row[] = [
  '0.0.0.0',
  '0',
  '0x',
  '0.0.0.0.',
  '0.1.2.3',
  '0.255.255.255', // 0/8 "this network"
  '192.0.0.1',
  '192.0.0.192',
  '192.0.0.8', // IETF protocol assignments (incl. OCI metadata)
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.9', // TEST-NETs
  '198.18.0.1',
  '198.19.255.254', // benchmarking
  '255.255.255.255',
].map((h) => [https(h), DENIED] as const);
for (let a = 224; a <= 239; a += 3) special.push([https(`${a}.0.0.1`), DENIED]); // multicast
for (let a = 240; a <= 254; a += 2) special.push([https(`${a}.1.2.3`), DENIED]); // class E

const ipv6: Row[] = [
  '[::]',
  '[fe80::1]',
  '[febf::ffff]',
  '[fec0::1]',
  '[fc00::1]',
  '[fd00:ec2::254]',
  '[fd12:3456:789a::1]',
  '[ff02::1]',
  '[ff05::1:3]',
  '[2002:7f00:1::]',
  '[2002:808:808::1]',
  '[2001::1]',
  '[2001:0:4136:e378::1]',
  '[2001:db8::1]',
  '[3fff::1]',
  '[100::1]',
  '[::2]',
  '[1::]',
  '[64:ff9b::8.8.8.8]',
  '[::ffff:10.0.0.1]',
  '[::ffff:169.254.169.254]',
  '[::ffff:a9fe:a9fe]',
  '[::ffff:0:0]',
  '[::ffff:192.168.1.1]',
  '[::10.0.0.1]',
  '[::1]:8443',
].map((h) => [https(h), DENIED] as const);

const names: Row[] = [
  'localhost',
  'LOCALHOST',
  'LocalHost',
  'localhost.',
  'localhost..',
  'foo.localhost',
  'a.b.localhost',
  'FOO.LOCALHOST.',
  'local%68ost',
  '%6c%6f%63%61%6c%68%6f%73%74',
  'ｌｏｃａｌｈｏｓｔ',
  'ｌｏｃａｌｈｏｓｔ.',
  'localhost:8443',
  'localhost.localdomain',
  'ip6-localhost',
  'metadata',
  'METADATA',
  'metadata.',
  'metadata.google.internal',
  'metadata.google.internal.',
  'Metadata.Google.Internal',
  'instance-data',
  'instance-data.',
  'foo.internal',
  'svc.corp.internal.',
  'printer.local',
  'kubernetes.default.svc.cluster.local',
  'host.local.',
].map((h) => [https(h), DENIED] as const);

const userinfo: Row[] = [
  ['https://user@10.0.0.1/', USERINFO],
  ['https://public.example@127.0.0.1/', USERINFO],
  ['https://example.com@127.0.0.1/', USERINFO],
  ['https://user:pass@example.com/', USERINFO],
  ['https://user:@example.com/', USERINFO],
  ['https://:secret@example.com/', USERINFO],
  ['https://a%40b@example.com/', USERINFO],
  ['https://127.0.0.1#@example.com', DENIED], // fragment, not userinfo: the host is 127.0.0.1
  ['https://127.0.0.1?@example.com', DENIED],
  ['https://127.0.0.1/@example.com', DENIED],
  ['https://@example.com/', OK], // empty userinfo is dropped by the parser; nothing is sent
];

const schemes: Row[] = [
  ['http://example.com/', INSECURE],
  ['HTTP://EXAMPLE.COM/', INSECURE],
  ['http://8.8.8.8/', INSECURE],
  ['http://10.0.0.5/', INSECURE],
  ['http://127.0.0.1/', INSECURE],
  ['http://localhost/', INSECURE],
  ['http://169.254.169.254/latest/meta-data/', INSECURE],
  ['http://user@10.0.0.1/', INSECURE],
  ['ftp://example.com/', PROTOCOL],
  ['ftp://127.0.0.1/', PROTOCOL],
  ['file:///etc/passwd', PROTOCOL],
  ['file://localhost/etc/passwd', PROTOCOL],
  ['javascript:alert(1)', PROTOCOL],
  ['data:text/plain,hi', PROTOCOL],
  ['gopher://127.0.0.1:6379/_INFO', PROTOCOL],
  ['ws://example.com/', PROTOCOL],
  ['wss://example.com/', PROTOCOL],
  ['dict://127.0.0.1:11211/', PROTOCOL],
  ['mailto:ops@example.com', PROTOCOL],
  ['blob:https://example.com/x', PROTOCOL],
  ['ldap://127.0.0.1/', PROTOCOL],
  ['sftp://example.com/', PROTOCOL],
  ['about:blank', PROTOCOL],
];

const unparsable: Row[] = [
  '',
  ' ',
  'not a url',
  '/relative/path',
  '//example.com/',
  'https://',
  'https:///',
  'https://[::1',
  'https://256.0.0.1/',
  'https://1.2.3.4.5/',
  'https://example.123/',
  'https://example.com:99999/',
  'https://exa mple.com/',
  'https://localhost%00/',
  'https://[fe80::1%25eth0]/',
  'https://127.0.0.1%2f/',
  'https://0x100000000/',
  'https://[::1]]/',
].map((u) => [u, INVALID] as const);

const odd: Row[] = [
  ['https:127.0.0.1', DENIED], // special scheme without slashes still has a host
  ['https:\\\\127.0.0.1\\', DENIED], // backslashes are slashes for special schemes
  ['https://127.0.0.\n1/', DENIED], // tabs and newlines are stripped
  [' https://10.0.0.1 ', DENIED], // surrounding spaces are stripped
  ['https://127.0.0.1:443', DENIED],
  ['https://10.0.0.1:8443/', DENIED],
  ['https://169.254.169.254:80/latest', DENIED],
  ['https:example.com', OK],
  ['HTTPS://EXAMPLE.COM/', OK],
];

const publicOk: Row[] = [
  '8.8.8.8',
  '1.1.1.1',
  '9.9.9.9',
  '93.184.216.34',
  '0x8.0x8.0x8.0x8',
  '134744072',
  '8.8.8.8.',
  '11.0.0.1',
  '126.255.255.255',
  '128.0.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '100.63.255.255',
  '100.128.0.1',
  '169.253.255.255',
  '169.255.0.1',
  '192.167.255.255',
  '192.169.0.1',
  '198.17.255.255',
  '198.20.0.1',
  '192.0.1.1',
  '192.0.3.1',
  '223.255.255.254',
  '[2606:4700:4700::1111]',
  '[2001:4860:4860::8888]',
  '[2a00:1450:4001:80b::200e]',
  '[::ffff:8.8.8.8]',
  'example.com',
  'push.example.com',
  'example.com:8443',
  'example.com:443',
  'example.com.',
  'EXAMPLE.COM',
  'bücher.example',
  'xn--bcher-kva.example',
  'exam%70le.com',
  'localhost.example.com',
  'mylocalhost.example',
  'metadata.example.com',
  'internal.example.com',
  'local.example.org',
  'api.github.com',
  'hooks.slack.com',
].map((h) => [https(h), OK] as const);

const table: Row[] = [
  ...conformance,
  ...loopback,
  ...privateV4,
  ...linkLocal,
  ...cgnat,
  ...special,
  ...ipv6,
  ...names,
  ...userinfo,
  ...schemes,
  ...unparsable,
  ...odd,
  ...publicOk,
];

function assertVerdict(
  url: string,
  expect: Expect,
  policy?: EgressPolicy,
  check: (url: string, policy?: EgressPolicy) => EgressUrlVerdict = checkPushUrl,
): void {
  const v = check(url, policy);
  if (expect === OK) {
    assert.equal(v.ok, true, `${JSON.stringify(url)} should be accepted, got ${JSON.stringify(v)}`);
    return;
  }
  assert.equal(v.ok, false, `${JSON.stringify(url)} should be refused`);
  if (v.ok) return;
  assert.deepEqual([v.arm, v.code], [...expect], `${JSON.stringify(url)}: ${v.reason}`);
  assert.ok(v.reason.length > 0);
}

describe('checkPushUrl (registration arm, no allowlist)', () => {
  it('has a table of at least 200 distinct rows', () => {
    assert.ok(table.length >= 200, `only ${table.length} rows`);
    assert.equal(new Set(table.map(([u]) => u)).size, table.length, 'duplicate rows');
  });
  for (const [url, expect] of table) {
    it(`${JSON.stringify(url)} → ${expect === OK ? 'ok' : expect.join('/')}`, () => assertVerdict(url, expect));
  }
  it('returns the canonical URL on success', () => {
    const v = checkPushUrl('https://0x8.0x8.0x8.0x8:8443/push?x=1');
    assert.ok(v.ok);
    assert.equal(v.url.href, 'https://8.8.8.8:8443/push?x=1');
  });
});

describe('checkPushUrl with an operator allowlist', () => {
  const policy = createEgressPolicy({ allowCidrs: ['127.0.0.0/8', '10.1.0.0/16', 'fd00::/8'] });
  const rows: Row[] = [
    ['https://127.0.0.1/', OK],
    ['https://127.1:8443/', OK],
    ['https://0x7f.1/', OK],
    ['https://[::ffff:127.0.0.1]/', OK],
    ['https://10.1.2.3/', OK],
    ['https://[fd00::1]/', OK],
    ['https://8.8.8.8/', OK],
    ['https://receiver.test/', OK],
    ['https://10.2.0.1/', DENIED],
    ['https://192.168.1.1/', DENIED],
    ['https://[::1]/', DENIED],
    ['https://[fe80::1]/', DENIED],
    ['https://[::7f00:1]/', DENIED],
    ['https://169.254.169.254/', DENIED],
    // Deny-listed NAMES are never relaxed: tests use literals or an injected resolver instead.
    ['https://localhost/', DENIED],
    ['https://foo.localhost/', DENIED],
    ['https://metadata/', DENIED],
    ['http://127.0.0.1/', INSECURE],
    ['https://user@127.0.0.1/', USERINFO],
    ['file:///etc/passwd', PROTOCOL],
  ];
  for (const [url, expect] of rows) {
    it(`${url} → ${expect === OK ? 'ok' : expect.join('/')}`, () => assertVerdict(url, expect, policy));
  }
  it('rejects a malformed CIDR at construction', () => {
    assert.throws(() => createEgressPolicy({ allowCidrs: ['127.0.0.1'] }));
    assert.throws(() => createEgressPolicy({ allowCidrs: ['10.0.0.0/33'] }));
  });
  it('an empty allowlist is the strict policy', () => {
    const strict = createEgressPolicy({ allowCidrs: [] });
    assert.equal(strict.isAllowedAddress('127.0.0.1'), false);
    assert.equal(strict.isAllowedAddress('8.8.8.8'), true);
  });
});

describe('isForbiddenAddress (fail-closed)', () => {
  const rows: Array<[string, boolean]> = [
    ['8.8.8.8', false],
    ['1.1.1.1', false],
    ['2606:4700:4700::1111', false],
    ['::ffff:8.8.8.8', false],
    ['127.0.0.1', true],
    ['::1', true],
    ['::', true],
    ['0.0.0.0', true],
    ['::7f00:1', true],
    ['::ffff:7f00:1', true],
    ['::ffff:127.0.0.1', true],
    ['64:ff9b::7f00:1', true],
    ['64:ff9b::808:808', true],
    ['2002:7f00:1::', true],
    ['2001::1', true],
    ['fe80::1%eth0', true],
    ['[::1]', true],
    ['', true],
    ['not-an-ip', true],
    ['127.1', true],
    ['2130706433', true],
    ['999.1.1.1', true],
  ];
  for (const [ip, forbidden] of rows) {
    it(`${JSON.stringify(ip)} → ${forbidden ? 'forbidden' : 'allowed'}`, () =>
      assert.equal(isForbiddenAddress(ip), forbidden));
  }
});

describe('checkCallUrl (outbound calls)', () => {
  const strict = createEgressPolicy();
  const callCheck = (url: string, policy?: EgressPolicy) => checkCallUrl(url, policy ?? strict);

  it('gives every push row the same verdict when no host is allow-listed', () => {
    for (const [url, expect] of table) assertVerdict(url, expect, strict, callCheck);
  });

  const policy = createEgressPolicy({
    allowCidrs: ['10.1.0.0/16'],
    allowHosts: ['llm.corp', '*.models.corp', 'localhost', '0x7f.1', '[::1]', '*.internal'],
  });
  const rows: Row[] = [
    ['http://llm.corp:8080/v1', OK],
    ['https://llm.corp/', OK],
    ['http://LLM.corp./v1', OK],
    ['http://a.models.corp/', OK],
    ['http://a.b.models.corp/', OK],
    ['http://models.corp/', INSECURE], // `*.suffix` is the names below it, not the suffix itself
    ['http://llm.corp.evil.example/', INSECURE],
    ['http://evilllm.corp/', INSECURE],
    ['http://localhost:11434/v1', OK], // an exact entry opens a deny-listed name
    ['http://127.0.0.1:11434/', OK], // `0x7f.1` was canonicalised to 127.0.0.1
    ['http://127.1/', OK],
    ['http://[::1]:8000/', OK],
    ['http://127.0.0.2/', INSECURE],
    ['https://127.0.0.2/', DENIED],
    ['http://10.1.2.3/', INSECURE], // an allow-listed CIDR opens the address, not plain http
    ['https://10.1.2.3/', OK],
    ['https://10.2.0.1/', DENIED],
    ['http://user@llm.corp/', USERINFO],
    ['https://user:pw@llm.corp/', USERINFO],
    ['ftp://llm.corp/', PROTOCOL],
    ['http://public.example/', INSECURE],
    // A wildcard never covers a deny-listed name: `*.internal` does not open the metadata service.
    ['http://metadata.google.internal/', INSECURE],
    ['https://metadata.google.internal/', DENIED],
    ['https://db.internal/', DENIED],
  ];
  for (const [url, expect] of rows) {
    it(`with allow lists: ${url} → ${expect === OK ? 'ok' : expect.join('/')}`, () =>
      assertVerdict(url, expect, policy, callCheck));
  }
});

describe('parseHostPattern (HANDOFF_EGRESS_ALLOW_HOSTS entries)', () => {
  const good: Array<[string, string]> = [
    ['llm.corp', 'llm.corp'],
    [' LLM.Corp. ', 'llm.corp'],
    ['*.models.corp', '.models.corp'],
    ['localhost', 'localhost'],
    ['ollama', 'ollama'],
    ['my_host.example', 'my_host.example'],
    ['127.0.0.1', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['::1', '::1'],
    ['[::1]', '::1'],
    ['bücher.example', 'xn--bcher-kva.example'],
  ];
  for (const [entry, form] of good) {
    it(`${JSON.stringify(entry)} → ${form}`, () => assert.equal(parseHostPattern(entry), form));
  }
  const bad = [
    '',
    '*',
    '*.',
    '*.10.0.0.1',
    'llm.corp:8080',
    '[::1]:80',
    'http://llm.corp',
    'llm.corp/v1',
    'user@llm.corp',
    'a..b',
    '-a.example',
    'a b',
    'a*.example',
    'llm.corp?x',
  ];
  for (const entry of bad) {
    it(`${JSON.stringify(entry)} is refused`, () =>
      assert.throws(() => parseHostPattern(entry), /is not a host name, '\*\.' followed by one, or an IP address/));
  }
});

describe('a refusal names the destination and what lets it through', () => {
  const reason = (v: EgressUrlVerdict): string => (v.ok ? 'allowed' : v.reason);
  const calls = createEgressPolicy({ allowHosts: [], settings: CALL_EGRESS_SETTINGS });
  const push = createEgressPolicy({ settings: PUSH_EGRESS_SETTINGS });

  it('an outbound call: plain http, a private address, a deny-listed name', () => {
    assert.equal(
      reason(checkCallUrl('http://127.0.0.1:11434/v1/chat/completions', calls)),
      'plain http to 127.0.0.1 is refused: outbound calls must use https unless the host is allow-listed ' +
        '(to allow it, set HANDOFF_EGRESS_ALLOW_HOSTS=127.0.0.1)',
    );
    assert.equal(
      reason(checkCallUrl('https://10.1.2.3/hook', calls)),
      'address 10.1.2.3 is not a public address (to allow it, set HANDOFF_EGRESS_ALLOW_HOSTS=10.1.2.3 or ' +
        'HANDOFF_EGRESS_ALLOW_CIDRS (its address range))',
    );
    assert.equal(
      reason(checkCallUrl('https://LocalHost/x', calls)),
      'host localhost is on the deny list (to allow it, set HANDOFF_EGRESS_ALLOW_HOSTS=localhost)',
    );
  });

  it('a push URL: https always, private addresses by HANDOFF_PUSH_ALLOW_CIDRS only', () => {
    assert.equal(
      reason(checkPushUrl('http://push.example.com/hook', push)),
      'push URLs must use https (http://push.example.com does not)',
    );
    assert.equal(
      reason(checkPushUrl('https://10.1.2.3/hook', push)),
      'address 10.1.2.3 is not a public address (to allow it, set HANDOFF_PUSH_ALLOW_CIDRS (its address range))',
    );
    assert.equal(reason(checkPushUrl('https://localhost/hook', push)), 'host localhost is on the deny list');
  });

  it('no message says "arm"', () => {
    for (const url of ['http://a.example/', 'https://10.0.0.1/', 'https://localhost/', 'ftp://a.example/', 'nope']) {
      for (const v of [checkCallUrl(url, calls), checkPushUrl(url, push)]) assert.doesNotMatch(reason(v), /\barm\b/);
    }
  });
});
