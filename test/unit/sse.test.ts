// SseStream (src/http/sse.ts, streams of one SseHub) on a real Fastify server listening on 127.0.0.1:0, with node:http
// clients that read, stall, resume or vanish: the frame format and headers, keepalive comments,
// the bounded per-connection buffer (a client that stops reading is dropped once the cap is passed
// or the buffer does not drain within stallMs, and the server side is freed: signal aborted,
// registry empty), ready() backpressure for a client that resumes reading, the registry closing
// streams on app.close(), and parseLastEventId.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import { after, describe, it } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { parseLastEventId, SseHub, type SseOptions, SseStream } from '../../src/http/sse.js';
import { openSse } from '../support/sse-client.js';

const KIB = 1024;
const DEADLINE_MS = 15_000;

/** Resolve when `signal` aborts; fail after `ms`. */
function aborted(signal: AbortSignal, what: string, ms = DEADLINE_MS): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: the stream's signal did not abort within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** A promise with its resolver (Promise.withResolvers is Node 22+). */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Bound any wait in these tests. */
async function within<T>(p: Promise<T>, what: string, ms = DEADLINE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
  );
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What one route invocation did, for the test to inspect. */
interface Served {
  stream: SseStream;
  /** Frames handed to send() that it accepted. */
  sent: number;
  /** The largest socket backlog (writableLength) seen right after an accepted send. */
  maxQueued: number;
  /** Resolves when the producer first finds the buffer above half the cap (ready() will wait). */
  blocked: Promise<number>;
  /** Resolves when the route handler has finished. */
  finished: Promise<void>;
}

interface Harness {
  app: FastifyInstance;
  url: string;
  registry: SseHub;
  /** The next request's Served record. */
  next(): Promise<Served>;
}

type Producer = (s: SseStream, rec: Served, reply: FastifyReply, markBlocked: () => void) => Promise<void>;

/** A Fastify app with one GET /sse route whose body is `producer`; streams share `registry`. */
async function harness(opts: SseOptions, producer: Producer, useAppRegistry = false): Promise<Harness> {
  const app = Fastify();
  const registry = new SseHub(opts);
  if (useAppRegistry) app.addHook('preClose', async () => registry.closeAll());
  const waiting: Array<(s: Served) => void> = [];
  const ready: Served[] = [];
  app.get('/sse', async (req: FastifyRequest, reply: FastifyReply) => {
    void req;
    const stream = new SseStream(reply, registry);
    const blocked = deferred<number>();
    const finished = deferred<void>();
    const rec: Served = { stream, sent: 0, maxQueued: 0, blocked: blocked.promise, finished: finished.promise };
    const w = waiting.shift();
    if (w) w(rec);
    else ready.push(rec);
    try {
      await producer(stream, rec, reply, () => blocked.resolve(reply.raw.writableLength));
    } finally {
      stream.close();
      finished.resolve();
    }
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  assert.ok(addr && typeof addr === 'object');
  return {
    app,
    url: `http://127.0.0.1:${addr.port}/sse`,
    registry,
    next: () => {
      const r = ready.shift();
      return r
        ? Promise.resolve(r)
        : within(new Promise<Served>((res) => waiting.push(res)), 'the route was not called');
    },
  };
}

const PAD = 'x'.repeat(16 * KIB);

/** Send up to `n` 16 KiB frames, awaiting ready() before each (the routes' pattern). */
const politeProducer =
  (n: number, max: number): Producer =>
  async (s, rec, reply, markBlocked) => {
    for (let i = 0; i < n; i++) {
      if (reply.raw.writableLength > max / 2) markBlocked();
      if (!(await s.ready())) return;
      if (!s.send({ i, pad: PAD }, { id: i })) return;
      rec.sent++;
      rec.maxQueued = Math.max(rec.maxQueued, reply.raw.writableLength);
    }
  };

/** Open a raw node:http GET and return the response without reading its body. */
async function rawGet(url: string): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
  const req = http.get(url, { agent: false });
  const [res] = (await within(once(req, 'response'), 'response headers')) as [http.IncomingMessage];
  return { req, res };
}

/** Read the rest of a response (resuming it); resolves with the bytes read and whether it completed. */
function drain(res: http.IncomingMessage): Promise<{ bytes: number; complete: boolean }> {
  return within(
    new Promise((resolve) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('error', () => {});
      res.once('close', () => resolve({ bytes, complete: res.complete }));
      res.resume();
    }),
    'the response did not close',
  );
}

