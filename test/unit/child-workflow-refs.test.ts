// The loader's checks of core.forEach and core.subWorkflow: their config, the workflow each names
// (it must be loaded, in any file of any directory), and no workflow that could start itself
// again through them. Every refusal names the file, the node and the problem.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadWorkflows, validateWorkflow } from '../../src/engine/workflow/loader.js';
import { node } from '../support/call-workflows.js';

const workflow = (id: string, nodes: object[]) => ({
  id,
  name: id,
  version: '1',
  nodes,
  edges: [],
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});
const sub = (id: string, target: string) => workflow(id, [node('sub', 'core.subWorkflow', { workflowId: target })]);
const each = (id: string, target: string, extra: Record<string, unknown> = {}) =>
  workflow(id, [node('each', 'core.forEach', { items: '{{ inputs.items }}', workflowId: target, ...extra })]);
const leaf = (id: string) => workflow(id, [node('out', 'core.transform', { output: {} })]);

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A directory holding each workflow as `<id>.json`. */
async function dirOf(...defs: Array<{ id: string }>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'handoff-kids-'));
  dirs.push(dir);
  for (const def of defs) await writeFile(join(dir, `${def.id}.json`), JSON.stringify(def));
  return dir;
}

describe('child-run nodes in the loader', () => {
  it('loads a workflow naming one defined in a later file or another directory', async () => {
    const first = await dirOf(each('a-parent', 'z-child'), sub('b-parent', 'other'));
    const second = await dirOf(leaf('z-child'), leaf('other'));
    const registry = await loadWorkflows([first, second]);
    assert.deepEqual(registry.ids().sort(), ['a-parent', 'b-parent', 'other', 'z-child']);
  });

  it('refuses a node naming a workflow that is not loaded, naming file and node', async () => {
    const dir = await dirOf(leaf('kid'), each('parent', 'ghost'));
    await assert.rejects(loadWorkflows([dir]), {
      message: `${join(dir, 'parent.json')}: node "each": config.workflowId "ghost" is not a loaded workflow`,
    });
  });

  it('refuses a workflow that would start itself again, directly or through others', async () => {
    const self = await dirOf(sub('loop', 'loop'));
    await assert.rejects(loadWorkflows([self]), {
      message: `${join(self, 'loop.json')}: node "sub": workflow "loop" would start itself again: loop → loop`,
    });
    const ring = await dirOf(sub('a', 'b'), each('b', 'c'), sub('c', 'a'));
    await assert.rejects(loadWorkflows([ring]), {
      message: `${join(ring, 'a.json')}: node "sub": workflow "a" would start itself again: a → b → c → a`,
    });
  });

  it('loads a diamond (two paths to one child) that is no cycle', async () => {
    const dir = await dirOf(
      workflow('top', [
        node('left', 'core.subWorkflow', { workflowId: 'mid-1' }),
        node('right', 'core.forEach', { items: [1, 2], workflowId: 'mid-2' }),
      ]),
      sub('mid-1', 'bottom'),
      sub('mid-2', 'bottom'),
      leaf('bottom'),
    );
    assert.equal((await loadWorkflows([dir])).ids().length, 4);
  });

  it('refuses a bad config, naming node and field', () => {
    const refused = (def: object) => {
      try {
        validateWorkflow(def, 'x.json');
      } catch (err) {
        return (err as Error).message;
      }
      return assert.fail('loaded');
    };
    assert.equal(refused(each('p', 'kid', { concurrency: 0 })), 'x.json: node "each": config.concurrency must be >= 1');
    assert.equal(
      refused(each('p', 'kid', { concurrency: 65 })),
      'x.json: node "each": config.concurrency must be <= 64',
    );
    assert.match(refused(each('p', '{{ inputs.wf }}')), /^x\.json: node "each": config\.workflowId must match pattern/);
    assert.equal(
      refused(workflow('p', [node('each', 'core.forEach', { workflowId: 'kid' })])),
      'x.json: node "each": config must have required property \'items\'',
    );
    assert.equal(
      refused(workflow('p', [node('sub', 'core.subWorkflow', { workflowId: 'kid', items: [] })])),
      'x.json: node "sub": config must NOT have additional properties ("items")',
    );
  });
});
