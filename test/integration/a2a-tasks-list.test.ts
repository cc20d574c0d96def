// GET /v1/a2a/tasks: a tenant's tasks, newest change first, by keyset pagination.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  type A2ATeam,
  assertSchema,
  KEY_ALICE,
  KEY_EVE,
  skillMessage,
  startA2ATeam,
  textMessage,
  validateTaskState,
} from '../support/a2a.js';
import { bearer, DIALECTS, type Json } from '../support/host.js';

for (const dialect of DIALECTS) {
  describe(`A2A task list (${dialect})`, () => {
    let team: A2ATeam;
    const mine: string[] = [];

    before(async () => {
      team = await startA2ATeam(dialect);
      for (let i = 0; i < 5; i++) mine.push(String((await team.alice.sendOk(textMessage(`hello ${i}`))).id));
      mine.push(String((await team.alice.sendOk(skillMessage('approval', 'wait'))).id));
      await team.eve.sendOk(textMessage('not yours'));
    });
    after(async () => {
      await team?.t.close();
    });

    const list = async (query: string, key = KEY_ALICE) =>
      team.t.app.inject({ method: 'GET', url: `/v1/a2a/tasks${query}`, headers: bearer(key) });

    it('pages through every task of the tenant once, most recently changed first', async () => {
      const seen: Json[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const res = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.ok(body.tasks.length <= 2);
        for (const rec of body.tasks) assertSchema(validateTaskState, rec, 'listed record');
        seen.push(...body.tasks);
        cursor = body.nextCursor;
        if (!cursor) break;
      }
      assert.deepEqual(seen.map((r) => r.taskId).sort(), [...mine].sort());
      const times = seen.map((r) => String(r.updatedAt));
      assert.deepEqual(times, [...times].sort().reverse());
    });

    it('filters by state and never shows another tenant’s tasks', async () => {
      const waiting = (await list('?state=input-required')).json();
      assert.deepEqual(
        waiting.tasks.map((r: Json) => r.taskId),
        [mine[5]],
      );
      const eves = (await list('', KEY_EVE)).json();
      assert.equal(eves.tasks.length, 1);
      assert.ok(!mine.includes(eves.tasks[0].taskId));
    });

    it('refuses a malformed cursor or limit with 400', async () => {
      assert.equal((await list('?cursor=not-a-cursor')).statusCode, 400);
      assert.equal((await list('?limit=0')).statusCode, 400);
      assert.equal((await list('?limit=101')).statusCode, 400);
      assert.equal((await list('?bogus=1')).statusCode, 400);
    });
  });
}

// Pages bounded by bytes as well as by count (HANDOFF_LIST_MAX_BYTES): with a hundred tasks of a
// megabyte, one ListTasks page was a 199 MB answer. Here the bound is 16 KiB and the tasks a few KB.
const MAX_BYTES = 16 * 1024;
const KB = 1024;

