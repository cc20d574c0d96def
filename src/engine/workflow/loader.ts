// Loads workflow definitions from directories and refuses anything the engine could not run.
//
//   const registry = await loadWorkflows(['workflows', process.env.EXTRA_DIR]);
//   const def = registry.get('approval');
//   const errors = registry.validateInputs('steps', inputs);   // fills schema defaults in place
//
// Error contract: every problem is a WorkflowValidationError whose message names the file, the
// node or edge (when relevant) and the problem; all problems of one file are reported together.
import type { Dirent } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import definitionSchema from '../../../schemas/workflow-definition.schema.json' with { type: 'json' };
import { NODE_TYPES } from '../nodes/index.js';
import { duplicates } from '../nodes/types.js';
import type { EdgeCondition, PortValue, WorkflowDefinition, WorkflowNode } from './definition.js';
import { EvaluationError, checkExpressionSyntax, compileConditionRegex, findTemplateProblems } from './evaluate.js';
import { graphOf } from './graph.js';
import { childWorkflowProblems } from './child-refs.js';
import { secretProblems } from './secret-refs.js';

/** What loading consults besides the files. */
export interface LoadOptions {
  /** The secrets `{{ secrets.NAME }}` may name (the host's SecretStore); absent: none. */
  secrets?: { has(name: string): boolean };
}

export class WorkflowValidationError extends Error {
  override readonly name = 'WorkflowValidationError';
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(problems.map((p) => `${source}: ${p}`).join('\n'));
  }
}

// ajv-formats is CJS whose module.exports is the plugin and also carries `.default`; NodeNext
// types the default import as the module, so call `.default`, which exists at runtime too.
const addFormats = addFormatsModule.default;

// One instance for the host's own schemas: strict, so a typo in them fails loudly.
const hostAjv = new Ajv2020({
  allErrors: true,
  strict: true,
  strictRequired: false, // it refuses the standard `if/then: {required}` pattern
  allowUnionTypes: true,
  discriminator: true,
});
addFormats(hostAjv);
const validateDefinitionShape = hostAjv.compile(definitionSchema);
const configValidators = new Map<string, ValidateFunction>(
  [...NODE_TYPES.values()].map((t) => [t.typeId, hostAjv.compile(t.configSchema)]),
);

// Author-written schemas (inputSchema, question schemas) may use annotation keywords Ajv's strict
// mode refuses; `useDefaults` is what lets an inputSchema's defaults fill in missing inputs.
const userAjv = new Ajv2020({ allErrors: true, strict: false, useDefaults: true });
addFormats(userAjv);

const MAX_REPORTED = 20;

/**
 * Validates one parsed definition and returns it with every default filled in (a new object;
 * `def` is not changed); `source` (usually the file path) prefixes every message.
 */
export function validateWorkflow(def: unknown, source: string, opts: LoadOptions = {}): WorkflowDefinition {
  if (!validateDefinitionShape(def)) {
    throw new WorkflowValidationError(source, shapeProblems(def, validateDefinitionShape.errors ?? []));
  }
  const wf = withDefaults(def as WorkflowFile);
  const problems = semanticProblems(wf, (name) => opts.secrets?.has(name) ?? false);
  if (problems.length > 0) throw new WorkflowValidationError(source, problems.slice(0, MAX_REPORTED));
  return wf;
}

// ---------------------------------------------------------------------------------------------
// Defaults: a file says only what it means

type NodeFile = Pick<WorkflowNode, 'id' | 'typeId'> & Partial<WorkflowNode>;

/** A definition as a file may write it (the shape schema checked it): only `id` and `nodes` required. */
type WorkflowFile = Pick<WorkflowDefinition, 'id'> &
  Partial<Omit<WorkflowDefinition, 'id' | 'nodes'>> & { nodes: NodeFile[] };

/**
 * The definition the engine runs: what the file left out, filled in. Layout (`position`), ports
 * (`inputs`) and labels (`name`) mean nothing to a run, so a file need not write them; a name
 * defaults to the id, which is what progress and artifacts would show anyway.
 */
function withDefaults(file: WorkflowFile): WorkflowDefinition {
  return {
    ...file,
    name: file.name ?? file.id,
    version: file.version ?? '1',
    nodes: file.nodes.map((node) => ({
      ...node,
      name: node.name ?? node.id,
      position: node.position ?? { x: 0, y: 0 },
      config: node.config ?? {},
      inputs: node.inputs ?? {},
    })),
    edges: file.edges ?? [],
    triggers: file.triggers ?? [],
    variables: file.variables ?? [],
    metadata: file.metadata ?? {},
    settings: file.settings ?? {},
  };
}

