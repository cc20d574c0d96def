// A stream whose client goes away is freed at once: its bus subscription, its registry entry and
// its follower are gone even though the run it watched keeps waiting (regression: streams were
// released only when their run ended, so subscriptions to a waiting task piled up).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import type { InProcessBus } from '../../src/bus/in-process.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { until } from '../support/until.js';

describe('streams release their resources when the client disconnects', () => {
  let t: TestHost;
  let url: string;

  before(async () => {
    t = await startTestHost();
    url = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await t?.close();
  });

  const rpc = (method: string, params: unknown) =>
    request(`${url}/v1/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });

  /** Open a stream, read until its first event, then drop the connection. */
  async function openAndDrop(open: () => Promise<Awaited<ReturnType<typeof request>>>): Promise<void> {
    const res = await open();
    assert.equal(res.statusCode, 200);
    for await (const chunk of res.body) if (String(chunk).includes('data:')) break;
    res.body.destroy();
  }

  it('100 resubscribers and 100 REST followers of a waiting task leave no subscription behind', async () => {
    const sent = await (
      await rpc('message/send', {
        message: {
          kind: 'message',
          messageId: 'm-release',
          role: 'user',
          parts: [{ kind: 'text', text: 'x' }],
          metadata: { skillId: 'approval' },
        },
      })
    ).body.json();
    const taskId = (sent as { result: { id: string; status: { state: string } } }).result.id;
    const bus = t.host.bus as InProcessBus;
    await Promise.all([
      ...Array.from({ length: 100 }, () => openAndDrop(() => rpc('tasks/resubscribe', { id: taskId }))),
      ...Array.from({ length: 100 }, () => openAndDrop(() => request(`${url}/v1/runs/${taskId}/events`))),
    ]);
    // Freed on the server's 'close' of each response: wait for it, bounded, without sleeping blind.
    await until('every follower to unsubscribe from the bus', () => bus.watchedRuns === 0, { deadlineMs: 10_000 });
    assert.equal((await t.host.engine.store.runs.get(taskId))?.status, 'waiting-approval', 'the task is untouched');
  });
});
