// Fuzz: thousands of malformed and hostile bodies, seeded and bounded, against the
// JSON-RPC endpoint, the REST write routes and the A2A HTTP+JSON binding, on SQLite and PostgreSQL. Asserted for every one:
// no 5xx; on /v1/a2a every HTTP 200 answer is a valid JSON-RPC response (a result, or an error
// with an integer code and a message); every refusal (an HTTP error, or a JSON-RPC error) wrote
// nothing (row counts of every table and the runs' versions unchanged). Afterwards the host is
// alive and answers a real request. The generators: malformed JSON, wrong types, huge and deep
// nesting, U+0000, unknown methods and fields, hostile push URLs, foreign tenants' tasks, body
// types a browser may send cross-site; on the A2A HTTP+JSON binding also hostile paths (broken
// %-encodings, segments over 256 characters), every error of which is a google.rpc.Status. HANDOFF_FUZZ_SEED=n replays a run (the seed is printed).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { API_KEYS, KEY_ALICE, KEY_EVE, RPC_PATH, sendOk, skillMessage } from '../support/a2a.js';
import { bearer, DIALECTS, footprint, type Json, type Reply, startTestHost, type TestHost } from '../support/host.js';

const SEED = Number(process.env.HANDOFF_FUZZ_SEED ?? 0x11f022);
const BODIES_PER_SURFACE = 2000;

/** mulberry32: a tiny seeded PRNG (32-bit state), plenty for choosing test inputs. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const chance = (p: number): boolean => next() < p;
  const text = (max: number, alphabet = 'abcXYZ019 _-./:{}[]"\\\u0000\u00e9\u{1f600}\n'): string => {
    const chars = [...alphabet];
    return Array.from({ length: int(max + 1) }, () => pick(chars)).join('');
  };
  return { next, int, pick, chance, text };
}
type Rng = ReturnType<typeof prng>;

/** Ids the generators aim at: the caller's own tasks, another tenant's, and impossible ones. */
interface Targets {
  waiting: string;
  done: string;
  foreign: string;
}

function anyValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 3 ? 6 : 8)) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return r.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308]);
    case 3:
      return r.text(12);
    case 4:
      return r.pick(['', '\u0000', 'x'.repeat(10_000), '__proto__', 'constructor', '{{ inputs }}']);
    case 5:
      return r.pick([[], {}, { __proto__: { polluted: true } }]);
    case 6:
      return Array.from({ length: r.int(4) }, () => anyValue(r, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: r.int(4) }, () => [r.text(6), anyValue(r, depth + 1)]));
  }
}

const deep = (depth: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { a: v } : [v];
  return v;
};

const HOSTILE_URLS = [
  'http://hooks.example.com/x',
  'https://localhost/x',
  'https://127.0.0.1/x',
  'https://[::1]/x',
  'https://169.254.169.254/latest/meta-data',
  'https://metadata.google.internal/x',
  'https://user:pass@hooks.example.com/x',
  'https://10.0.0.1/x',
  'https://0x7f000001/x',
  'file:///etc/passwd',
  'data:text/plain,hi',
  'javascript:alert(1)',
  'https://hooks.example.com/\u0000',
  '',
];

function taskId(r: Rng, t: Targets): string {
  return r.pick([t.waiting, t.done, t.foreign, t.foreign, 'run_unknown', '\u0000', 'run_\u0000', 'x'.repeat(300), '']);
}

function message(r: Rng, t: Targets): Json {
  const msg: Json = {
    kind: r.chance(0.9) ? 'message' : anyValue(r),
    messageId: r.chance(0.85) ? `fz-${r.int(1e9)}` : anyValue(r),
    role: r.chance(0.85) ? 'user' : anyValue(r),
    parts: r.chance(0.8)
      ? [
          r.pick([
            { kind: 'text', text: r.text(20) },
            {
              kind: 'data',
              data: r.chance(0.5) ? { action: r.pick(['accept', 'reject', 'nope', 'edit-accept']) } : anyValue(r),
            },
            { kind: 'file', file: r.pick([{ bytes: 'aGk=' }, { uri: r.pick(HOSTILE_URLS) }, { bytes: 1 }, {}]) },
            { kind: r.text(5) },
            anyValue(r),
          ]),
        ]
      : anyValue(r),
    metadata: r.chance(0.7)
      ? { skillId: r.pick(['echo', 'approval', 'clarify', 'fail', 'nope', '\u0000', 7]) }
      : anyValue(r),
  };
  if (r.chance(0.4)) msg.taskId = taskId(r, t);
  if (r.chance(0.2)) msg.contextId = r.pick(['ctx', '\u0000', '', 5]);
  if (r.chance(0.1)) delete msg[r.pick(['kind', 'messageId', 'role', 'parts'])];
  return msg;
}

