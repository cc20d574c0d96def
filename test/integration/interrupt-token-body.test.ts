// POST /v1/interrupts/{token}: whether a token exists is settled on the request, before its body is
// parsed, so an unknown token is 404 whatever the body — malformed JSON, a text/plain body — while
// a known token's bad body is still refused as such (400 malformed JSON, 415 a wrong media type).
// Runs on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, startTestHost, type TestHost } from '../support/host.js';

const UNKNOWN = '/v1/interrupts/tok_c29tZXRoaW5nLXVua25vd24';

for (const dialect of DIALECTS) {
  describe(`POST /v1/interrupts/{token} with a bad body (${dialect})`, () => {
    let t: TestHost;
    let known: string;
    let runId: string;

    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', env: { HANDOFF_CONFORMANCE_FIXTURES: '1' } });
      runId = await t.createRun('conformance-interrupt-external-event', {});
      const waiting = await t.waitForStatus(runId, ['waiting-external']);
      known = `/v1/interrupts/${waiting.interrupt.interruptToken}`;
    });
    after(() => t?.close());

    const send = (url: string, body: string, contentType: string) =>
      t.request('POST', url, body, { 'content-type': contentType });

    it('an unknown token is 404 with malformed JSON, a text/plain body, or a form', async () => {
      for (const [body, type] of [
        ['{"resumeValue": ', 'application/json'],
        ['accept', 'text/plain'],
        ['a=b', 'application/x-www-form-urlencoded'],
      ] as const) {
        const res = await send(UNKNOWN, body, type);
        assert.equal(res.status, 404, `${type}: ${res.text}`);
        assert.equal(res.body.error, 'link_not_found');
      }
    });

    it('a known token with malformed JSON is 400, with text/plain 415; the run still waits', async () => {
      const malformed = await send(known, '{"resumeValue": ', 'application/json');
      assert.equal(malformed.status, 400, malformed.text);
      const plain = await send(known, 'accept', 'text/plain');
      assert.equal(plain.status, 415, plain.text);
      assert.equal((await t.get(`/v1/runs/${runId}`)).body.status, 'waiting-external');
    });
  });
}