// ---------------------------------------------------------------------------------------------
// Error formatting

function shapeProblems(def: unknown, errors: ErrorObject[]): string[] {
  const nodes = (def as { nodes?: unknown })?.nodes;
  const edges = (def as { edges?: unknown })?.edges;
  const out = reportable(errors).map((e) => {
    const m = /^\/(nodes|edges)\/(\d+)(.*)$/.exec(e.instancePath);
    if (!m) return formatAjvError(e, pointerToPath(e.instancePath) || 'definition');
    const list = m[1] === 'nodes' ? nodes : edges;
    const id = Array.isArray(list) ? (list[Number(m[2])] as { id?: unknown } | undefined)?.id : undefined;
    const who = typeof id === 'string' ? `${m[1] === 'nodes' ? 'node' : 'edge'} "${id}"` : `${m[1]}[${m[2]}]`;
    const rest = pointerToPath(m[3] ?? '');
    return `${who}: ${formatAjvError(e, rest || (m[1] === 'nodes' ? 'node' : 'edge'))}`;
  });
  return [...new Set(out)].slice(0, MAX_REPORTED);
}

/** `/config/questions/0/id` → `config.questions[0].id`. */
function pointerToPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
}

// Summary errors repeat what a more precise error beside them already says.
const SUMMARY_KEYWORDS = new Set(['if', 'propertyNames', 'discriminator']);

function reportable(errors: ErrorObject[] | null | undefined): ErrorObject[] {
  const precise = (errors ?? []).filter((e) => !SUMMARY_KEYWORDS.has(e.keyword));
  return precise.length > 0 ? precise : (errors ?? []);
}

