// POST /v1/a2a/callbacks/{waitId}, the public route a peer pushes to: the wait id and the token
// are checked before anything of the body is read, and the body is never parsed (the push only
// wakes the run, which reads the peer task itself). A body that would be refused as JSON (not
// JSON, too deep, over HANDOFF_BODY_LIMIT) therefore gets the answer its id and token deserve.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, startTestHost, type TestHost } from '../support/host.js';

const TOKEN = 'a-per-call-token-the-peer-was-given';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

for (const dialect of DIALECTS) {
  describe(`peer callbacks: id and token before the body (${dialect})`, () => {
    let t: TestHost;
    let url: string;

    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', env: { HANDOFF_BODY_LIMIT: '1024' } });
      const wait = await t.host.store.peerWaits.upsert({
        runId: 'run_not_sleeping',
        nodeId: 'call',
        ordinal: 1,
        target: { agent: 'peer' },
        peerTaskId: 'task-1',
        tokenHash: sha256(TOKEN),
      });
      url = `/v1/a2a/callbacks/${wait.waitId}`;
    });
    after(() => t?.close());

    const post = (path: string, body: string, headers: Record<string, string> = {}) =>
      t.request('POST', path, body, { 'content-type': 'application/json', ...headers });
    const NOT_JSON = '{"id": "task-1", "status":';
    const TOO_DEEP = `${'['.repeat(200)}${']'.repeat(200)}`;
    const TOO_LARGE = JSON.stringify({ id: 'task-1', pad: 'x'.repeat(4096) });

    it('an unknown wait id is 404, whatever the body', async () => {
      for (const body of [NOT_JSON, TOO_DEEP, TOO_LARGE]) {
        const res = await post('/v1/a2a/callbacks/pw_unknown', body, { authorization: `Bearer ${TOKEN}` });
        assert.equal(res.status, 404, `${body.slice(0, 20)}: ${res.text}`);
        assert.equal(res.body.error, 'not_found');
      }
    });

    it('a wrong or missing token is 401, whatever the body', async () => {
      for (const body of [NOT_JSON, TOO_DEEP, TOO_LARGE]) {
        const wrong: Record<string, string>[] = [
          { authorization: 'Bearer wrong' },
          { 'x-a2a-notification-token': 'wrong' },
          {},
        ];
        for (const headers of wrong) {
          const res = await post(url, body, headers);
          assert.equal(res.status, 401, `${body.slice(0, 20)} ${JSON.stringify(headers)}: ${res.text}`);
          assert.equal(res.body.error, 'unauthenticated');
        }
      }
    });

    it('the right token is 204 and the body is not read: not JSON, too deep or too large alike', async () => {
      for (const body of [NOT_JSON, TOO_DEEP, TOO_LARGE, '{}']) {
        const res = await post(url, body, { authorization: `Bearer ${TOKEN}` });
        assert.equal(res.status, 204, `${body.slice(0, 20)}: ${res.text}`);
      }
      const bare = await t.request('POST', url, undefined, { 'x-a2a-notification-token': TOKEN });
      assert.equal(bare.status, 204, bare.text);
    });

    it('a body of another media type is 415 once the token matched', async () => {
      const res = await post(url, 'hello', { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' });
      assert.equal(res.status, 415, res.text);
    });
  });
}
