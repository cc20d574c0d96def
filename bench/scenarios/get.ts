// tasks/get {id, historyLength: 10} on one task created just before the run: the read path alone
// (no task creation), 50 connections.
import { throughputScenario } from '../lib/throughput.js';
import { registerScenario } from '../lib/registry.js';
import { getTask, postJson, sendNew, taskIdOf } from '../lib/rpc.js';
import type { ScenarioContext } from '../lib/registry.js';

async function createTask(ctx: ScenarioContext): Promise<string> {
  const res = await postJson(ctx.running.url, sendNew(ctx.skills.echo));
  const id = taskIdOf(res.body);
  if (!id) throw new Error(`could not create the task to read (HTTP ${res.status}): ${res.body.slice(0, 300)}`);
  return id;
}

registerScenario(
  throughputScenario({
    name: 'get',
    description: '`tasks/get` {id, historyLength: 10} on one completed echo task, 50 connections.',
    order: 30,
    connections: 50,
    prepare: async (ctx) => {
      const id = await createTask(ctx);
      // The body never changes, so build it once instead of per request.
      const body = getTask(id, 10);
      return [{ body: () => body, expect: `"id":"${id}"` }];
    },
  }),
);
