// GET /v1/runs/{id}/events answered as JSON or as the event stream by the Accept header: the
// weights count (a client refusing the stream with `text/event-stream;q=0` gets JSON), both answers
// say `Vary: Accept`, and the JSON answer's runStatus is read after its events, so it never lags
// them (a run that ends while the events are read answers `completed` with its final event).
// Runs on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunEvent } from '../../src/store/model.js';
import { DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';

for (const dialect of DIALECTS) {
  describe(`GET /v1/runs/{id}/events as JSON (${dialect})`, () => {
    let t: TestHost;
    let doneRun: string;

    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres' });
      doneRun = await t.createRun('echo', { message: 'hi' });
      assert.equal((await t.waitForStatus(doneRun, ['completed'])).status, 'completed');
    });
    after(() => t?.close());

    const events = (runId: string, accept?: string) =>
      t.get(`/v1/runs/${runId}/events`, accept === undefined ? {} : { accept });
    const isJson = (res: { headers: Json }) => /^application\/json/.test(String(res.headers['content-type']));
    const isStream = (res: { headers: Json }) => /^text\/event-stream/.test(String(res.headers['content-type']));

    it('the answer follows the Accept weights; both forms say Vary: Accept', async () => {
      const json = [
        'application/json',
        'text/event-stream;q=0, application/json',
        'application/json, text/event-stream; q=0',
        'application/json;q=0.9, text/event-stream;q=0.5',
        'text/*;q=0, application/json',
        'application/json, */*',
        'application/json, text/html',
      ];
      const stream = [
        undefined,
        '*/*',
        'text/event-stream',
        'application/json, text/event-stream',
        'application/json;q=0.5, text/event-stream',
        'application/json;q=0, text/event-stream;q=0',
        'text/event-stream;q=0, application/json;q=0',
        'application/*;q=0.5, */*',
      ];
      for (const accept of json) {
        const res = await events(doneRun, accept);
        assert.equal(res.status, 200, `${accept}: ${res.text}`);
        assert.ok(isJson(res), `${accept} answers JSON, not ${res.headers['content-type']}`);
        assert.equal(res.headers.vary, 'Accept', accept);
        assert.equal(res.body.runStatus, 'completed');
        assert.equal(res.body.isComplete, true);
      }
      for (const accept of stream) {
        const res = await events(doneRun, accept);
        assert.equal(res.status, 200, `${accept}: ${res.text}`);
        assert.ok(isStream(res), `${accept} answers the stream, not ${res.headers['content-type']}`);
        assert.equal(res.headers.vary, 'Accept', accept);
        assert.match(res.text, /event: run\.completed/);
      }
    });

    it('runStatus is read after the events: a run that ends meanwhile answers completed with its last event', async () => {
      const runId = await t.createRun('approval', { prompt: 'p' });
      await t.waitForStatus(runId, ['waiting-approval']);
      // The moment the route reads the log, the gate is accepted and the run ends: the log it then
      // reads holds the final event, and the status it answers must not be the one before.
      const store = t.host.store.events;
      const list = store.list.bind(store);
      let armed = true;
      store.list = async (id: string, afterSeq: number, limit: number): Promise<RunEvent[]> => {
        if (armed && id === runId) {
          armed = false;
          const decided = await t.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue: { action: 'accept' } });
          assert.equal(decided.status, 200, decided.text);
          await t.waitForStatus(runId, ['completed']);
        }
        return list(id, afterSeq, limit);
      };
      try {
        const res = await events(runId, 'application/json');
        assert.equal(res.status, 200, res.text);
        assert.equal(armed, false);
        assert.equal(res.body.events.at(-1).type, 'run.completed');
        assert.equal(res.body.runStatus, 'completed');
        assert.equal(res.body.isTerminal, true);
        assert.equal(res.body.isComplete, true);
      } finally {
        store.list = list;
      }
    });

    it('an unknown run is 404 in either form', async () => {
      for (const accept of ['application/json', 'text/event-stream']) {
        const res = await events('run_nope', accept);
        assert.equal(res.status, 404, res.text);
      }
    });
  });
}
