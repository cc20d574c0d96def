// Blocking message/send of the echo skill: each request creates a task and returns it completed.
// `send` loads the server (50 connections); `send-c1` is one closed-loop connection, i.e. the
// unloaded latency of the same call.
import { throughputScenario } from '../lib/throughput.js';
import { registerScenario } from '../lib/registry.js';
import { sendNew } from '../lib/rpc.js';
import type { ScenarioContext } from '../lib/registry.js';

const echoSteps = async (ctx: ScenarioContext) => [
  { body: () => sendNew(ctx.skills.echo), expect: '"state":"completed"' },
];

registerScenario(
  throughputScenario({
    name: 'send',
    description: '`message/send` (blocking echo → completed Task, fresh messageId each), 50 connections.',
    order: 10,
    connections: 50,
    prepare: echoSteps,
  }),
);

registerScenario(
  throughputScenario({
    name: 'send-c1',
    description: '`message/send` (blocking echo), 1 connection: unloaded latency.',
    order: 20,
    connections: 1,
    prepare: echoSteps,
  }),
);
