// A workflow file says only what it means (issue 35 §5): the loader fills in the rest, and the
// JSON Schema editors use (schemas/workflow.schema.json, named by every shipped workflow's
// `$schema`) accepts that minimal form, checks each node's config against its type, and is the
// one `handoff schema` generates from the registered node types.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { workflowFileSchemaText } from '../../src/engine/workflow/file-schema.js';
import { readJson, validateWorkflow } from '../../src/engine/workflow/loader.js';
import { BUILTIN_DIR, REPO_ROOT } from '../support/host.js';

const SCHEMA_FILE = 'schemas/workflow.schema.json';
const schemaText = readFileSync(join(REPO_ROOT, SCHEMA_FILE), 'utf8');

// An editor's reading of the file: Ajv as the host configures it (strict, so a schema mistake
// shows), with the formats.
const ajv = new Ajv2020({
  allErrors: true,
  strict: true,
  strictRequired: false,
  allowUnionTypes: true,
  discriminator: true,
});
addFormatsModule.default(ajv);
const checkFile = ajv.compile(JSON.parse(schemaText));
const problems = (def: unknown): string[] =>
  checkFile(def)
    ? []
    : (checkFile.errors ?? []).filter((e) => e.keyword !== 'if').map((e) => `${e.instancePath} ${e.message}`);

/** Only what the workflow means: ids, types, configs and edges. */
const MINIMAL = {
  id: 'hello',
  nodes: [
    { id: 'greet', typeId: 'core.transform', config: { output: { text: 'Hello, {{ inputs.name }}' } } },
    { id: 'review', typeId: 'core.approvalGate', config: { title: 'Send the greeting?' } },
  ],
  edges: [{ id: 'e1', sourceNodeId: 'greet', targetNodeId: 'review' }],
};

describe('the minimal workflow file', () => {
  it('loads, every left-out field filled with its default', () => {
    const def = validateWorkflow(structuredClone(MINIMAL), 'hello.json');
    assert.equal(def.name, 'hello');
    assert.equal(def.version, '1');
    assert.deepEqual(
      [def.triggers, def.variables, def.metadata, def.settings],
      [[], [], {}, {}],
      'triggers, variables, metadata, settings',
    );
    assert.deepEqual(
      def.nodes.map((n) => [n.id, n.name, n.position, n.inputs]),
      [
        ['greet', 'greet', { x: 0, y: 0 }, {}],
        ['review', 'review', { x: 0, y: 0 }, {}],
      ],
    );
  });

  it('needs no edges and no config where none is meant', () => {
    const def = validateWorkflow({ id: 'one', nodes: [{ id: 'noop', typeId: 'core.transform' }] }, 'one.json');
    assert.deepEqual([def.edges, def.nodes[0]?.config], [[], {}]);
  });

  it('leaves the parsed file as it was', () => {
    const file = structuredClone(MINIMAL);
    validateWorkflow(file, 'hello.json');
    assert.deepEqual(file, MINIMAL);
  });

  it('still refuses what it needs: a node config its type refuses, an unknown type, a missing id', () => {
    const bad = { id: 'w', nodes: [{ id: 'wait', typeId: 'core.delay' }] };
    assert.throws(
      () => validateWorkflow(bad, 'w.json'),
      /w\.json: node "wait": config\.ms or inputs\.delayMs is required/,
    );
    const unknown = { id: 'w', nodes: [{ id: 'x', typeId: 'core.nope' }] };
    assert.throws(() => validateWorkflow(unknown, 'w.json'), /node "x": unknown typeId "core\.nope"/);
    assert.throws(
      () => validateWorkflow({ nodes: [] }, 'w.json'),
      /w\.json: definition must have required property 'id'/,
    );
  });
});

describe(SCHEMA_FILE, () => {
  it(
    'is what `handoff schema` generates from the node types (else: npm run handoff -- schema > ' + SCHEMA_FILE + ')',
    () => {
      assert.equal(schemaText, workflowFileSchemaText());
    },
  );

  it('accepts the minimal form and the complete one', () => {
    assert.deepEqual(problems(MINIMAL), []);
    assert.deepEqual(problems(validateWorkflow(structuredClone(MINIMAL), 'hello.json')), []);
  });

  it("checks each node's config against its type, as the host does", () => {
    const wrong = { id: 'w', nodes: [{ id: 'wait', typeId: 'core.delay', config: { ms: -1, extra: 1 } }] };
    assert.deepEqual(problems(wrong).sort(), [
      '/nodes/0/config must NOT have additional properties',
      '/nodes/0/config/ms must be >= 0',
    ]);
    assert.notDeepEqual(problems({ id: 'w', nodes: [{ id: 'x', typeId: 'core.nope' }] }), []);
  });

  it('is the `$schema` of every shipped workflow, and every one of them passes it', () => {
    const files = readdirSync(BUILTIN_DIR).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 10, 'the demos are there');
    for (const file of files) {
      const def = JSON.parse(readFileSync(join(BUILTIN_DIR, file), 'utf8'));
      assert.equal(def.$schema, '../schemas/workflow.schema.json', file);
      assert.deepEqual(problems(def), [], file);
    }
  });
});

describe('a file that is not JSON', () => {
  it('is refused at the line and column an editor goes to', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-json-'));
    try {
      const file = join(dir, 'hello.json');
      writeFileSync(file, '{\n  "id": "x",\n  "nodes": [\n    { "id": "a" "typeId": "core.transform" }\n  ]\n}\n');
      await assert.rejects(readJson(file), {
        name: 'WorkflowValidationError',
        message: `${file}: invalid JSON: Expected ',' or '}' after property value in JSON at line 4 column 17`,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
