// The published RFC 0100 schemas, loaded at run time from the package's schemas/ directory (found
// by walking up from this compiled file to the directory holding package.json) and compiled with
// Ajv 2020 + formats. The suite validates the host against these copies, never against code.
//
//   const s = loadSchemas();
//   s.taskState(record) || s.taskState.errors;
//   s.pushConfig({ url: 'https://caller.example.com/push' });
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CJS; under NodeNext its default import is the module, the plugin is `.default`.
const addFormats = addFormatsModule.default;

export const TASK_STATE_SCHEMA = 'a2a-task-state.schema.json';
export const A2A_BLOCK_SCHEMA = 'capabilities-a2a.schema.json';

export type JsonSchema = Record<string, unknown>;

export interface Schemas {
  /** Where the files were read from. */
  dir: string;
  taskStateSchema: JsonSchema;
  a2aBlockSchema: JsonSchema;
  taskState: ValidateFunction;
  a2aBlock: ValidateFunction;
  /** `$defs.PushConfig` of the task-state schema, referenced through the schema's `$id`. */
  pushConfig: ValidateFunction;
}

/** The nearest directory above this file that holds package.json and a schemas/ directory. */
export function schemasDir(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (let i = 0; i < 12; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'schemas', TASK_STATE_SCHEMA)))
      return join(dir, 'schemas');
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error(`no package.json with a schemas/${TASK_STATE_SCHEMA} above ${from}`);
}

export function loadSchemas(dir: string = schemasDir()): Schemas {
  const read = (name: string): JsonSchema => JSON.parse(readFileSync(join(dir, name), 'utf8')) as JsonSchema;
  const taskStateSchema = read(TASK_STATE_SCHEMA);
  const a2aBlockSchema = read(A2A_BLOCK_SCHEMA);
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(taskStateSchema);
  const taskState = ajv.compile(taskStateSchema);
  const a2aBlock = ajv.compile(a2aBlockSchema);
  const id = String(taskStateSchema.$id ?? '');
  const pushConfig = ajv.getSchema(`${id}#/$defs/PushConfig`);
  if (!id || !pushConfig) throw new Error(`${TASK_STATE_SCHEMA} has no $id-addressable $defs/PushConfig`);
  return { dir, taskStateSchema, a2aBlockSchema, taskState, a2aBlock, pushConfig };
}

/** One Ajv error as "field: message" with the field as a dotted path under `root`. */
export function errorField(e: ErrorObject, root: string): string {
  const segs = e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = e.params as { missingProperty?: string; additionalProperty?: string };
  if (e.keyword === 'required' && params.missingProperty) segs.push(params.missingProperty);
  if (e.keyword === 'additionalProperties' && params.additionalProperty) segs.push(params.additionalProperty);
  return segs.reduce((acc, s) => (/^\d+$/.test(s) ? `${acc}[${s}]` : acc ? `${acc}.${s}` : s), root);
}

export function errorText(e: ErrorObject): string {
  const params = e.params as { allowedValues?: unknown[]; additionalProperty?: string };
  if (e.keyword === 'enum' && params.allowedValues)
    return `must be one of ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  if (e.keyword === 'additionalProperties') return 'is not allowed (closed object)';
  if (e.keyword === 'required') return 'is required';
  return e.message ?? 'is invalid';
}

/** The offending value of a schema error: the extra property's value for additionalProperties,
 * undefined for a missing property, else the value at the error's instance path. */
export function errorValue(root: unknown, e: ErrorObject): unknown {
  let cur: unknown = root;
  for (const seg of e.instancePath.split('/').slice(1)) {
    const key = seg.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) cur = cur[Number(key)];
    else if (typeof cur === 'object' && cur !== null) cur = (cur as Record<string, unknown>)[key];
    else return undefined;
  }
  const p = e.params as { additionalProperty?: string; missingProperty?: string };
  if (e.keyword === 'required') return undefined;
  if (e.keyword === 'additionalProperties' && p.additionalProperty && typeof cur === 'object' && cur !== null) {
    return (cur as Record<string, unknown>)[p.additionalProperty];
  }
  return cur;
}

/** Evidence fields for a failed validation: the first error's field, rule and value, all errors in a note. */
export function schemaEvidence(
  errors: ErrorObject[] | null | undefined,
  value: unknown,
  root: string,
): { field: string; expected: string; actual: unknown; note?: string } {
  const list = errors ?? [];
  const first = list[0];
  if (!first) return { field: root, expected: 'valid', actual: value };
  const out: { field: string; expected: string; actual: unknown; note?: string } = {
    field: errorField(first, root),
    expected: errorText(first),
    actual: errorValue(value, first),
  };
  if (list.length > 1) out.note = `all errors: ${list.map((e) => `${errorField(e, root)} ${errorText(e)}`).join('; ')}`;
  return out;
}
