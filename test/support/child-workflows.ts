// Workflows for the child-run tests (core.forEach, core.subWorkflow), written to a temp directory.
// Children: `kid-echo` (its artifact at once), `kid-maybe-fail` (core.fail when inputs.fail, else
// an artifact), `kid-gate-or-fail` (core.fail when inputs.fail, else an approval gate),
// `kid-delay` (a durable timer, then its artifact) and the built-in `approval` (a gate). Parents:
// `sub-echo`, `each-echo` (concurrency 3), `each-delay` (12 items are its demo, concurrency 3),
// `each-approval` (concurrency 2), `each-fail` / `each-fail-continue`, `each-nested` (children
// that each start a child of their own) and `deep-1` → `deep-2` → `deep-3` → `kid-echo`.
//
//   const dir = writeChildWorkflows();           // then startTestHost({ workflows: [dir] })
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { node } from './call-workflows.js';

const edge = (from: string, to: string, condition?: Record<string, unknown>) => ({
  id: `${from}-${to}`,
  sourceNodeId: from,
  targetNodeId: to,
  ...(condition ? { condition } : {}),
});

const workflow = (id: string, nodes: object[], edges: object[] = [], inputSchema?: object) => ({
  id,
  name: id,
  version: '1',
  ...(inputSchema ? { inputSchema } : {}),
  nodes,
  edges,
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});

const artifact = (id: string, output: unknown) => node(id, 'core.transform', { output }, { outputRole: 'artifact' });

/** A parent whose `each` node runs `child` over inputs.items, then `done` publishes the results. */
const eachOf = (id: string, child: string, extra: Record<string, unknown>, inputs: unknown) =>
  workflow(
    id,
    [
      node('each', 'core.forEach', { items: '{{ inputs.items }}', workflowId: child, inputs, ...extra }),
      artifact('done', { results: '{{ nodes.each.results }}' }),
    ],
    [edge('each', 'done')],
  );

/** A parent whose `sub` node runs `child` once, then `done` publishes what came back. */
const subOf = (id: string, child: string, inputs: unknown) =>
  workflow(
    id,
    [
      node('sub', 'core.subWorkflow', { workflowId: child, inputs }),
      artifact('done', {
        child: '{{ nodes.sub.runId }}',
        status: '{{ nodes.sub.status }}',
        got: '{{ nodes.sub.output }}',
      }),
    ],
    [edge('sub', 'done')],
  );

export const CHILD_WORKFLOWS = [
  workflow('kid-echo', [artifact('out', { value: '{{ inputs.value }}', index: '{{ inputs.index }}' })]),
  workflow(
    'kid-maybe-fail',
    [
      node('check', 'core.transform', { output: {} }),
      node('boom', 'core.fail', { code: 'kid_broke', message: 'asked to fail' }),
      artifact('out', { ok: true }),
    ],
    [edge('check', 'boom', { type: 'truthy', left: 'inputs.fail' }), edge('check', 'out')],
  ),
  workflow(
    'kid-gate-or-fail',
    [
      node('check', 'core.transform', { output: {} }),
      node('boom', 'core.fail', { code: 'kid_broke', message: 'asked to fail' }),
      node('review', 'core.approvalGate', { title: 'Review' }),
    ],
    [edge('check', 'boom', { type: 'truthy', left: 'inputs.fail' }), edge('check', 'review')],
  ),
  workflow(
    'kid-delay',
    [node('wait', 'core.delay', { ms: '{{ inputs.ms }}' }), artifact('out', { index: '{{ inputs.index }}' })],
    [edge('wait', 'out')],
  ),
  subOf('sub-echo', 'kid-echo', { value: '{{ inputs.value }}', index: 0 }),
  eachOf('each-echo', 'kid-echo', { concurrency: 3 }, { value: '{{ item }}', index: '{{ index }}' }),
  eachOf('each-delay', 'kid-delay', { concurrency: 3 }, { index: '{{ index }}', ms: '{{ inputs.ms }}' }),
  eachOf('each-approval', 'approval', { concurrency: 2 }, { prompt: '{{ item }}' }),
  eachOf('each-fail', 'kid-gate-or-fail', { concurrency: 2 }, { fail: '{{ item }}' }),
  eachOf('each-fail-continue', 'kid-maybe-fail', { concurrency: 2, continueOnError: true }, { fail: '{{ item }}' }),
  subOf('sub-approval', 'approval', { prompt: '{{ inputs.prompt }}' }),
  eachOf('each-nested', 'sub-approval', { concurrency: 2 }, { prompt: '{{ item }}' }),
  subOf('deep-1', 'deep-2', {}),
  subOf('deep-2', 'deep-3', {}),
  subOf('deep-3', 'kid-echo', { value: 'deep', index: 0 }),
];

/** Write the workflows above to a fresh temp directory; returns it. */
export function writeChildWorkflows(): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-children-'));
  for (const wf of CHILD_WORKFLOWS) writeFileSync(join(dir, `${wf.id}.json`), JSON.stringify(wf, null, 2));
  return dir;
}
