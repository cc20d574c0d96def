// Push notifications end to end: the REAL compiled server (`handoff serve`) in a child process
// pushes to a loopback HTTPS receiver with a throw-away CA, allowlisted by the operator
// (HANDOFF_PUSH_ALLOW_CIDRS=127.0.0.0/8, HANDOFF_PUSH_CA_FILE). Covered: the wire of a push
// (headers, content-free body), order and exactly-once per transition under failures (5xx, a
// timeout past the host's 5 s bound, a connection reset), Retry-After, permanent 4xx, the dead
// letter and the operator retry, redirects never followed, and pending deliveries surviving a
// SIGKILL of the host. Nothing waits by sleeping: every wait polls the receiver's log or the
// delivery state until a deadline.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type Behaviour,
  type HttpsReceiver,
  type ReceivedRequest,
  startHttpsReceiver,
} from '../support/https-receiver.js';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Ceilings of the fast host: 5 retries (6 attempts), each backoff 25–400 ms. */
const FAST_SCHEDULE = '50ms,100ms,200ms,400ms,400ms';

const dirs: string[] = [];
const freshDir = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

after(async () => {
  await killAllServers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// The receiver: one HTTPS server, one path per test, each with its own behaviour and log.

interface Hit {
  /** When the receiver got the request (before answering). */
  at: number;
  deliveryId: string;
  headers: ReceivedRequest['headers'];
  body: string;
  /** What the receiver answered: a status, 'reset', or 'late' (answered after the host gave up). */
  answer: number | 'reset' | 'late';
}

type Answer = (req: ReceivedRequest, attemptOfThisId: number) => Behaviour;

class Router {
  private readonly routes = new Map<string, Answer>();
  private readonly logs = new Map<string, Hit[]>();
  constructor(readonly rx: HttpsReceiver) {
    rx.behave((req) => {
      const log = this.logs.get(req.path) ?? [];
      this.logs.set(req.path, log);
      const deliveryId = String(req.headers['x-handoff-delivery-id']);
      const nth = log.filter((h) => h.deliveryId === deliveryId).length;
      const route = this.routes.get(req.path);
      const b = route ? route(req, nth) : { status: 404 };
      const answer = b.reset ? 'reset' : b.delayMs && b.delayMs >= 5000 ? 'late' : (b.status ?? 200);
      log.push({ at: Date.now(), deliveryId, headers: req.headers, body: req.body, answer });
      return b;
    });
  }
  endpoint(name: string, answer: Answer = () => ({ status: 200 })) {
    const path = `/hook/${name}-${randomUUID().slice(0, 8)}`;
    this.routes.set(path, answer);
    const log = () => this.logs.get(path) ?? [];
    return {
      url: this.rx.urlFor('127.0.0.1', path),
      log,
      /** Hits the receiver answered with 2xx. */
      ok: () => log().filter((h) => typeof h.answer === 'number' && h.answer >= 200 && h.answer < 300),
      answer: (a: Answer) => this.routes.set(path, a),
    };
  }
}
type Endpoint = ReturnType<Router['endpoint']>;

// ---------------------------------------------------------------------------------------------
// A2A over HTTP

let rpcId = 0;
async function rpc(srv: ServerProcess, method: string, params: unknown): Promise<Json> {
  const id = ++rpcId;
  const res = await postJson(`${srv.url}/v1/a2a`, { jsonrpc: '2.0', id, method, params });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.id, id);
  return res.body;
}
async function rpcOk(srv: ServerProcess, method: string, params: unknown): Promise<Json> {
  const body = await rpc(srv, method, params);
  assert.ok(!body.error, `${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}
const userMessage = (parts: Json[], extra: Record<string, unknown> = {}): Json => ({
  kind: 'message',
  role: 'user',
  messageId: `m-${randomUUID()}`,
  parts,
  ...extra,
});
const startMsg = (skillId: string, text: string) => userMessage([{ kind: 'text', text }], { metadata: { skillId } });
const decision = (task: Json, data: Record<string, unknown>) =>
  userMessage([{ kind: 'data', data }], { taskId: task.id, contextId: task.contextId });
const pushConfig = (url: string, token?: string) => ({ pushNotificationConfig: { url, ...(token ? { token } : {}) } });

async function send(srv: ServerProcess, msg: Json, configuration?: Record<string, unknown>): Promise<Json> {
  const task = await rpcOk(srv, 'message/send', { message: msg, ...(configuration ? { configuration } : {}) });
  assert.equal(task.kind, 'task', JSON.stringify(task));
  return task;
}

async function deliveries(srv: ServerProcess, query: string): Promise<Json[]> {
  const res = await getJson(`${srv.url}/v1/a2a/deliveries?${query}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.deliveries as Json[];
}
/** The task's deliveries, oldest first, once `pred` holds. */
const waitDeliveries = (
  srv: ServerProcess,
  taskId: string,
  what: string,
  pred: (ds: Json[]) => boolean,
  deadlineMs?: number,
): Promise<Json[]> =>
  until(
    what,
    async () => {
      const ds = (await deliveries(srv, `taskId=${taskId}`)).reverse();
      return pred(ds) ? ds : undefined;
    },
    deadlineMs,
  );
const allDelivered = (n: number) => (ds: Json[]) => ds.length === n && ds.every((d) => d.state === 'delivered');
const retry = (srv: ServerProcess, id: string) => postJson(`${srv.url}/v1/a2a/deliveries/${id}/retry`, {});

/** The status-update body of a push: exactly the content-free fields, nothing else. */
function assertStatusUpdate(
  hit: Hit,
  task: Json,
  state: string,
  opts: { final: boolean; interruptKind?: string },
): Json {
  assert.match(String(hit.headers['content-type']), /^application\/json/);
  const body = JSON.parse(hit.body);
  assert.deepEqual(Object.keys(body).sort(), ['contextId', 'final', 'kind', 'metadata', 'status', 'taskId']);
  assert.equal(body.kind, 'status-update');
  assert.equal(body.taskId, task.id);
  assert.equal(body.contextId, task.contextId);
  assert.equal(body.final, opts.final);
  assert.deepEqual(Object.keys(body.status).sort(), ['state', 'timestamp']);
  assert.equal(body.status.state, state);
  assert.ok(!Number.isNaN(Date.parse(body.status.timestamp)), body.status.timestamp);
  assert.deepEqual(Object.keys(body.metadata), ['openwop']);
  const openwop = body.metadata.openwop;
  for (const k of Object.keys(openwop))
    assert.ok(['runId', 'interrupt'].includes(k), `unexpected metadata.openwop.${k}`);
  if (opts.interruptKind) assert.deepEqual(openwop.interrupt, { kind: opts.interruptKind });
  else assert.equal(openwop.interrupt, undefined);
  assert.equal(hit.headers['x-a2a-task-id'], task.id);
  return body;
}

function assertTokenHeaders(hit: Hit, token: string): void {
  assert.equal(hit.headers['x-a2a-notification-token'], token);
  assert.equal(hit.headers.authorization, `Bearer ${token}`);
  assert.match(hit.deliveryId, /^dlv_[0-9a-f-]{36}$/);
}

/** Each delivery id answered 2xx exactly once; returns the ids in the order they succeeded. */
function exactlyOnce(ep: Endpoint): string[] {
  const ids = ep.ok().map((h) => h.deliveryId);
  assert.equal(new Set(ids).size, ids.length, `an id was delivered twice: ${JSON.stringify(ids)}`);
  return ids;
}

async function writeCa(rx: HttpsReceiver): Promise<string> {
  const file = join(freshDir('handoff-push-ca-'), 'ca.pem');
  writeFileSync(file, rx.caPem);
  return file;
}

const pushEnv = (caFile: string, schedule: string) => ({
  HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8',
  HANDOFF_PUSH_CA_FILE: caFile,
  HANDOFF_PUSH_RETRY_SCHEDULE: schedule,
});

// ---------------------------------------------------------------------------------------------

describe('push notifications end to end (real server, https receiver)', { timeout: 180_000 }, () => {
  let rx: HttpsReceiver;
  let elsewhere: HttpsReceiver;
  let router: Router;
  let srv: ServerProcess;
  let caFile: string;

  before(async () => {
    rx = await startHttpsReceiver();
    elsewhere = await startHttpsReceiver();
    router = new Router(rx);
    caFile = await writeCa(rx);
    srv = await startServer({ dataDir: freshDir('handoff-push-e2e-'), env: pushEnv(caFile, FAST_SCHEDULE) });
  });
  after(async () => {
    await srv?.kill();
    await rx?.close();
    await elsewhere?.close();
  });

  it('inline config: input-required then, after approval, completed — in order, once each, content-free, \
with the token', async () => {
    const ep = router.endpoint('inline');
    const prompt = `confidential-prompt-${randomUUID()}`;
    const task = await send(srv, startMsg('approval', prompt), pushConfig(ep.url, 'tok-1'));
    assert.equal(task.status.state, 'input-required');

    const [first] = await until('the input-required push', () => ep.ok().length >= 1 && ep.ok());
    assertTokenHeaders(first!, 'tok-1');
    assertStatusUpdate(first!, task, 'input-required', { final: false, interruptKind: 'approval' });

    const done = await send(srv, decision(task, { action: 'accept' }));
    assert.equal(done.status.state, 'completed');
    const ds = await waitDeliveries(srv, task.id, 'both pushes delivered', allDelivered(2));
    const hits = ep.log();
    assert.equal(hits.length, 2, 'one request per transition, no more');
    const [a, b] = hits as [Hit, Hit];
    assertTokenHeaders(b, 'tok-1');
    assertStatusUpdate(b, task, 'completed', { final: true });
    assert.notEqual(a.deliveryId, b.deliveryId, 'each transition has its own delivery id');
    assert.deepEqual(
      ds.map((d) => d.deliveryId),
      [a.deliveryId, b.deliveryId],
    );
    assert.deepEqual(
      ds.map((d) => [d.attempts, d.lastStatus, d.final]),
      [
        [1, 200, false],
        [1, 200, true],
      ],
    );
    assert.ok(Date.parse(JSON.parse(a.body).status.timestamp) <= Date.parse(JSON.parse(b.body).status.timestamp));
    // The push says what tasks/get says.
    const got = await rpcOk(srv, 'tasks/get', { id: task.id });
    assert.equal(JSON.parse(b.body).status.timestamp, got.status.timestamp);
    assert.equal(JSON.parse(b.body).contextId, got.contextId);
    for (const h of hits) {
      assert.ok(!h.body.includes(prompt), `the prompt leaked into a push: ${h.body}`);
      assert.ok(!/Draft/.test(h.body), `the draft leaked into a push: ${h.body}`);
      assert.ok(!h.body.includes('tok-1'), 'the token is in the body');
      assert.ok(!h.body.includes('artifact') && !h.body.includes('"parts"'), h.body);
    }
    exactlyOnce(ep);
  });

  it('config via tasks/pushNotificationConfig/set: the next input-required (refine) and completed are pushed, \
nothing before it', async () => {
    const ep = router.endpoint('set');
    const prompt = `set-prompt-${randomUUID()}`;
    const task = await send(srv, startMsg('approval', prompt));
    assert.equal(task.status.state, 'input-required');
    const set = await rpcOk(srv, 'tasks/pushNotificationConfig/set', {
      taskId: task.id,
      ...pushConfig(ep.url, 'tok-1'),
    });
    assert.deepEqual(set, { taskId: task.id, pushNotificationConfig: { id: task.id, url: ep.url } });

    // A refinement goes back to work and to the gate again: input-required is entered anew.
    const feedback = `shorter-${randomUUID()}`;
    const again = await send(srv, decision(task, { action: 'refine', feedback }));
    assert.equal(again.status.state, 'input-required');
    const [first] = await until('the input-required push', () => ep.ok().length >= 1 && ep.ok());
    assertTokenHeaders(first!, 'tok-1');
    assertStatusUpdate(first!, task, 'input-required', { final: false, interruptKind: 'approval' });

    assert.equal((await send(srv, decision(task, { action: 'accept' }))).status.state, 'completed');
    await waitDeliveries(srv, task.id, 'both pushes delivered', allDelivered(2));
    const hits = ep.log();
    assert.deepEqual(
      hits.map((h) => JSON.parse(h.body).status.state),
      ['input-required', 'completed'],
    );
    assertTokenHeaders(hits[1]!, 'tok-1');
    assertStatusUpdate(hits[1]!, task, 'completed', { final: true });
    for (const h of hits) assert.ok(!h.body.includes(prompt) && !h.body.includes(feedback), h.body);
    exactlyOnce(ep);
  });

  it('500, a timeout past the 5 s bound and a connection reset are retried with the same delivery id; \
each transition arrives once, in order', async () => {
    // Per delivery id: the input-required push fails three ways, the completed one twice.
    const script: Record<string, Behaviour[]> = {
      'input-required': [{ status: 500 }, { status: 500, delayMs: 6500 }, { reset: true }],
      completed: [{ reset: true }, { status: 503 }],
    };
    const ep = router.endpoint(
      'flaky',
      (req, nth) => script[JSON.parse(req.body).status.state]?.[nth] ?? { status: 200 },
    );
    const task = await send(srv, startMsg('approval', 'flaky receiver'), pushConfig(ep.url, 'tok-1'));
    // Approve at once, while the first push is still failing: the task never waits for pushes.
    const done = await send(srv, decision(task, { action: 'accept' }));
    assert.equal(done.status.state, 'completed');
    assert.equal(ep.ok().length, 0, 'nothing delivered yet');

    const ds = await waitDeliveries(srv, task.id, 'both pushes delivered after retries', allDelivered(2));
    const [ir, cd] = ds as [Json, Json];
    assert.deepEqual([ir.attempts, cd.attempts], [4, 3]);
    const hits = ep.log();
    const ofId = (id: string) => hits.filter((h) => h.deliveryId === id).map((h) => h.answer);
    assert.deepEqual(ofId(ir.deliveryId), [500, 'late', 'reset', 200]);
    assert.deepEqual(ofId(cd.deliveryId), ['reset', 503, 200]);
    // Order: no attempt of `completed` before `input-required` was delivered.
    const irDone = hits.findIndex((h) => h.deliveryId === ir.deliveryId && h.answer === 200);
    const cdFirst = hits.findIndex((h) => h.deliveryId === cd.deliveryId);
    assert.ok(
      irDone >= 0 && cdFirst > irDone,
      'completed was attempted before input-required was delivered: ' +
        JSON.stringify(hits.map((h) => [h.deliveryId.slice(-4), h.answer])),
    );
    assert.deepEqual(exactlyOnce(ep), [ir.deliveryId, cd.deliveryId]);
    // A retry is the same request: same body, same token.
    for (const id of [ir.deliveryId, cd.deliveryId]) {
      const same = hits.filter((h) => h.deliveryId === id);
      assert.equal(new Set(same.map((h) => h.body)).size, 1);
      for (const h of same) assertTokenHeaders(h, 'tok-1');
    }
    // The timeout is recorded as such on the way (the last error is cleared by success).
    assert.equal(ir.lastStatus, 200);
    assert.equal(ir.lastError, null);
  });

  it('429 with Retry-After is honoured up to the schedule’s longest step: the next attempt comes no sooner', async () => {
    // Retry-After: 2 is longer than the schedule's longest step (400 ms): it is cut to that step.
    const longestStepMs = 400;
    const ep = router.endpoint('429', (_req, nth) =>
      nth === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 },
    );
    const task = await send(srv, startMsg('echo', 'rate limited'), pushConfig(ep.url, 'tok-1'));
    assert.equal(task.status.state, 'completed');
    const pending = await waitDeliveries(
      srv,
      task.id,
      'the 429 recorded',
      (ds) => ds.length === 1 && ds[0].attempts >= 1,
    );
    if (pending[0].state === 'pending') {
      // Without Retry-After the schedule would retry within 25–50 ms.
      const due = Date.parse(pending[0].nextAttemptAt) - ep.log()[0]!.at;
      assert.ok(due >= longestStepMs - 5, `next attempt scheduled ${due} ms after the 429`);
      assert.equal(pending[0].lastStatus, 429);
    }
    await waitDeliveries(srv, task.id, 'the delivery after Retry-After', allDelivered(1));
    const [a, b] = ep.log() as [Hit, Hit];
    assert.equal(ep.log().length, 2);
    assert.equal(a.deliveryId, b.deliveryId);
    assert.ok(b.at - a.at >= longestStepMs - 5, `retried ${b.at - a.at} ms after a 429 with Retry-After: 2`);
  });

  it('a 4xx other than 408/429 is permanent: dead after one attempt; 408 is retried', async () => {
    for (const status of [400, 401, 403, 404, 410, 422]) {
      const ep = router.endpoint(`perm-${status}`, () => ({ status }));
      const task = await send(srv, startMsg('echo', `perm ${status}`), pushConfig(ep.url, 'tok-1'));
      const [d] = await waitDeliveries(
        srv,
        task.id,
        `dead on ${status}`,
        (ds) => ds.length === 1 && ds[0].state === 'dead',
      );
      assert.equal(d.attempts, 1, `${status}`);
      assert.equal(d.lastStatus, status);
      assert.match(d.lastError, /http_status/);
      assert.equal(ep.log().length, 1, `${status} was retried`);
    }
    const ep = router.endpoint('408', (_req, nth) => ({ status: nth === 0 ? 408 : 200 }));
    const task = await send(srv, startMsg('echo', '408'), pushConfig(ep.url, 'tok-1'));
    const [d] = await waitDeliveries(srv, task.id, 'delivered after a 408', allDelivered(1));
    assert.equal(d.attempts, 2);
    assert.deepEqual(
      ep.log().map((h) => h.answer),
      [408, 200],
    );
  });

  it('a receiver that never answers 2xx ends dead-lettered; the task is not delayed or changed; \
operator retry delivers it', async () => {
    let fixed = false;
    // The first attempt takes 4 s (under the host's 5 s bound), so the delivery is visibly
    // pending after the task completed, and a send that waited for it would take as long.
    const FIRST_ATTEMPT_MS = 4000;
    const ep = router.endpoint('dead', (_req, nth) =>
      fixed ? { status: 200 } : nth === 0 ? { status: 500, delayMs: FIRST_ATTEMPT_MS } : { status: 500 },
    );
    const sentAt = Date.now();
    const task = await send(srv, startMsg('echo', 'never 2xx'), pushConfig(ep.url, 'tok-1'));
    assert.equal(task.status.state, 'completed');
    assert.ok(Date.now() - sentAt < FIRST_ATTEMPT_MS, 'message/send waited for the push');
    // tasks/get: completed, while the push is still pending.
    const got = await rpcOk(srv, 'tasks/get', { id: task.id });
    assert.equal(got.status.state, 'completed');
    const pending = await deliveries(srv, `taskId=${task.id}&state=pending`);
    assert.equal(pending.length, 1, 'the push should still be pending');
    const runBefore = (await getJson(`${srv.url}/v1/runs/${task.id}`)).body;

    const [dead] = await waitDeliveries(
      srv,
      task.id,
      'the dead letter',
      (ds) => ds.length === 1 && ds[0].state === 'dead',
    );
    const schedule = FAST_SCHEDULE.split(',').length;
    assert.equal(dead.attempts, schedule + 1);
    assert.equal(dead.lastStatus, 500);
    assert.match(dead.lastError, /http_status/);
    assert.equal(dead.nextAttemptAt, null);
    assert.equal(ep.log().length, schedule + 1);
    assert.equal(new Set(ep.log().map((h) => h.deliveryId)).size, 1, 'retries reuse the delivery id');
    const listed = await deliveries(srv, 'state=dead');
    assert.ok(listed.some((d) => d.deliveryId === dead.deliveryId && d.attempts === schedule + 1 && d.lastError));
    // The failed push changed nothing in the run.
    const runAfter = (await getJson(`${srv.url}/v1/runs/${task.id}`)).body;
    assert.deepEqual(runAfter, runBefore);
    assert.equal((await rpcOk(srv, 'tasks/get', { id: task.id })).status.state, 'completed');

    fixed = true;
    const r = await retry(srv, dead.deliveryId);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.state, 'pending');
    assert.equal(r.body.attempts, 0);
    const [done] = await waitDeliveries(srv, task.id, 'the retried delivery', allDelivered(1));
    assert.equal(done.deliveryId, dead.deliveryId);
    assert.equal(done.attempts, 1);
    assert.deepEqual(exactlyOnce(ep), [dead.deliveryId]);

    const again = await retry(srv, dead.deliveryId);
    assert.equal(again.status, 409, JSON.stringify(again.body));
    assert.equal(again.body.error, 'delivery_not_dead');
    const unknown = await retry(srv, 'dlv_00000000-0000-7000-8000-000000000000');
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    assert.equal(unknown.body.error, 'not_found');
  });

  it('a 302 to another https server is never followed: retried, then dead; the other server sees nothing', async () => {
    const landing = `${elsewhere.url}landing`;
    const ep = router.endpoint('redirect', () => ({ status: 302, location: landing }));
    const task = await send(srv, startMsg('echo', 'redirect'), pushConfig(ep.url, 'tok-1'));
    const [d] = await waitDeliveries(
      srv,
      task.id,
      'the redirected push dead',
      (ds) => ds.length === 1 && ds[0].state === 'dead',
    );
    const attempts = FAST_SCHEDULE.split(',').length + 1;
    assert.equal(d.attempts, attempts);
    assert.equal(d.lastStatus, 302);
    assert.match(d.lastError, /redirect/);
    assert.equal(ep.log().length, attempts);
    assert.equal(elsewhere.requests.length, 0, 'the redirect was followed');
  });
});

