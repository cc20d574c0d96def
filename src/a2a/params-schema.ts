// Request validation for every A2A version and binding: JSON Schemas compiled once with Ajv 2020,
// and failures reported as -32602 naming the first offending field.
//
//   const check = compileParams(schema);
//   const bad = check(params, 'params');   // "params.message.messageId: must be a non-empty string"
//
// `hint` is an annotation keyword (no validation of its own): the human sentence reported for a
// failure at that schema, so a message reads the same whether the field is missing or mistyped.
// The error's `data.errors` lists up to five `{path, message}` (the 1.0 forms turn them into
// google.rpc.BadRequest field violations).
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { AnySchemaObject, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { type A2AError, invalidParams } from './errors.js';

// ajv-formats is CJS; under NodeNext its default import is the module, the plugin is `.default`.
const addFormats = addFormatsModule.default;

export const nonEmpty = { type: 'string', minLength: 1, hint: 'must be a non-empty string' } as const;
export const str = { type: 'string', hint: 'must be a string' } as const;
export const strArray = { type: 'array', items: str, hint: 'must be an array of strings' } as const;
export const obj = { type: 'object', hint: 'must be an object' } as const;
export const count = { type: 'integer', minimum: 0, hint: 'must be an integer >= 0' } as const;
export const bool = { type: 'boolean', hint: 'must be a boolean' } as const;

// One instance; each schema is compiled once (at its first use): validation is on every request's hot path.
const ajv = new Ajv2020({ allErrors: false, verbose: true, discriminator: true, strict: true, strictRequired: false });
ajv.addKeyword({ keyword: 'hint', schemaType: 'string' });
addFormats(ajv, ['date-time']);

/** -32602 for the first failure, or undefined when the value fits. `root` prefixes field paths:
 * `params` for JSON-RPC, '' for a REST body or query. */
export type ParamsCheck = (value: unknown, root: string) => A2AError | undefined;

/** Compiled at its first use, once: a process that only encodes (the `handoff` client commands load
 * the codecs to convert answers) never pays for compiling every method's schema. */
export function compileParams(schema: AnySchemaObject): ParamsCheck {
  let compiled: ValidateFunction | undefined;
  return (value, root) => {
    compiled ??= ajv.compile(schema);
    const validate = compiled;
    if (validate(value)) return undefined;
    const errors = validate.errors ?? [];
    return invalidParams(describe(errors, root), { errors: errors.slice(0, 5).map((e) => brief(e, root)) });
  };
}

/** "params.message.parts[0].text" from Ajv's "/message/parts/0/text". */
function fieldPath(root: string, instancePath: string, extra?: string): string {
  const segs = instancePath.split('/').slice(1);
  if (extra !== undefined) segs.push(extra);
  return segs
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, s) => (/^\d+$/.test(s) ? `${acc}[${s}]` : acc === '' ? s : `${acc}.${s}`), root);
}

/** The field an error is about: a missing property is reported at the property, not its parent. */
const errorPath = (e: ErrorObject, root: string): string =>
  e.keyword === 'required'
    ? fieldPath(root, e.instancePath, (e.params as { missingProperty: string }).missingProperty)
    : fieldPath(root, e.instancePath);

/** The schema's `hint` for this failure, if the author wrote one. */
function hintOf(e: ErrorObject): string | undefined {
  const parent = e.parentSchema as AnySchemaObject | undefined;
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    const prop = (parent?.properties as Record<string, AnySchemaObject> | undefined)?.[missing];
    return typeof prop?.hint === 'string' ? prop.hint : 'is required';
  }
  return typeof parent?.hint === 'string' ? parent.hint : undefined;
}

/** Compound keywords (oneOf) list their branches' errors first; prefer the first error that has
 * a hint, which is the one at the level a human thinks about. */
function describe(errors: ErrorObject[], root: string): string {
  const chosen = errors.find((e) => hintOf(e) !== undefined && !isBranchRequired(e)) ?? errors[0];
  if (!chosen) return `${root || 'request'}: invalid`;
  return `${errorPath(chosen, root) || root || 'request'}: ${hintOf(chosen) ?? chosen.message ?? 'is invalid'}`;
}

/** A `required` inside an anonymous oneOf branch ({required:['bytes']}) says nothing useful alone. */
const isBranchRequired = (e: ErrorObject): boolean =>
  e.keyword === 'required' && (e.parentSchema as AnySchemaObject | undefined)?.properties === undefined;

const brief = (e: ErrorObject, root: string): { path: string; message: string } => ({
  path: errorPath(e, root),
  message: hintOf(e) ?? e.message ?? 'is invalid',
});
