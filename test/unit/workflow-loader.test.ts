import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EvalScope } from '../../src/engine/nodes/types.js';
import { renderTemplate } from '../../src/engine/workflow/evaluate.js';
import { DEMOS } from '../support/host.js';
import {
  type WorkflowRegistry,
  WorkflowValidationError,
  loadWorkflows,
  validateWorkflow,
} from '../../src/engine/workflow/loader.js';

// Works from the source tree (tsx) and from dist/ (compiled): walk up to the repo root.
const ROOT = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url));
const DEMO_DIR = join(ROOT, 'workflows');

function minimal(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'tiny',
    name: 'Tiny',
    version: '1.0.0',
    nodes: [node('a', 'core.transform', { output: { x: '{{ inputs.x }}' } })],
    edges: [],
    triggers: [{ id: 'manual', type: 'manual', enabled: true }],
    variables: [],
    metadata: {},
    settings: {},
    ...over,
  };
}

function node(id: string, typeId: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { id, typeId, name: id, position: { x: 0, y: 0 }, config, inputs: {}, ...extra };
}

function refusal(def: unknown, source = 'workflows/x.json'): string {
  try {
    validateWorkflow(def, source);
  } catch (err) {
    assert.ok(err instanceof WorkflowValidationError, `expected WorkflowValidationError, got ${String(err)}`);
    assert.equal(err.source, source);
    return err.message;
  }
  assert.fail('definition was accepted');
}

describe('demo workflows', () => {
  let registry: WorkflowRegistry;
  before(async () => {
    registry = await loadWorkflows([DEMO_DIR]);
  });

  it('all load', () => {
    // One workflow per file, each file's own id; the first demos are always there.
    assert.deepEqual(
      registry.ids().sort(),
      DEMOS.map((d) => d.id),
    );
    for (const id of [
      'approval',
      'clarify',
      'delegate',
      'echo',
      'fail',
      'launch-note',
      'steps',
      'two-reviewers',
      'survey',
    ]) {
      assert.ok(registry.get(id), id);
    }
    for (const def of registry.list()) {
      assert.equal(def.version, '1.0.0');
      assert.ok(def.description, `${def.id} has a description`);
      assert.deepEqual(def.triggers, [{ id: 'manual', type: 'manual', enabled: true }]);
    }
  });

  it('startNode is settings.startNodeId or the first node', () => {
    const steps = registry.get('steps')!;
    assert.equal(registry.startNode(steps).id, 'init');
    const other = { ...steps, settings: { startNodeId: 'done' } };
    assert.equal(registry.startNode(other).id, 'done');
  });

  it('validateInputs fills defaults and reports bad values', () => {
    const inputs: Record<string, unknown> = {};
    assert.deepEqual(registry.validateInputs('steps', inputs), []);
    assert.deepEqual(inputs, { steps: 3, stepMs: 100 });
    const errors = registry.validateInputs('steps', { steps: 10001, stepMs: 'soon' });
    assert.ok(errors.includes('inputs.steps must be <= 10000'), errors.join('; '));
    assert.ok(errors.includes('inputs.stepMs must be integer'), errors.join('; '));
    const echo: Record<string, unknown> = {};
    assert.deepEqual(registry.validateInputs('echo', echo), []);
    assert.deepEqual(echo, { prompt: '' });
  });

  it('validateInputs without inputSchema accepts any object', () => {
    assert.deepEqual(registry.validateInputs('clarify', { anything: [1] }), []);
    assert.deepEqual(registry.validateInputs('clarify', 'text'), ['inputs must be an object']);
    assert.deepEqual(registry.validateInputs('nope', {}), ['unknown workflow "nope"']);
  });

  it('demo templates render sensibly', async () => {
    const scope: EvalScope = { inputs: {}, vars: {}, nodes: {}, carry: {}, run: { runId: 'r', workflowId: 'w' } };
    const fail = registry.get('fail')!.nodes[0]!.config;
    assert.deepEqual(await renderTemplate(fail, scope), { code: 'demo_failure', message: 'Failed on purpose' });
    const withReason = { ...scope, inputs: { code: 'x_y', reason: 'testing' } };
    assert.deepEqual(await renderTemplate(fail, withReason), { code: 'x_y', message: 'Failed on purpose: testing' });
    const count = registry.get('steps')!.nodes.find((n) => n.id === 'count')!.config;
    assert.deepEqual(await renderTemplate(count, { ...scope, vars: { i: 1 } }), { set: { i: 2 }, output: { step: 2 } });
  });

  it('the published schema has the expected $id', async () => {
    const schema = JSON.parse(await readFile(join(ROOT, 'schemas/workflow-definition.schema.json'), 'utf8'));
    assert.equal(schema.$id, 'https://handoff.dev/schemas/workflow-definition.schema.json');
  });
});