function formatAjvError(e: ErrorObject, path: string): string {
  const p = e.params as Record<string, unknown>;
  let detail = '';
  if (e.keyword === 'additionalProperties') detail = ` ("${String(p.additionalProperty)}")`;
  if (e.keyword === 'enum') detail = `: ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  if (e.keyword === 'const') detail = `: ${JSON.stringify(p.allowedValue)}`;
  const subject = e.propertyName === undefined ? path : `${path} property name "${e.propertyName}"`;
  return `${subject} ${e.message ?? 'is invalid'}${detail}`;
}

function ajvErrorsAt(errors: ErrorObject[] | null | undefined, root: string): string[] {
  const out = reportable(errors).map((e) => formatAjvError(e, joinPath(root, pointerToPath(e.instancePath))));
  return [...new Set(out)];
}

function joinPath(root: string, rest: string): string {
  if (!rest) return root;
  return rest.startsWith('[') ? `${root}${rest}` : `${root}.${rest}`;
}

// ---------------------------------------------------------------------------------------------
// Semantic checks (what a schema cannot say)

function semanticProblems(wf: WorkflowDefinition, isSecret: (name: string) => boolean): string[] {
  const nodeIds = new Set<string>();
  const problems: string[] = [];
  for (const node of wf.nodes) {
    if (nodeIds.has(node.id)) problems.push(`node "${node.id}": duplicate node id`);
    nodeIds.add(node.id);
  }
  for (const dup of duplicates(wf.edges.map((e) => e.id))) problems.push(`edge "${dup}": duplicate edge id`);
  for (const dup of duplicates(wf.variables.map((v) => v.name)))
    problems.push(`variable "${dup}": duplicate variable name`);
  for (const node of wf.nodes) {
    problems.push(...nodeProblems(node, nodeIds, isSecret).map((p) => `node "${node.id}": ${p}`));
  }
  for (const edge of wf.edges) {
    problems.push(
      ...edgeProblems(edge.sourceNodeId, edge.targetNodeId, edge.condition, nodeIds).map(
        (p) => `edge "${edge.id}": ${p}`,
      ),
    );
  }
  const start = wf.settings.startNodeId;
  if (start !== undefined && !nodeIds.has(start as string)) {
    problems.push(`settings.startNodeId "${String(start)}" is not a node`);
  }
  if (wf.inputSchema) problems.push(...schemaCompileProblems(wf.inputSchema, 'inputSchema'));
  // The parallel graph is only worth checking once every edge names a node.
  if (problems.length === 0) problems.push(...graphOf(wf).problems);
  return problems;
}

function nodeProblems(node: WorkflowNode, nodeIds: Set<string>, isSecret: (name: string) => boolean): string[] {
  const type = NODE_TYPES.get(node.typeId);
  const validate = configValidators.get(node.typeId);
  if (!type || !validate) return [`unknown typeId "${node.typeId}" (known: ${[...NODE_TYPES.keys()].join(', ')})`];
  if (!validate(node.config)) return ajvErrorsAt(validate.errors, 'config');
  return [
    ...findTemplateProblems(node.config, 'config'),
    ...secretProblems(node.config, 'config', type.secretPaths ?? [], isSecret),
    ...Object.entries(node.inputs).flatMap(([name, port]) => portProblems(name, port, nodeIds)),
    ...(type.checkConfig?.(node.config, {
      nodeId: node.id,
      nodeIds,
      inputs: node.inputs,
      schemaProblems: schemaCompileProblems,
    }) ?? []),
  ];
}

function portProblems(name: string, port: PortValue, nodeIds: Set<string>): string[] {
  if (port.type === 'expression') {
    const msg = checkExpressionSyntax(port.expression);
    return msg ? [`inputs.${name}: invalid expression "${port.expression}": ${msg}`] : [];
  }
  if (port.type === 'connection' && !nodeIds.has(port.nodeId)) {
    return [`inputs.${name}: connection to unknown node "${port.nodeId}"`];
  }
  return [];
}

function edgeProblems(source: string, target: string, cond: EdgeCondition | undefined, nodeIds: Set<string>): string[] {
  const problems: string[] = [];
  if (!nodeIds.has(source)) problems.push(`sourceNodeId "${source}" is not a node`);
  if (!nodeIds.has(target)) problems.push(`targetNodeId "${target}" is not a node`);
  if (!cond) return problems;
  const expr = cond.type === 'expression' ? cond.expression : cond.left;
  const field = cond.type === 'expression' ? 'expression' : 'left';
  const msg = expr === undefined ? undefined : checkExpressionSyntax(expr);
  if (msg) problems.push(`condition.${field}: invalid expression "${expr}": ${msg}`);
  if (cond.type === 'regex') {
    try {
      compileConditionRegex(cond.right);
    } catch (err) {
      problems.push(`condition.right: ${err instanceof EvaluationError ? err.message : String(err)}`);
    }
  }
  return problems;
}

function schemaCompileProblems(schema: Record<string, unknown>, path: string): string[] {
  try {
    userAjv.compile(schema);
    return [];
  } catch (err) {
    return [`${path} does not compile: ${err instanceof Error ? err.message : String(err)}`];
  }
}

// ---------------------------------------------------------------------------------------------
// Registry

/** The loaded workflows by id. Definitions are treated as immutable once registered. */
export class WorkflowRegistry {
  private readonly defs = new Map<string, WorkflowDefinition>();
  private readonly inputValidators = new Map<string, ValidateFunction>();

  /** `defs` must already be valid (see validateWorkflow); ids must be unique. */
  constructor(defs: Iterable<WorkflowDefinition> = []) {
    for (const def of defs) this.add(def);
  }

  add(def: WorkflowDefinition): void {
    if (this.defs.has(def.id)) throw new Error(`workflow "${def.id}" is already registered`);
    this.defs.set(def.id, def);
    // userAjv caches by schema object, so this is cheap after validateWorkflow compiled it.
    if (def.inputSchema) this.inputValidators.set(def.id, userAjv.compile(def.inputSchema));
  }

  get(id: string): WorkflowDefinition | undefined {
    return this.defs.get(id);
  }

  list(): WorkflowDefinition[] {
    return [...this.defs.values()];
  }

  ids(): string[] {
    return [...this.defs.keys()];
  }

  /** `settings.startNodeId` when set, else the first node (the loader guarantees both exist). */
  startNode(def: WorkflowDefinition): WorkflowNode {
    const startId = def.settings.startNodeId;
    const node = typeof startId === 'string' ? def.nodes.find((n) => n.id === startId) : def.nodes[0];
    if (!node) throw new Error(`workflow "${def.id}" has no start node`);
    return node;
  }

  /**
   * Checks run inputs against the workflow's inputSchema and fills its defaults into `inputs`
   * in place (pass a copy to keep the original). Returns error strings; empty means valid.
   */
  validateInputs(workflowId: string, inputs: unknown): string[] {
    if (!this.defs.has(workflowId)) return [`unknown workflow "${workflowId}"`];
    if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs)) return ['inputs must be an object'];
    const validate = this.inputValidators.get(workflowId);
    if (!validate || validate(inputs)) return [];
    return ajvErrorsAt(validate.errors, 'inputs');
  }
}

/** A workflow file the host did not load, and why (`handoff serve` starts without it). */
export interface RefusedWorkflow {
  file: string;
  problems: string[];
}

/** What the host shows of its workflow files besides the workflows: the refused, the seeded fixtures. */
export interface WorkflowCatalog {
  refused: RefusedWorkflow[];
  /** Ids of the canonical OpenWOP conformance fixtures seeded (discovery `fixtures`). */
  fixtures: string[];
}

/** What a non-strict load gives: the workflows that load, and the files it refused. */
export interface LoadResult {
  registry: WorkflowRegistry;
  refused: RefusedWorkflow[];
  /** The directory each loaded workflow came from, by id. */
  dirOf: ReadonlyMap<string, string>;
}

/**
 * Reads every `*.json` file (sorted by name) of each directory. A workflow id defined in two files
 * is an error naming both; a missing directory is an error too (a typo should not hide workflows).
 * Strict: the first refused file throws (`handoff validate`, `serve --strict-workflows`).
 */
export async function loadWorkflows(dirs: string[], opts: LoadOptions = {}): Promise<WorkflowRegistry> {
  const result = await loadWorkflowDirs(dirs, opts);
  const first = result.refused[0];
  if (first) throw new WorkflowValidationError(first.file, first.problems);
  return result.registry;
}

/**
 * Like loadWorkflows, but a file that does not load is refused, not fatal: every valid workflow
 * loads, each refused file is reported with its problems. A workflow whose child workflow was
 * refused is refused in turn (it could never run).
 */
export async function loadWorkflowDirs(dirs: string[], opts: LoadOptions = {}): Promise<LoadResult> {
  const refused: RefusedWorkflow[] = [];
  const loaded = new Map<string, { def: WorkflowDefinition; file: string; dir: string }>();
  for (const dir of dirs) {
    for (const file of await jsonFiles(dir)) {
      try {
        const def = validateWorkflow(await readJson(file), file, opts);
        const previous = loaded.get(def.id);
        if (previous) {
          throw new WorkflowValidationError(file, [`workflow id "${def.id}" is already defined in ${previous.file}`]);
        }
        loaded.set(def.id, { def, file, dir });
      } catch (err) {
        if (!(err instanceof WorkflowValidationError)) throw err;
        refused.push({ file, problems: err.problems });
      }
    }
  }
  // What spans workflows is checked once all are loaded: a node may name one from a later file.
  // Refusing one may break another that names it, so check again until nothing more is refused.
  for (;;) {
    const problems = childWorkflowProblems([...loaded.values()].map((l) => l.def));
    if (problems.size === 0) break;
    for (const [id, list] of problems) {
      const entry = loaded.get(id);
      refused.push({ file: entry?.file ?? id, problems: list.slice(0, MAX_REPORTED) });
      loaded.delete(id);
    }
  }
  const registry = new WorkflowRegistry([...loaded.values()].map((l) => l.def));
  const dirOf = new Map([...loaded].map(([id, l]) => [id, l.dir]));
  return { registry, refused, dirOf };
}

/** The `*.json` files of `dir`, sorted by name (what the host loads, what `handoff validate` checks). */
export async function jsonFiles(dir: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw new WorkflowValidationError(dir, [`cannot read workflow directory: ${(err as Error).message}`]);
  }
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.json'))
    .map((e) => join(dir, e.name))
    .sort();
}

/** A workflow file's JSON; text that does not parse is a WorkflowValidationError naming the file. */
export async function readJson(file: string): Promise<unknown> {
  const text = await readFile(file, 'utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new WorkflowValidationError(file, [`invalid JSON: ${withLineAndColumn((err as Error).message, text)}`]);
  }
}

/** JSON.parse says "at position 69"; an editor goes to "line 3 column 12". */
function withLineAndColumn(message: string, text: string): string {
  const at = /at position (\d+)/.exec(message);
  if (!at) return message;
  const before = text.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return message.replace(at[0], `at line ${line} column ${column}`);
}
