// The human-in-the-loop round trip: message/send to the approval skill → input-required; a reply
// into that task with a data part {action:'accept'} → completed. Two requests per flow, 50
// connections; reported as req/s and flows/s.
import { throughputScenario } from '../lib/throughput.js';
import { registerScenario } from '../lib/registry.js';
import { sendDecision, sendNew, taskIdOf } from '../lib/rpc.js';

registerScenario(
  throughputScenario({
    name: 'approval',
    description:
      'Approval flow: `message/send` → input-required, then `message/send` {taskId, data ' +
      '{action:"accept"}} → completed; 50 connections. flows/s = completed flows per ' +
      'second.',
    order: 40,
    connections: 50,
    flowSteps: 2,
    prepare: async (ctx) => [
      {
        body: () => sendNew(ctx.skills.approval, 'Please approve this benchmark request.'),
        expect: '"state":"input-required"',
        capture: (body, flow) => {
          flow.taskId = taskIdOf(body);
        },
      },
      {
        // No task id (first step failed) → undefined → autocannon restarts the flow.
        body: (flow) => (flow.taskId ? sendDecision(flow.taskId, 'accept') : undefined),
        expect: '"state":"completed"',
      },
    ],
  }),
);