describe('validateWorkflow refuses', () => {
  it('a minimal valid definition is accepted', () => {
    assert.equal(validateWorkflow(minimal(), 'x.json').id, 'tiny');
  });

  it('schema violations, naming the node', () => {
    assert.match(refusal(minimal({ id: 'Bad Id' })), /^workflows\/x\.json: id must match pattern/);
    assert.match(refusal(minimal({ nodes: [] })), /nodes must NOT have fewer than 1 items/);
    const extra = minimal({ nodes: [{ ...node('a', 'core.transform', {}), colour: 'red' }] });
    assert.match(refusal(extra), /node "a": node must NOT have additional properties \("colour"\)/);
    const port = minimal({ nodes: [node('a', 'core.transform', {}, { inputs: { p: { type: 'static' } } })] });
    assert.match(refusal(port), /node "a": inputs\.p must have required property 'value'/);
    const cond = minimal({
      edges: [{ id: 'e', sourceNodeId: 'a', targetNodeId: 'a', condition: { type: 'bogus', left: 'x' } }],
    });
    assert.match(refusal(cond), /edge "e": condition\.type must be equal to one of the allowed values/);
  });

  it('an unknown typeId', () => {
    const msg = refusal(minimal({ nodes: [node('a', 'core.teleport', {})] }));
    assert.match(msg, /^workflows\/x\.json: node "a": unknown typeId "core\.teleport" \(known: .*core\.approvalGate/);
  });

  it('a bad node config', () => {
    const gate = node('gate', 'core.approvalGate', { title: 'T', requiredApprovals: 0 });
    assert.equal(
      refusal(minimal({ nodes: [gate] })),
      'workflows/x.json: node "gate": config.requiredApprovals must be >= 1',
    );
    const noTitle = node('gate', 'core.approvalGate', { actions: ['accept', 'approve'] });
    const msg = refusal(minimal({ nodes: [noTitle] }));
    assert.match(msg, /node "gate": config must have required property 'title'/);
    assert.match(msg, /node "gate": config\.actions\[1\] must be equal to one of the allowed values/);
    const delay = node('d', 'core.delay', { ms: -5 });
    assert.match(refusal(minimal({ nodes: [delay] })), /node "d": config\.ms must be >= 0/);
    const transform = node('t', 'core.transform', { outptu: 1 });
    assert.match(
      refusal(minimal({ nodes: [transform] })),
      /node "t": config must NOT have additional properties \("outptu"\)/,
    );
  });

  it('a dangling edge', () => {
    const msg = refusal(minimal({ edges: [{ id: 'e1', sourceNodeId: 'a', targetNodeId: 'ghost' }] }));
    assert.equal(msg, 'workflows/x.json: edge "e1": targetNodeId "ghost" is not a node');
  });

  it('duplicate node ids', () => {
    const msg = refusal(
      minimal({ nodes: [node('a', 'core.transform', {}), node('a', 'core.fail', { code: 'x', message: 'y' })] }),
    );
    assert.match(msg, /node "a": duplicate node id/);
  });

  it('bad expression syntax in templates, conditions and ports', () => {
    const tpl = refusal(minimal({ nodes: [node('a', 'core.transform', { output: { x: 'n={{ inputs.( }}' } })] }));
    assert.match(tpl, /node "a": config\.output\.x: invalid expression "\{\{ inputs\.\( \}\}"/);
    const edge = refusal(
      minimal({
        nodes: [node('a', 'core.transform', {}), node('b', 'core.transform', {})],
        edges: [
          { id: 'e', sourceNodeId: 'a', targetNodeId: 'b', condition: { type: 'expression', expression: 'vars.i <' } },
        ],
      }),
    );
    assert.match(edge, /edge "e": condition\.expression: invalid expression "vars\.i <"/);
    const regex = refusal(
      minimal({
        edges: [
          {
            id: 'e',
            sourceNodeId: 'a',
            targetNodeId: 'a',
            condition: { type: 'regex', left: 'inputs.x', right: '([' },
          },
        ],
      }),
    );
    assert.match(regex, /edge "e": condition\.right: invalid regex/);
    const port = refusal(
      minimal({
        nodes: [node('a', 'core.transform', {}, { inputs: { p: { type: 'expression', expression: '1 +' } } })],
      }),
    );
    assert.match(port, /node "a": inputs\.p: invalid expression "1 \+"/);
  });

  it('gate references and question ids', () => {
    const gate = node('gate', 'core.approvalGate', { title: 'T', artifactFrom: 'ghost' });
    assert.match(refusal(minimal({ nodes: [gate] })), /node "gate": config\.artifactFrom "ghost" is not a node/);
    const ask = node('ask', 'core.clarificationGate', {
      questions: [
        { id: 'q', question: 'One?' },
        { id: 'q', question: 'Two?', schema: { type: 'nonsense' } },
      ],
    });
    const msg = refusal(minimal({ nodes: [ask] }));
    assert.match(msg, /node "ask": config\.questions: duplicate question id "q"/);
    assert.match(msg, /node "ask": config\.questions\[1\]\.schema does not compile/);
  });

  it('a bad inputSchema or startNodeId', () => {
    assert.match(refusal(minimal({ inputSchema: { type: 'strin' } })), /inputSchema does not compile/);
    assert.match(
      refusal(minimal({ settings: { startNodeId: 'ghost' } })),
      /settings\.startNodeId "ghost" is not a node/,
    );
  });

  it('settings.a2aProgress that is not a boolean', () => {
    assert.match(refusal(minimal({ settings: { a2aProgress: 'no' } })), /settings\.a2aProgress must be boolean/);
    assert.equal(validateWorkflow(minimal({ settings: { a2aProgress: false } }), 'x.json').settings.a2aProgress, false);
  });
});

describe('loadWorkflows', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'handoff-wf-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function writeCase(name: string, files: Record<string, string>): Promise<string> {
    const sub = join(dir, name);
    await mkdir(sub);
    for (const [file, text] of Object.entries(files)) await writeFile(join(sub, file), text);
    return sub;
  }

  it('refuses bad JSON, naming the file', async () => {
    const sub = await writeCase('badjson', { 'broken.json': '{ "id": ' });
    await assert.rejects(loadWorkflows([sub]), (err: unknown) => {
      assert.ok(err instanceof WorkflowValidationError);
      assert.match(err.message, /broken\.json: invalid JSON/);
      return true;
    });
  });

  it('refuses a bad file, naming file and node', async () => {
    const bad = minimal({ nodes: [node('gate', 'core.approvalGate', { title: 'T', requiredApprovals: 0 })] });
    const sub = await writeCase('badcfg', { 'gate.json': JSON.stringify(bad) });
    await assert.rejects(loadWorkflows([sub]), {
      message: `${join(sub, 'gate.json')}: node "gate": config.requiredApprovals must be >= 1`,
    });
  });

  it('refuses a duplicate workflow id across files, naming both', async () => {
    const a = await writeCase('dupa', { 'one.json': JSON.stringify(minimal()) });
    const b = await writeCase('dupb', { 'two.json': JSON.stringify(minimal()) });
    await assert.rejects(loadWorkflows([a, b]), (err: unknown) => {
      assert.ok(err instanceof WorkflowValidationError);
      assert.match(err.message, /dupb\/two\.json: workflow id "tiny" is already defined in .*dupa\/one\.json/);
      return true;
    });
  });

  it('combines directories, ignores non-JSON files, refuses a missing directory', async () => {
    const sub = await writeCase('extra', { 'tiny.json': JSON.stringify(minimal()), 'README.md': '# not a workflow' });
    const registry = await loadWorkflows([DEMO_DIR, sub]);
    assert.ok(registry.get('tiny'));
    const demos = (await loadWorkflows([DEMO_DIR])).ids().length;
    assert.equal(registry.ids().length, demos + 1, 'the demo workflows and tiny');
    await assert.rejects(loadWorkflows([join(dir, 'absent')]), /cannot read workflow directory/);
  });
});