/** Params for `method`: mostly shaped like the real thing, often wrong somewhere. */
function params(r: Rng, method: string, t: Targets): unknown {
  if (r.chance(0.1)) return anyValue(r);
  switch (method) {
    case 'message/send':
    case 'message/stream': {
      const p: Json = { message: message(r, t) };
      if (r.chance(0.3)) {
        p.configuration = {
          blocking: r.chance(0.5) ? false : anyValue(r),
          historyLength: r.pick([0, -1, 2, 'x', 1.5]),
          ...(r.chance(0.5) ? { pushNotificationConfig: { url: r.pick(HOSTILE_URLS), token: r.text(8) } } : {}),
        };
      }
      // A stream that opens must end by itself: only new echo tasks are streamed whole.
      if (method === 'message/stream' && p.message?.taskId === undefined && r.chance(0.8)) p.message.parts = 5;
      return p;
    }
    case 'tasks/pushNotificationConfig/set':
      return {
        taskId: taskId(r, t),
        pushNotificationConfig: r.chance(0.8)
          ? { url: r.pick(HOSTILE_URLS), id: r.pick(['c', '\u0000', 5, undefined]), token: r.pick(['t', 7]) }
          : anyValue(r),
      };
    case 'tasks/pushNotificationConfig/get':
    case 'tasks/pushNotificationConfig/delete':
      return { id: taskId(r, t), pushNotificationConfigId: r.pick(['c', '\u0000', null, 3, '']) };
    case 'tasks/resubscribe':
      // Never a task this caller may watch: an open stream would not end by itself.
      return { id: r.pick([t.foreign, 'run_unknown', '\u0000', '', 5]), metadata: r.chance(0.3) ? anyValue(r) : {} };
    default:
      return { id: taskId(r, t), historyLength: r.chance(0.2) ? anyValue(r) : undefined, [r.text(4)]: anyValue(r) };
  }
}

const METHODS = [
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
];

interface Attempt {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  body: string;
  headers: Record<string, string>;
}

const JSON_TYPE = { 'content-type': 'application/json' };