const apps: FastifyInstance[] = [];
after(async () => {
  for (const a of apps.splice(0)) await a.close();
});
async function track(h: Promise<Harness>): Promise<Harness> {
  const x = await h;
  apps.push(x.app);
  return x;
}

// ---------------------------------------------------------------------------------------------

describe('SseStream on a real server', () => {
  it('writes headers, id:/event:/data: frames with one-line JSON, and ends the response on close()', async () => {
    const h = await track(
      harness({}, async (s) => {
        s.send({ a: 'multi\nline', n: 1 }, { id: 5, event: 'run.started' });
        s.send({ b: 2 });
        s.send('str', { id: 'x' });
      }),
    );
    const { res } = await rawGet(h.url);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.equal(res.headers['x-accel-buffering'], 'no');
    res.setEncoding('utf8');
    let body = '';
    res.on('data', (c: string) => (body += c));
    await within(once(res, 'end'), 'the response did not end');
    assert.equal(
      body,
      'id: 5\nevent: run.started\ndata: {"a":"multi\\nline","n":1}\n\ndata: {"b":2}\n\nid: x\ndata: "str"\n\n',
    );
    assert.equal(h.registry.size, 0);
  });

  it('sends :keepalive comments every keepaliveMs while the stream is quiet', async () => {
    const h = await track(harness({ keepaliveMs: 50 }, async (s) => aborted(s.signal, 'keepalive route')));
    const c = await openSse(h.url);
    const served = await h.next();
    for (let i = 0; i < 3; i++) await c.waitForComment((x) => x === 'keepalive', `keepalive #${i + 1}`, DEADLINE_MS, i);
    assert.equal(c.events.length, 0, 'comments are not events');
    c.abort();
    await aborted(served.stream.signal, 'after the client left');
  });

  it('a client that stops reading while a backlog is written is dropped once the buffer stalls for stallMs \
(64 KiB cap, 500 ms): signal aborted, registry empty, backlog bounded', async () => {
    const max = 64 * KIB;
    const h = await track(
      harness({ maxBufferedBytes: max, stallMs: 500, keepaliveMs: 60_000 }, politeProducer(4096, max)),
    );
    const { res } = await rawGet(h.url); // never read: the kernel buffers fill, then the server's
    const served = await h.next();
    assert.equal(h.registry.size, 1);
    const queued = await within(served.blocked, 'the producer never found the buffer above half the cap');
    const t0 = Date.now();
    await aborted(served.stream.signal, 'stalled client');
    const waited = Date.now() - t0;
    await within(served.finished, 'route');
    assert.ok(waited >= 400, `dropped after ${waited} ms: before stallMs elapsed`);
    assert.ok(waited < 5_000, `dropped only after ${waited} ms`);
    assert.ok(queued > max / 2);
    assert.ok(served.maxQueued <= max, `the socket backlog reached ${served.maxQueued} bytes, above the ${max} cap`);
    assert.ok(served.sent < 4096, 'the whole backlog was written to a client that read nothing');
    assert.equal(served.stream.closed, true);
    assert.equal(h.registry.size, 0, 'the registry still holds the dropped stream');
    assert.equal(served.stream.send({ late: true }), false, 'a closed stream accepts nothing');
    // The client sees a cut connection, not a cleanly ended stream.
    const got = await drain(res);
    assert.equal(got.complete, false);
  });

  it('a producer that ignores ready() is cut off once the socket backlog passes maxBufferedBytes \
(cap + one frame at most)', async () => {
    const max = 64 * KIB;
    let refusedAt = -1;
    let queuedWhenRefused = 0;
    const h = await track(
      harness({ maxBufferedBytes: max, stallMs: 60_000, keepaliveMs: 60_000 }, async (s, rec, reply) => {
        // Tight loop with no backpressure: a buggy producer, or a burst.
        for (let i = 0; i < 8192; i++) {
          if (!s.send({ i, pad: PAD }, { id: i })) {
            refusedAt = i;
            queuedWhenRefused = reply.raw.writableLength;
            return;
          }
          rec.sent++;
          rec.maxQueued = Math.max(rec.maxQueued, reply.raw.writableLength);
          if (i % 64 === 63) await new Promise<void>((r) => setImmediate(r));
        }
      }),
    );
    const { res } = await rawGet(h.url);
    const served = await h.next();
    await aborted(served.stream.signal, 'overflowing client');
    await within(served.finished, 'route');
    assert.ok(refusedAt > 0 && refusedAt < 8192, `send() never refused (refusedAt ${refusedAt})`);
    // The backlog is judged before each write, so it stays within the cap plus one frame.
    assert.ok(
      served.maxQueued <= max + PAD.length + 256,
      `accepted sends left ${served.maxQueued} bytes queued (cap ${max} + one frame)`,
    );
    assert.ok(
      queuedWhenRefused <= max + PAD.length + 256 || queuedWhenRefused === 0,
      `${queuedWhenRefused} bytes queued at the cut`,
    );
    assert.equal(h.registry.size, 0);
    assert.equal((await drain(res)).complete, false);
  });

  it('a single frame larger than maxBufferedBytes reaches a client that reads at full speed', async () => {
    const max = 64 * KIB;
    const h = await track(
      harness({ maxBufferedBytes: max, keepaliveMs: 60_000 }, async (s, rec) => {
        if (!(await s.ready())) return;
        if (s.send({ big: 'z'.repeat(100 * KIB) }, { id: 0 })) rec.sent++;
        if (!(await s.ready())) return;
        if (s.send({ small: 1 }, { id: 1 })) rec.sent++;
      }),
    );
    const c = await openSse(h.url);
    const served = await h.next();
    const end = await c.waitForEnd();
    await within(served.finished, 'route');
    assert.equal(served.sent, 2, `the client was dropped: ${c.describe()}`);
    assert.equal(end.reason, 'end');
    assert.deepEqual(
      c.events.map((e) => e.id),
      ['0', '1'],
    );
  });

  it('a client that disconnects frees its stream at once: signal aborted, registry empty, sends refused', async () => {
    const h = await track(
      harness({ keepaliveMs: 60_000 }, async (s) => {
        s.send({ hello: 1 }, { id: 0 });
        await aborted(s.signal, 'route waiting for the client to leave');
      }),
    );
    const { req, res } = await rawGet(h.url);
    const served = await h.next();
    await within(once(res, 'data'), 'the first frame');
    assert.equal(h.registry.size, 1);
    const t0 = Date.now();
    req.destroy();
    await aborted(served.stream.signal, 'after the disconnect', 5_000);
    const freedMs = Date.now() - t0;
    await within(served.finished, 'route');
    assert.ok(freedMs < 2_000, `freed only after ${freedMs} ms`);
    assert.equal(served.stream.closed, true);
    assert.equal(h.registry.size, 0);
    assert.equal(served.stream.send({ late: true }), false);
    assert.equal(await served.stream.ready(), false);
  });

  it('ready() waits while a client pauses and resumes once it reads again (64 KiB cap): every frame arrives, \
nobody is dropped', async () => {
    const max = 64 * KIB;
    const frames = 1500; // ≈ 24 MiB: more than the kernel buffers hold, so the pause is felt
    const h = await track(
      harness({ maxBufferedBytes: max, stallMs: 3_000, keepaliveMs: 60_000 }, politeProducer(frames, max)),
    );
    const { res } = await rawGet(h.url);
    const served = await h.next();
    await within(served.blocked, 'the producer never blocked on the paused client');
    const got = await drain(res); // the client reads again, to the end
    await within(served.finished, 'route');
    assert.equal(served.sent, frames, `the client was dropped after ${served.sent} frames`);
    assert.equal(got.complete, true, 'the stream was cut instead of ended');
    assert.ok(served.maxQueued <= max);
  });

  it('ready() with a small cap (8 KiB, allowed by HANDOFF_SSE_MAX_BUFFER ≥ 1024): \
a client that pauses and resumes is not dropped, \
though no `drain` ever comes below the 16 KiB highWaterMark', async () => {
    const max = 8 * KIB;
    const frames = 600;
    const small = 2 * KIB;
    const h = await track(
      harness({ maxBufferedBytes: max, stallMs: 1_000, keepaliveMs: 60_000 }, async (s, rec, reply, markBlocked) => {
        const pad = 'y'.repeat(small);
        for (let i = 0; i < frames; i++) {
          if (reply.raw.writableLength > max / 2) markBlocked();
          if (!(await s.ready())) return;
          if (!s.send({ i, pad }, { id: i })) return;
          rec.sent++;
        }
      }),
    );
    const { res } = await rawGet(h.url);
    const served = await h.next();
    await within(served.blocked, 'the producer never blocked on the paused client');
    const got = await drain(res);
    await within(served.finished, 'route');
    assert.equal(served.sent, frames, `the client was dropped after ${served.sent} of ${frames} frames`);
    assert.equal(got.complete, true);
  });

  it('SseHub.closeAll: app.close() ends every open stream (close does not hang on them)', async () => {
    const h = await harness({ keepaliveMs: 60_000 }, async (s) => aborted(s.signal, 'registry route'), true);
    const a = await openSse(h.url);
    const b = await openSse(h.url);
    const sa = await h.next();
    const sb = await h.next();
    assert.equal(h.registry.size, 2);
    await within(h.app.close(), 'app.close() hung on open streams');
    await Promise.all([aborted(sa.stream.signal, 'a'), aborted(sb.stream.signal, 'b')]);
    assert.equal(h.registry.size, 0);
    assert.equal((await a.waitForEnd()).reason, 'end');
    assert.equal((await b.waitForEnd()).reason, 'end');
  });
});

