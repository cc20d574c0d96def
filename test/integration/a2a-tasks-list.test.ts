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