/** One hostile JSON-RPC request. */
function rpcAttempt(r: Rng, t: Targets, auth: Record<string, string>): Attempt {
  const kind = r.int(10);
  const at = (body: string, headers: Record<string, string> = JSON_TYPE): Attempt => ({
    method: 'POST',
    url: RPC_PATH,
    body,
    headers: { ...auth, ...headers },
  });
  const valid = (method: string) => ({
    jsonrpc: '2.0',
    id: r.pick([1, 'x', null, 2 ** 40]),
    method,
    params: params(r, method, t),
  });
  switch (kind) {
    case 0: {
      // Malformed JSON: a valid request cut, spliced or decorated.
      const text = JSON.stringify(valid(r.pick(METHODS)));
      const cut = r.int(text.length);
      return at(
        r.pick([
          text.slice(0, cut),
          text.slice(cut),
          `${text}}`,
          `\ufeff${text}`,
          text.replace(/"/g, "'"),
          r.text(40),
          '',
          'null',
          '[]',
          '[1,2]',
          '"str"',
          '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"a"},"id":2}',
        ]),
      );
    }
    case 1:
      // Envelope fields of the wrong type or missing.
      return at(
        JSON.stringify({
          jsonrpc: r.pick(['2.0', '1.0', 2, undefined]),
          id: r.pick([1, 1.5, {}, [], true, 'i', undefined]),
          method: r.pick([...METHODS, 5, '', undefined, null]),
          params: r.pick([undefined, [], 'x', 3, {}, params(r, r.pick(METHODS), t)]),
        }),
      );
    case 2:
      return at(JSON.stringify({ jsonrpc: '2.0', id: r.int(100), method: r.text(20), params: anyValue(r) }));
    case 3:
      // Nested far past the limit, in params or as the whole body.
      return at(
        r.chance(0.5)
          ? JSON.stringify({ jsonrpc: '2.0', id: 3, method: r.pick(METHODS), params: deep(65 + r.int(3000)) })
          : JSON.stringify(deep(65 + r.int(3000))),
      );
    case 4:
      // A type a browser may send cross-site, or none.
      return at(
        JSON.stringify(valid('message/send')),
        r.pick<Record<string, string>>([
          { 'content-type': 'text/plain' },
          { 'content-type': 'application/x-www-form-urlencoded' },
          { 'content-type': 'multipart/form-data; boundary=z' },
          {},
        ]),
      );
    case 5:
      // A foreign Origin, or a foreign Host.
      return at(
        JSON.stringify(valid(r.pick(METHODS))),
        r.pick([
          { ...JSON_TYPE, origin: 'https://evil.example' },
          { ...JSON_TYPE, host: 'attacker.example' },
        ]),
      );
    default:
      return at(JSON.stringify(valid(r.pick(METHODS))));
  }
}

/** One hostile request to a REST write route. */
function restAttempt(r: Rng, t: Targets, auth: Record<string, string>): Attempt {
  const id = r.pick([
    t.waiting,
    t.done,
    t.foreign,
    t.foreign,
    'run_unknown',
    '%00',
    'run_%00',
    'x'.repeat(200),
    '%F0%9F%98%80',
  ]);
  const node = r.pick(['review', 'nope', '%00', 'draft']);
  const route = r.pick([
    '/v1/runs',
    '/v1/runs',
    `/v1/runs/${id}/cancel`,
    `/v1/runs/${id}/interrupts/${node}`,
    `/v1/runs/${id}/approvals/${node}`,
    `/v1/a2a/deliveries/${r.pick(['dlv_x', '%00', id])}/retry`,
  ]);
  const body = (): unknown => {
    if (route === '/v1/runs') {
      const b: Json = {
        workflowId: r.pick(['echo', 'approval', 'clarify', 'fail', 'nope', '', '\u0000', 5]),
        ...(r.chance(0.6) ? { inputs: r.chance(0.5) ? { prompt: anyValue(r) } : anyValue(r) } : {}),
        ...(r.chance(0.3) ? { tags: r.chance(0.5) ? Array.from({ length: 101 }, () => 't') : anyValue(r) } : {}),
        ...(r.chance(0.3) ? { metadata: anyValue(r) } : {}),
        ...(r.chance(0.2) ? { tenantId: r.pick(['t2', 't1', 5]) } : {}),
        ...(r.chance(0.2) ? { [r.text(5)]: anyValue(r) } : {}),
      };
      if (r.chance(0.1)) b.inputs = deep(65 + r.int(2000));
      return b;
    }
    if (route.endsWith('/cancel')) return r.chance(0.7) ? { reason: anyValue(r) } : anyValue(r);
    const value = r.chance(0.7)
      ? { action: r.pick(['accept', 'reject', 'refine', 'ask', 'nope', 5]), feedback: anyValue(r) }
      : anyValue(r);
    if (route.includes('/approvals/')) return value;
    return r.chance(0.8) ? { resumeValue: r.chance(0.1) ? deep(65 + r.int(2000)) : value } : anyValue(r);
  };
  const kind = r.int(8);
  let text = JSON.stringify(body()) ?? 'null';
  if (kind === 0) text = text.slice(0, r.int(text.length));
  if (kind === 1) text = r.text(30);
  const headers: Record<string, string> = { ...auth, ...JSON_TYPE };
  if (kind === 2)
    headers['content-type'] = r.pick([
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=z',
      'application/xml',
    ]);
  if (kind === 3) headers['idempotency-key'] = r.pick(['', 'a b', '\u00e9', 'k'.repeat(300), 'ok-key']);
  if (kind === 4) headers.origin = 'https://evil.example';
  return { method: 'POST', url: route, body: text, headers };
}

/** A path segment a router must decode or refuse: %-encodings broken in every way, long ones, verbs. */
function hostileSegment(r: Rng, t: Targets): string {
  return r.pick([
    t.done,
    t.foreign,
    'run_unknown',
    '%00',
    '%zz',
    '%',
    '%2',
    '%C3',
    '%E0%A4%A',
    '%FF%FE',
    '%C0%AF',
    '%ED%A0%80',
    `run_${'%E0'.repeat(r.int(4))}`,
    '%F0%9F%98%80',
    'x'.repeat(200 + r.int(120)),
    '%41'.repeat(80 + r.int(20)),
    encodeURIComponent(r.text(12)),
    r.text(6, 'ab%:~-_'),
    '',
  ]);
}

/**
 * One hostile request to the A2A HTTP+JSON binding: its routes (and unknown ones) with hostile path
 * segments, queries, methods, versions and bodies. Never a subscription this caller may keep open.
 */
function a2aRestAttempt(r: Rng, t: Targets, auth: Record<string, string>): Attempt {
  const seg = () => hostileSegment(r, t);
  const prefix = r.chance(0.2) ? `/${r.pick(['t1', 't2', seg()])}` : '';
  const [method, path] = r.pick<[Attempt['method'], string]>([
    ['GET', `/tasks/${seg()}`],
    ['GET', '/tasks'],
    ['POST', `/tasks/${seg()}:cancel`],
    ['POST', `/tasks/${r.pick([t.done, t.foreign, 'run_unknown', seg()])}:subscribe`],
    ['GET', `/tasks/${seg()}/pushNotificationConfigs`],
    ['GET', `/tasks/${seg()}/pushNotificationConfigs/${seg()}`],
    ['DELETE', `/tasks/${seg()}/pushNotificationConfigs/${seg()}`],
    ['POST', `/tasks/${seg()}/pushNotificationConfigs`],
    ['POST', '/message:send'],
    ['GET', `/${seg()}/${seg()}`],
    ['GET', '/extendedAgentCard'],
  ]);
  // Never a subscription the caller could keep open: the waiting task is left out above.
  const query = r.chance(0.4)
    ? `?${r.pick(['pageSize', 'pageToken', 'historyLength', 'status', 'includeArtifacts', r.text(4)])}=${r.pick([
        '%zz',
        '-1',
        '1e3',
        'x'.repeat(300),
        '%00',
        encodeURIComponent(r.text(8)),
      ])}`
    : '';
  const headers: Record<string, string> = { ...auth, ...JSON_TYPE };
  if (r.chance(0.85)) headers['a2a-version'] = r.pick(['1.0', '1.0', '1.0', '0.3', '2', '']);
  const body =
    method === 'POST'
      ? r.pick([
          '',
          r.text(20),
          JSON.stringify({ message: { messageId: `fz-${r.int(1e9)}`, role: 'ROLE_USER', parts: anyValue(r) } }),
          JSON.stringify({ url: r.pick(HOSTILE_URLS) }),
          JSON.stringify(anyValue(r)),
        ])
      : '';
  return { method, url: `/v1/a2a/rest${prefix}${path}${query}`, body, headers };
}

/** A google.rpc.Status body, as the binding sends every error (also as a stream's `error` event). */
function assertRpcStatus(body: Json, httpStatus: number | undefined, what: string): void {
  assert.equal(
    typeof body?.error,
    'object',
    `not a google.rpc.Status: ${JSON.stringify(body)?.slice(0, 200)} for ${what}`,
  );
  if (httpStatus !== undefined) assert.equal(body.error.code, httpStatus, what);
  assert.equal(typeof body.error.status, 'string', what);
  assert.equal(typeof body.error.message, 'string', what);
  assert.equal(body.error.details?.[0]?.['@type'], 'type.googleapis.com/google.rpc.ErrorInfo', what);
}

/**
 * A JSON-RPC 2.0 answer: a result, or an error with an integer code and a message; for a stream
 * that opened (message/stream starting a task), every `data:` frame is one.
 */
function assertJsonRpc(res: Reply, what: string): 'result' | 'error' {
  if (String(res.headers['content-type']).startsWith('text/event-stream')) {
    const frames = res.text.split('\n').filter((l) => l.startsWith('data: '));
    assert.ok(frames.length > 0, what);
    for (const f of frames) assertJsonRpcObject(JSON.parse(f.slice('data: '.length)), what);
    return 'result';
  }
  return assertJsonRpcObject(res.body, what);
}

function assertJsonRpcObject(body: Json, what: string): 'result' | 'error' {
  assert.equal(body?.jsonrpc, '2.0', what);
  assert.ok('id' in body, what);
  if ('result' in body) {
    assert.ok(!('error' in body), what);
    return 'result';
  }
  const err = body.error;
  assert.ok(Number.isInteger(err?.code), what);
  assert.equal(typeof err.message, 'string', what);
  assert.ok(err.message.length > 0, what);
  return 'error';
}

for (const dialect of DIALECTS) {
  describe(`fuzz (${dialect}, seed ${SEED})`, () => {
    let t: TestHost;
    let targets: Targets;
    const alice = bearer(KEY_ALICE);
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS });
      targets = {
        waiting: (await sendOk(t, skillMessage('approval', 'w'), { headers: alice })).id,
        done: (await sendOk(t, skillMessage('echo', 'd'), { headers: alice })).id,
        foreign: (await sendOk(t, skillMessage('approval', 'e'), { headers: bearer(KEY_EVE) })).id,
      };
    });
    after(async () => {
      await t?.close();
    });

    /** Send every attempt; check the answer, and that a refusal wrote nothing. */
    async function barrage(make: (r: Rng) => Attempt, seed: number, check: (res: Reply, what: string) => boolean) {
      const r = prng(seed);
      let refused = 0;
      // What the database holds before each request (one read per request).
      let held = await footprint(t);
      for (let i = 0; i < BODIES_PER_SURFACE; i++) {
        const a = make(r);
        const what = `#${i} (seed ${seed}) ${a.url} ${JSON.stringify(a.headers)} ${a.body.slice(0, 300)}`;
        const res = await t.request(a.method, a.url, a.body, a.headers);
        assert.ok(res.status < 500, `${res.status} ${res.text.slice(0, 300)} for ${what}`);
        const now = await footprint(t);
        if (check(res, what)) {
          refused++;
          assert.deepEqual(now, held, `a refused request wrote something: ${what}`);
        }
        held = now;
      }
      return refused;
    }

    it(`${BODIES_PER_SURFACE} hostile JSON-RPC requests: no 5xx, valid JSON-RPC answers, refusals write nothing`, async () => {
      const refused = await barrage(
        (r) => rpcAttempt(r, targets, alice),
        SEED,
        (res, what) => {
          if (res.status !== 200) {
            assert.ok(res.status >= 400, what);
            assert.equal(
              typeof res.body?.error,
              'string',
              `not an error envelope: ${res.text.slice(0, 200)} for ${what}`,
            );
            return true;
          }
          return assertJsonRpc(res, what) === 'error';
        },
      );
      assert.ok(refused > BODIES_PER_SURFACE / 2, `only ${refused} refused: the generators are too tame`);
    });

    it(`${BODIES_PER_SURFACE} hostile REST writes: no 5xx, error envelopes, refusals write nothing`, async () => {
      const refused = await barrage(
        (r) => restAttempt(r, targets, alice),
        SEED + 1,
        (res, what) => {
          if (res.status < 400) return false;
          assert.equal(
            typeof res.body?.error,
            'string',
            `not an error envelope: ${res.text.slice(0, 200)} for ${what}`,
          );
          assert.equal(typeof res.body.message, 'string', what);
          return true;
        },
      );
      assert.ok(refused > BODIES_PER_SURFACE / 2, `only ${refused} refused: the generators are too tame`);
    });

    it(`${BODIES_PER_SURFACE} hostile A2A HTTP+JSON requests: no 5xx, every error a google.rpc.Status, refusals write nothing`, async () => {
      const refused = await barrage(
        (r) => a2aRestAttempt(r, targets, alice),
        SEED + 2,
        (res, what) => {
          if (String(res.headers['content-type']).startsWith('text/event-stream')) {
            const frames = res.text.split('\n').filter((l) => l.startsWith('data: '));
            const error = frames.map((f) => JSON.parse(f.slice('data: '.length))).find((f) => 'error' in f);
            if (error) assertRpcStatus(error, undefined, what);
            return error !== undefined;
          }
          if (res.status < 400) return false;
          // It was Fastify's own shape for a bad %-encoding (400) or a segment over 256 characters (414).
          assert.match(String(res.headers['content-type']), /^application\/a2a\+json/, what);
          assertRpcStatus(res.body, res.status, what);
          return true;
        },
      );
      assert.ok(refused > BODIES_PER_SURFACE / 2, `only ${refused} refused: the generators are too tame`);
    });

    it('the host is alive afterwards: healthy, and a real request is served', async () => {
      assert.equal((await t.get('/healthz')).status, 200);
      const task = await sendOk(t, skillMessage('echo', 'still here'), { headers: alice });
      assert.equal(task.status.state, 'completed');
      assert.equal((await t.get(`/v1/runs/${targets.foreign}`, bearer(KEY_EVE))).body.status, 'waiting-approval');
    });
  });
}