describe('parseLastEventId', () => {
  it('absent values are undefined', () => {
    assert.equal(parseLastEventId(undefined), undefined);
    assert.equal(parseLastEventId(null), undefined);
    assert.equal(parseLastEventId(''), undefined);
  });

  it('integer sequences ≥ -1, as strings or numbers, surrounding whitespace ignored', () => {
    assert.equal(parseLastEventId('0'), 0);
    assert.equal(parseLastEventId('42'), 42);
    assert.equal(parseLastEventId(' 7 '), 7);
    assert.equal(parseLastEventId('-1'), -1);
    assert.equal(parseLastEventId(-1), -1);
    assert.equal(parseLastEventId(12), 12);
    assert.equal(parseLastEventId(0), 0);
  });

  it('malformed values throw a RangeError', () => {
    for (const bad of ['abc', '-2', -2, '1.5', 1.5, '3abc', 'NaN', NaN, 'Infinity', Infinity, {}, true]) {
      assert.throws(
        () => parseLastEventId(bad),
        (err: unknown) => err instanceof RangeError && /Last-Event-ID/.test((err as Error).message),
        `value ${String(bad)}`,
      );
    }
  });

  it('whitespace-only and non-scalar values are never silently read as sequence 0', () => {
    for (const v of ['   ', '\t', []]) {
      let got: number | undefined;
      try {
        got = parseLastEventId(v);
      } catch {
        got = undefined; // refusing is fine too
      }
      assert.equal(got, undefined, `${JSON.stringify(v)} parsed as ${got}`);
    }
  });

  it('only decimal digits are a sequence (no hex, exponent or sign forms), and only up to 2³¹−1', () => {
    for (const v of ['0x10', '1e3', '+5', '0b11', '0o7', ' - 1', '1 2', '9'.repeat(16), 2 ** 53, -1.0000001]) {
      assert.throws(() => parseLastEventId(v), RangeError, String(v));
    }
    // The log's range (PostgreSQL integer): the largest sequence is a cursor, one more is not.
    assert.equal(parseLastEventId('2147483647'), 2_147_483_647);
    assert.equal(parseLastEventId(2_147_483_647), 2_147_483_647);
    for (const v of ['2147483648', '9'.repeat(15), 2 ** 31])
      assert.throws(() => parseLastEventId(v), RangeError, String(v));
  });
});
