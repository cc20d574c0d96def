// `send`, `get` and `approval` over every A2A binding (0.3 JSON-RPC, 1.0 JSON-RPC, 1.0 REST) on
// one server, beside the SDK servers of both versions (lib/protocol-throughput.ts). Targets that
// serve A2A 1.0: `handoff` (and `handoff-before`) and the reference `sdk-v1`.
import type { FlowContext } from '../lib/load.js';
import { callOnce, protocolScenario } from '../lib/protocol-throughput.js';
import { registerScenario } from '../lib/registry.js';

const BINDINGS = '0.3 JSON-RPC, 1.0 JSON-RPC (`SendMessage`/`GetTask`, `A2A-Version: 1.0`) and 1.0 REST';

registerScenario(
  protocolScenario({
    name: 'send-v1',
    description: `\`send\` over ${BINDINGS} (\`POST …/message:send\`): blocking echo → completed Task, fresh messageId each, 50 connections.`,
    order: 95,
    connections: 50,
    prepare: async (p, server, skills) => [
      {
        request: () => p.sendNew(server, skills.echo),
        check: (body) => body.includes(p.stateText('completed')),
        completes: () => true,
      },
    ],
  }),
);

registerScenario(
  protocolScenario({
    name: 'get-v1',
    description: `\`get\` over ${BINDINGS} (\`GET …/tasks/{id}?historyLength=10\`): one completed echo task read with historyLength 10, 50 connections.`,
    order: 96,
    connections: 50,
    prepare: async (p, server, skills) => {
      const id = p.taskIdOf(await callOnce(server, p.sendNew(server, skills.echo)));
      if (!id) throw new Error(`${p.label}: could not create the task to read`);
      // The request never changes, so build it once instead of per request.
      const request = p.getTask(server, id, 10);
      return [{ request: () => request, check: (body) => body.includes(`"id":"${id}"`), completes: () => true }];
    },
  }),
);

registerScenario(
  protocolScenario({
    name: 'approval-v1',
    description: `\`approval\` over ${BINDINGS}: a send → input-required, then a reply {taskId, data {action:"accept"}} → completed; 50 connections.`,
    order: 97,
    connections: 50,
    flowSteps: 2,
    prepare: async (p, server, skills) => [
      {
        request: () => p.sendNew(server, skills.approval, 'Please approve this benchmark request.'),
        check: (body) => body.includes(p.stateText('input-required')),
        capture: (body, flow: FlowContext) => {
          flow.taskId = p.taskIdOf(body);
        },
      },
      {
        // No task id (first step failed) → undefined → autocannon restarts the flow.
        request: (flow) => (flow.taskId ? p.sendDecision(server, flow.taskId, 'accept') : undefined),
        check: (body) => body.includes(p.stateText('completed')),
        completes: () => true,
      },
    ],
  }),
);