for (const dialect of DIALECTS) {
  describe(`list pages bounded by HANDOFF_LIST_MAX_BYTES (${dialect})`, () => {
    let team: A2ATeam;
    /** Echo tasks of ~3 KB of text (in their history and their artifact), oldest first. */
    const small: string[] = [];
    /** An approval whose draft (shown in the task's metadata) alone passes the bound. */
    let huge: string;
    const V1 = { ...bearer(KEY_ALICE), 'a2a-version': '1.0' };
    const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

    before(async () => {
      team = await startA2ATeam(dialect, { HANDOFF_LIST_MAX_BYTES: String(MAX_BYTES) });
      for (let i = 0; i < 4; i++) small.push(String((await team.alice.sendOk(textMessage(`${i}`.repeat(3 * KB)))).id));
      huge = String((await team.alice.sendOk(skillMessage('approval', 'h'.repeat(24 * KB)))).id);
      for (let i = 4; i < 8; i++) small.push(String((await team.alice.sendOk(textMessage(`${i}`.repeat(3 * KB)))).id));
    });
    after(async () => {
      await team?.t.close();
    });

    /** Every page of ListTasks over `call`, following nextPageToken; fails if a page repeats. */
    async function allPages(call: (pageToken: string) => Promise<Json>): Promise<Json[]> {
      const pages: Json[] = [];
      let pageToken = '';
      do {
        const page = await call(pageToken);
        assert.ok(page.tasks.length > 0, 'never an empty page with a token');
        pages.push(page);
        assert.ok(pages.length <= 20, 'the pages loop');
        pageToken = page.nextPageToken;
      } while (pageToken !== '');
      return pages;
    }
    const rpcList = async (params: Json) => {
      const res = await team.t.request('POST', '/v1/a2a', { jsonrpc: '2.0', id: 1, method: 'ListTasks', params }, V1);
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.result, res.text);
      return res.body.result;
    };
    const restList = async (query: string) => {
      const res = await team.t.get(`/v1/a2a/rest/tasks?${query}`, V1);
      assert.equal(res.status, 200, res.text);
      return res.body;
    };

    it('ListTasks items are light: history only with historyLength, artifacts only with includeArtifacts', async () => {
      const page = await rpcList({ pageSize: 100 });
      const echo = page.tasks.find((t: Json) => t.id === small.at(-1));
      assert.equal(echo.history, undefined, 'no history unless asked');
      assert.equal(echo.artifacts, undefined, 'no artifacts unless asked');
      assert.ok(bytes(echo) < KB, `a light item: ${bytes(echo)} bytes`);
      const asked = await rpcList({ pageSize: 100, historyLength: 1, includeArtifacts: true });
      const full = asked.tasks.find((t: Json) => t.id === small.at(-1));
      assert.equal(full.history.length, 1);
      assert.ok(full.artifacts.length > 0);
    });

    it('a page ends early, with its token, before its tasks would pass the bound; every task once (JSON-RPC and HTTP+JSON)', async () => {
      const mine = [...small, huge].sort();
      for (const call of [
        (pageToken: string) => rpcList({ pageSize: 100, pageToken, historyLength: 10, includeArtifacts: true }),
        (pageToken: string) =>
          restList(`pageSize=100&historyLength=10&includeArtifacts=true${pageToken ? `&pageToken=${pageToken}` : ''}`),
      ]) {
        const pages = await allPages(call);
        assert.ok(pages.length >= 4, `${pages.length} pages`);
        for (const page of pages) {
          assert.equal(page.totalSize, mine.length);
          assert.equal(page.pageSize, 100);
          const alone = page.tasks.length === 1;
          assert.ok(alone || bytes(page.tasks) <= MAX_BYTES, `a page of ${bytes(page.tasks)} bytes`);
        }
        const seen = pages.flatMap((p) => p.tasks.map((t: Json) => t.id));
        assert.deepEqual([...seen].sort(), mine, 'every task exactly once');
      }
    });

    it('a task larger than the bound comes alone on its page, and the next page moves on', async () => {
      const pages = await allPages((pageToken) => rpcList({ pageSize: 100, pageToken }));
      const at = pages.findIndex((p) => p.tasks.some((t: Json) => t.id === huge));
      assert.ok(at >= 0);
      assert.equal(pages[at].tasks.length, 1, 'alone');
      assert.ok(bytes(pages[at].tasks[0]) > MAX_BYTES, 'it really is larger than the bound');
      assert.notEqual(pages[at].nextPageToken, '', 'older tasks follow it');
      assert.ok(!pages[at + 1].tasks.some((t: Json) => t.id === huge), 'the next page starts after it');
    });

    it('GET /v1/a2a/tasks: records with a large contextId end a page early; each record once', async () => {
      const ids = [];
      for (let i = 0; i < 3; i++) {
        ids.push(String((await team.eve.sendOk(textMessage('x', { contextId: `c${i}-${'c'.repeat(6 * KB)}` }))).id));
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const res = await team.t.app.inject({
          method: 'GET',
          url: `/v1/a2a/tasks?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
          headers: bearer(KEY_EVE),
        });
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.ok(body.tasks.length > 0);
        assert.ok(body.tasks.length === 1 || bytes(body.tasks) <= MAX_BYTES, `${bytes(body.tasks)} bytes`);
        seen.push(...body.tasks.map((r: Json) => r.taskId));
        cursor = body.nextCursor;
        pages++;
      } while (cursor && pages < 10);
      assert.ok(pages >= 2, `${pages} pages`);
      assert.deepEqual(seen.sort(), ids.sort());
    });
  });
}
