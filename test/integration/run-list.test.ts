// GET /v1/runs (a tenant's runs, newest first, keyset pages bounded by count and by bytes, filters)
// and GET /v1/runs/changes (the tenant's run changes as SSE, also across instances on PostgreSQL).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { createHost, type Host } from '../../src/host.js';
import { bearer, DIALECTS, type Json, PG_URL, REPO_ROOT, startTestHost, type TestHost } from '../support/host.js';
import { pgTestSchemas } from '../support/pg.js';
import { openSse, type SseConnection } from '../support/sse-client.js';

const KEY_A = 'key-list-alice-01';
const KEY_A2 = 'key-list-amy-0001';
const KEY_B = 'key-list-bob-0001';
const KEY_C = 'key-list-carl-001';
const KEYS = `${KEY_A}=ta:alice,${KEY_A2}=ta:amy,${KEY_B}=tb:bob,${KEY_C}=tc:carl`;
const A = bearer(KEY_A);
const B = bearer(KEY_B);

for (const dialect of DIALECTS) {
  describe(`run list (${dialect})`, () => {
    let t: TestHost;
    /** Tenant A's runs in creation order. */
    const created: Array<{ runId: string; workflowId: string }> = [];

    const start = async (workflowId: string, body: Record<string, unknown> = {}, headers = A) => {
      const res = await t.post('/v1/runs', { workflowId, ...body }, headers);
      assert.equal(res.status, 201, res.text);
      if (headers === A) created.push({ runId: res.body.runId, workflowId });
      return res.body.runId as string;
    };
    const list = async (query = '', headers = A) => {
      const res = await t.get(`/v1/runs${query}`, headers);
      assert.equal(res.status, 200, res.text);
      return res.body as { runs: Json[]; nextCursor?: string };
    };

    before(async () => {
      t = await startTestHost({ apiKeys: KEYS, ...(dialect === 'postgres' ? { pg: true } : {}) });
      await start('echo', { inputs: { prompt: 'one' }, tags: ['Launch-Plan', 'q3'] });
      await start('approval', { inputs: { prompt: 'two' } });
      await start('echo', { inputs: { prompt: 'three' }, tags: ['100%_done'] });
      await start('clarify');
      await start('approval', { inputs: { prompt: 'five' }, tags: ['say "hi"'] });
      await start('echo', { inputs: { prompt: 'six' } });
      await start('echo', {}, B);
      for (const r of created) {
        const waits = r.workflowId === 'approval' || r.workflowId === 'clarify';
        await t.waitForStatus(
          r.runId,
          [waits ? (r.workflowId === 'clarify' ? 'waiting-input' : 'waiting-approval') : 'completed'],
          A,
        );
      }
    });
    after(async () => {
      await t?.close();
    });

    it("lists the tenant's runs newest first, each a summary with what it waits on", async () => {
      const { runs, nextCursor } = await list();
      assert.equal(nextCursor, undefined);
      assert.deepEqual(
        runs.map((r) => r.runId),
        created.map((r) => r.runId).reverse(),
      );
      const approval = runs.find((r) => r.workflowId === 'approval');
      assert.equal(approval.status, 'waiting-approval');
      assert.deepEqual(approval.interrupt, { kind: 'approval', nodeId: 'review', title: 'Review the draft' });
      const clarify = runs.find((r) => r.workflowId === 'clarify');
      assert.deepEqual(clarify.interrupt, { kind: 'clarification', nodeId: 'ask', title: 'One question' });
      const echo = runs.find((r) => r.workflowId === 'echo');
      assert.equal(echo.status, 'completed');
      assert.equal(echo.interrupt, undefined);
      assert.ok(echo.completedAt && echo.createdAt && echo.updatedAt);
      // A summary, not the snapshot: no inputs or node states.
      assert.equal(echo.inputs, undefined);
      assert.equal(echo.nodeStates, undefined);
    });

    it('filters by status, workflow and text', async () => {
      const ids = async (query: string) => (await list(query)).runs.map((r) => r.runId);
      const waiting = created
        .filter((r) => r.workflowId !== 'echo')
        .map((r) => r.runId)
        .reverse();
      assert.deepEqual(await ids('?status=waiting-approval,waiting-input'), waiting);
      assert.deepEqual(
        await ids('?status=waiting-approval'),
        created
          .filter((r) => r.workflowId === 'approval')
          .map((r) => r.runId)
          .reverse(),
      );
      assert.deepEqual(await ids('?status=completed,waiting-input&workflowId=clarify'), [created[3]!.runId]);
      assert.equal((await ids('?workflowId=echo')).length, 3);
      // Text: a run id prefix (any case), within a workflow id, within a tag (any case, LIKE characters literal).
      const first = created[0]!.runId;
      assert.deepEqual(await ids(`?q=${first.toUpperCase()}`), [first]);
      assert.deepEqual(await ids('?q=clar'), [created[3]!.runId]);
      assert.deepEqual(await ids('?q=launch-PLAN'), [first]);
      assert.deepEqual(await ids(`?q=${encodeURIComponent('100%_')}`), [created[2]!.runId]);
      assert.deepEqual(await ids(`?q=${encodeURIComponent('%')}`), [created[2]!.runId]);
      assert.deepEqual(await ids(`?q=${encodeURIComponent('"hi"')}`), [created[4]!.runId]);
      assert.deepEqual(await ids(`?q=${encodeURIComponent('","')}`), []);
      assert.deepEqual(await ids('?q=nothing-like-this'), []);
    });

    it('pages by keyset: every run once, in order, with or without a filter', async () => {
      for (const filter of ['', '&status=waiting-approval,waiting-input', '&workflowId=echo']) {
        const all = (await list(`?limit=100${filter}`)).runs.map((r) => r.runId);
        const paged: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 10; page++) {
          const body = await list(`?limit=2${filter}${cursor ? `&cursor=${cursor}` : ''}`);
          assert.ok(body.runs.length <= 2);
          paged.push(...body.runs.map((r) => r.runId));
          cursor = body.nextCursor;
          if (!cursor) break;
        }
        assert.equal(cursor, undefined, 'the last page has no cursor');
        assert.deepEqual(paged, all, filter);
      }
      // A run created meanwhile is newer than every page already given: later pages do not see it.
      const first = await list('?limit=3');
      await start('echo');
      const rest = await list(`?limit=100&cursor=${first.nextCursor}`);
      assert.deepEqual(
        [...first.runs, ...rest.runs].map((r) => r.runId),
        created
          .slice(0, -1)
          .map((r) => r.runId)
          .reverse(),
      );
    });

    it("shows only the caller's tenant", async () => {
      const mine = (await list('', B)).runs;
      assert.equal(mine.length, 1);
      assert.ok(!created.some((r) => r.runId === mine[0].runId));
      const a = await list('?limit=100');
      assert.ok(!a.runs.some((r) => r.runId === mine[0].runId));
      // Another principal of tenant A sees the same runs as alice.
      assert.deepEqual((await list('?limit=100', bearer(KEY_A2))).runs, a.runs);
    });

    it('a run waiting at several nodes lists every open interrupt, oldest first', async () => {
      // Tenant C alone: the other tests count tenant A's and B's runs.
      const C = bearer(KEY_C);
      const runId = await start('two-reviewers', { inputs: { prompt: 'both' } }, C);
      await t.waitForStatus(runId, ['waiting-approval'], C);
      const [listed] = (await list('?status=waiting-approval', C)).runs;
      assert.equal(listed.runId, runId);
      assert.deepEqual(listed.interrupts.map((i: Json) => [i.nodeId, i.title]).sort(), [
        ['finance', 'Finance: review the draft'],
        ['legal', 'Legal: review the draft'],
      ]);
      assert.deepEqual(listed.interrupt, listed.interrupts[0], 'interrupt stays the oldest');
      const snapshot = (await t.get(`/v1/runs/${runId}`, C)).body;
      assert.deepEqual(
        listed.interrupts.map((i: Json) => i.nodeId),
        snapshot.interrupts.map((i: Json) => i.nodeId),
        'the same order as the snapshot',
      );

      const decided = await t.post(`/v1/runs/${runId}/interrupts/legal`, { resumeValue: { action: 'accept' } }, C);
      assert.equal(decided.status, 200, decided.text);
      const [remaining] = (await list('?status=waiting-approval', C)).runs;
      assert.deepEqual(remaining.interrupts, [
        { kind: 'approval', nodeId: 'finance', title: 'Finance: review the draft' },
      ]);
    });

    it('refuses bad input with a clear error and changes nothing', async () => {
      for (const query of [
        '?status=bogus',
        '?status=completed,',
        '?status=',
        '?limit=0',
        '?limit=101',
        '?limit=x',
        '?q=',
        `?q=${'x'.repeat(129)}`,
        '?cursor=not-a-cursor',
        `?cursor=${Buffer.from('["only one"]').toString('base64url')}`,
        '?unknown=1',
      ]) {
        const res = await t.get(`/v1/runs${query}`, A);
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.equal(res.body.error, 'validation_error', query);
        assert.ok(res.body.message, query);
      }
      const cursorError = await t.get('/v1/runs?cursor=not-a-cursor', A);
      assert.match(cursorError.body.message, /nextCursor/);
      const unauthenticated = await t.get('/v1/runs');
      assert.equal(unauthenticated.status, 401);
    });
  });

  // Pages bounded by bytes as well as by count (HANDOFF_LIST_MAX_BYTES, here 4 KiB): summaries of
  // ~1 KB (tags), and one of ~8 KB that comes alone on its page.
  describe(`run list pages bounded by HANDOFF_LIST_MAX_BYTES (${dialect})`, () => {
    const MAX_BYTES = 4096;
    let t: TestHost;
    const ids: string[] = [];
    let huge: string;
    const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

    before(async () => {
      t = await startTestHost({
        apiKeys: KEYS,
        env: { HANDOFF_LIST_MAX_BYTES: String(MAX_BYTES) },
        ...(dialect === 'postgres' ? { pg: true } : {}),
      });
      const start = async (tags: string[]) => {
        const res = await t.post('/v1/runs', { workflowId: 'echo', tags }, A);
        assert.equal(res.status, 201, res.text);
        ids.push(res.body.runId);
        return res.body.runId as string;
      };
      for (let i = 0; i < 5; i++) await start(Array.from({ length: 4 }, (_, k) => `${i}${k}`.repeat(100)));
      huge = await start(Array.from({ length: 32 }, (_, k) => `${k}`.padStart(2, '0').repeat(128)));
      for (let i = 5; i < 10; i++) await start(Array.from({ length: 4 }, (_, k) => `${i}${k}`.repeat(100)));
    });
    after(async () => {
      await t?.close();
    });

    it('a page ends early with its cursor before passing the bound; a larger summary comes alone; every run once', async () => {
      const pages: Json[][] = [];
      let cursor: string | undefined;
      do {
        const res = await t.get(`/v1/runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`, A);
        assert.equal(res.status, 200, res.text);
        assert.ok(res.body.runs.length > 0, 'never an empty page with a cursor');
        pages.push(res.body.runs);
        cursor = res.body.nextCursor;
      } while (cursor && pages.length < 20);
      assert.equal(cursor, undefined, 'the pages end');
      assert.ok(pages.length >= 4, `${pages.length} pages`);
      for (const runs of pages) assert.ok(runs.length === 1 || bytes(runs) <= MAX_BYTES, `${bytes(runs)} bytes`);
      const alone = pages.find((runs) => runs.some((r) => r.runId === huge));
      assert.equal(alone?.length, 1);
      assert.ok(bytes(alone?.[0]) > MAX_BYTES);
      assert.deepEqual(
        pages.flat().map((r) => r.runId),
        [...ids].reverse(),
        'every run once, newest first',
      );
    });
  });

  describe(`run changes stream (${dialect})`, () => {
    let t: TestHost;
    let url: string;
    const streams: SseConnection[] = [];

    before(async () => {
      t = await startTestHost({
        apiKeys: KEYS,
        env: { HANDOFF_SSE_KEEPALIVE_MS: '100' },
        ...(dialect === 'postgres' ? { pg: true } : {}),
      });
      url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    });
    after(async () => {
      for (const s of streams) s.abort();
      await t?.close();
    });

    const open = async (key: string) => {
      const s = await openSse(`${url}/v1/runs/changes`, { token: key });
      streams.push(s);
      assert.ok(s.isSse, s.text);
      return s;
    };

    it("streams the tenant's run changes, and only those, with keepalives", async () => {
      const a = await open(KEY_A);
      const b = await open(KEY_B);
      const runA = (await t.post('/v1/runs', { workflowId: 'approval' }, A)).body.runId as string;
      const waiting = await a.waitFor(
        (e) => e.event === 'run' && e.json.runId === runA && e.json.status === 'waiting-approval',
        'run A waiting',
      );
      assert.deepEqual(Object.keys(waiting.json).sort(), ['lastSeq', 'runId', 'status']);
      assert.ok(waiting.json.lastSeq > 0);
      const resolved = await t.post(`/v1/runs/${runA}/interrupts/review`, { resumeValue: { action: 'accept' } }, A);
      assert.equal(resolved.status, 200, resolved.text);
      await a.waitFor((e) => e.json?.runId === runA && e.json.status === 'completed', 'run A completed');
      // B hears of its own run, and of nothing of A's before it.
      const runB = (await t.post('/v1/runs', { workflowId: 'echo' }, B)).body.runId as string;
      await b.waitFor((e) => e.json?.runId === runB && e.json.status === 'completed', 'run B completed');
      assert.ok(!b.events.some((e) => e.json?.runId === runA), b.describe());
      assert.ok(!a.events.some((e) => e.json?.runId === runB), a.describe());
      assert.ok(
        a.events.every((e) => e.id === undefined),
        'not resumable: no event ids',
      );
      await a.waitForComment((c) => c.includes('keepalive'), 'a keepalive');
    });

    it('needs an API key', async () => {
      const s = await openSse(`${url}/v1/runs/changes`);
      streams.push(s);
      assert.equal(s.isSse, false);
      assert.equal(s.status, 401);
    });
  });
}

