// tasks/get {id, historyLength: 10} on one task created just before the run: the read path alone
// (no task creation), 50 connections.
import { http } from '../lib/http.js';
import { registerScenario, type ScenarioContext } from '../lib/registry.js';
import { getTask, sendNew, taskIdOf } from '../lib/rpc.js';
import { throughputScenario } from '../lib/throughput.js';

async function createTask(ctx: ScenarioContext): Promise<string> {
  const res = await http('POST', ctx.running.url, { body: sendNew(ctx.skills.echo) });
  const id = taskIdOf(res.text);
  if (!id) throw new Error(`could not create the task to read (HTTP ${res.status}): ${res.text.slice(0, 300)}`);
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