describe('pending pushes survive a SIGKILL of the host', { timeout: 180_000 }, () => {
  let rx: HttpsReceiver;
  let router: Router;

  before(async () => {
    rx = await startHttpsReceiver();
    router = new Router(rx);
  });
  after(async () => {
    await killAllServers();
    await rx?.close();
  });

  it('503 at first, SIGKILL mid-retry, receiver fixed, restart on the same data dir: delivered after restart, \
in order, once each', async (t) => {
    const t0 = Date.now();
    const mark = (what: string) => t.diagnostic(`${what} at ${Date.now() - t0} ms`);
    const dataDir = freshDir('handoff-push-crash-');
    // Eight retries of 1–2 s each: the deliveries are mid-retry for 8 s or more.
    const env = pushEnv(await writeCa(rx), '2s,2s,2s,2s,2s,2s,2s,2s');
    let healthy = false;
    const ep = router.endpoint('crash', () => ({ status: healthy ? 200 : 503 }));
    let srv = await startServer({ dataDir, env });
    mark('started');

    const task = await send(srv, startMsg('approval', 'crash me'), pushConfig(ep.url, 'tok-crash'));
    assert.equal(task.status.state, 'input-required');
    await until('a failed attempt of the input-required push', () => ep.log().length >= 1);
    const done = await send(srv, decision(task, { action: 'accept' }));
    assert.equal(done.status.state, 'completed');
    const before = await waitDeliveries(
      srv,
      task.id,
      'two pending deliveries',
      (ds) => ds.length === 2 && ds.every((d) => d.state === 'pending'),
    );
    assert.equal(before[1].attempts, 0, 'the completed push went out before the input-required one');

    mark('pending');
    const killed = await srv.kill();
    mark('killed');
    assert.equal(killed.signal, 'SIGKILL');
    const failedBefore = ep.log().length;
    assert.ok(failedBefore >= 1 && ep.ok().length === 0);
    healthy = true;

    srv = await startServer({ dataDir, env });
    mark('restarted');
    const after = await waitDeliveries(srv, task.id, 'both delivered after the restart', allDelivered(2));
    assert.deepEqual(
      after.map((d) => d.deliveryId),
      before.map((d) => d.deliveryId),
      'the same deliveries, not new ones',
    );
    mark('delivered');
    const ok = ep.ok();
    assert.deepEqual(
      exactlyOnce(ep),
      before.map((d) => d.deliveryId),
      'delivered once each, input-required first',
    );
    assert.deepEqual(
      ok.map((h) => JSON.parse(h.body).status.state),
      ['input-required', 'completed'],
    );
    // Only the input-required push was tried before the crash; the completed one never jumped it.
    const firstCompleted = ep.log().findIndex((h) => h.deliveryId === before[1].deliveryId);
    assert.ok(firstCompleted >= failedBefore);
    // The vault key lives in the data dir: the restarted host still sends the token.
    for (const h of ok) assertTokenHeaders(h, 'tok-crash');
    assert.equal((await rpcOk(srv, 'tasks/get', { id: task.id })).status.state, 'completed');
  });
});