describe('run changes stream across instances (PostgreSQL)', {
  skip: PG_URL ? false : 'HANDOFF_TEST_PG_URL is not set',
}, () => {
  const schemas = PG_URL ? pgTestSchemas(PG_URL, 'changes') : undefined;
  const hosts: Host[] = [];
  const dirs: string[] = [];
  let stream: SseConnection | undefined;

  const start = async (name: string, schema: string): Promise<Host> => {
    const dir = mkdtempSync(join(tmpdir(), `handoff-changes-${name}-`));
    dirs.push(dir);
    const config = loadConfig(
      { port: '0', data: dir, host: '127.0.0.1' },
      {
        HANDOFF_DATABASE_URL: PG_URL!,
        HANDOFF_PG_SCHEMA: schema,
        HANDOFF_PG_POOL_SIZE: '3',
        HANDOFF_INSTANCE_ID: `changes-${name}`,
        HANDOFF_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
        HANDOFF_API_KEYS: KEYS,
      },
    );
    config.workflowDirs = [join(REPO_ROOT, 'workflows')];
    const host = await createHost(config, pino({ level: 'silent' }));
    hosts.push(host);
    return host;
  };

  after(async () => {
    stream?.abort();
    for (const h of hosts) await h.close();
    await schemas?.dropAll();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("a run changed on instance A reaches a tenant's stream on instance B", async () => {
    const schema = schemas!.fresh();
    const a = await start('a', schema);
    const b = await start('b', schema);
    a.runner.start();
    const bUrl = await b.listen();
    stream = await openSse(`${bUrl}/v1/runs/changes`, { token: KEY_A });
    assert.ok(stream.isSse, stream.text);
    const res = await a.app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: A,
      payload: { workflowId: 'approval' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const runId = res.json().runId as string;
    await stream.waitFor(
      (e) => e.json?.runId === runId && e.json.status === 'waiting-approval',
      'the waiting run, from the other instance',
    );
  });
});
