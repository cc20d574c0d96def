// Expressions, templates, edge conditions and port values, all on top of JSONata.
//
//   await evaluateExpression('vars.i < inputs.steps', scope)          // → true
//   await renderTemplate({ n: '{{ vars.i + 1 }}', s: 'Hi {{ inputs.name }}' }, scope)
//                                                                     // → { n: 3, s: 'Hi Ada' }
//
// Error contract: every failure (syntax, runtime, invalid regex, missing port) is an
// EvaluationError whose message names the expression, so a failed run says what broke.
import { isDeepStrictEqual } from 'node:util';
import jsonata from 'jsonata';
import type { EvalScope } from '../nodes/types.js';
import type { EdgeCondition, PortValue } from './definition.js';

export class EvaluationError extends Error {
  override readonly name = 'EvaluationError';
  constructor(
    message: string,
    readonly expression?: string,
  ) {
    super(message);
  }
}

// Guardrails: definitions are operator-written, but a runaway recursion must not stall a worker.
const JSONATA_OPTIONS = { timeout: 5_000, stack: 500 };
// Expressions come from loaded definitions (a finite set); the cap only bounds ad-hoc callers.
const CACHE_LIMIT = 10_000;

const compiled = new Map<string, jsonata.Expression>();

function compile(expr: string): jsonata.Expression {
  let hit = compiled.get(expr);
  if (hit) return hit;
  try {
    hit = jsonata(expr, JSONATA_OPTIONS);
  } catch (err) {
    throw new EvaluationError(`expression "${expr}" does not compile: ${describe(err)}`, expr);
  }
  if (compiled.size >= CACHE_LIMIT) compiled.delete(compiled.keys().next().value as string);
  compiled.set(expr, hit);
  return hit;
}

function describe(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown; position?: unknown };
  const msg = typeof e?.message === 'string' ? e.message : String(err);
  const where = typeof e?.position === 'number' ? ` at position ${e.position}` : '';
  return typeof e?.code === 'string' ? `${msg} (${e.code}${where})` : msg;
}

/** Returns a message when JSONata cannot compile `expr` (for the loader), else undefined. */
export function checkExpressionSyntax(expr: string): string | undefined {
  if (expr.trim() === '') return 'empty expression';
  try {
    jsonata(expr);
    return undefined;
  } catch (err) {
    return describe(err);
  }
}

/** Evaluates a JSONata expression with the scope as its input document. */
export async function evaluateExpression(expr: string, scope: EvalScope): Promise<unknown> {
  const path = plainPath(expr);
  if (path) {
    const value = readPlainPath(scope, path);
    if (value !== NOT_PLAIN) return value;
  }
  const compiledExpr = compile(expr);
  try {
    return toPlain(await compiledExpr.evaluate(scope));
  } catch (err) {
    throw new EvaluationError(`expression "${expr}" failed: ${describe(err)}`, expr);
  }
}

// The fast path for the commonest expression, a plain property path (`inputs.prompt`,
// `$.vars.count`): read it without evaluating JSONata (≈ 1 µs each, on every templated node).
// It answers only where JSONata's answer is plain — every step an own key of a plain object, the
// value a string, a finite number, a boolean or null — and leaves the rest (a missing key,
// arrays, whose path semantics map and flatten, objects) to JSONata itself.
// (test/unit/workflow-evaluate.test.ts checks it against JSONata on a table of expressions.)
const PLAIN_PATH = /^(?:\$\.)?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$/;
/** Names that JSONata reads as operators or literals, not as a path step. */
const KEYWORDS = new Set(['and', 'or', 'in', 'true', 'false', 'null']);
const NOT_PLAIN = Symbol('not a plain path value');
const plainPaths = new Map<string, readonly string[] | null>();

/** The steps of `expr` when it is a plain property path, else undefined. */
function plainPath(expr: string): readonly string[] | undefined {
  let steps = plainPaths.get(expr);
  if (steps === undefined) {
    const names = PLAIN_PATH.test(expr) ? expr.replace(/^\$\./, '').split('.') : [];
    steps = names.length > 0 && !names.some((n) => KEYWORDS.has(n)) ? names : null;
    if (plainPaths.size >= CACHE_LIMIT) plainPaths.clear();
    plainPaths.set(expr, steps);
  }
  return steps ?? undefined;
}

function readPlainPath(scope: EvalScope, steps: readonly string[]): unknown {
  let v: unknown = scope;
  for (const step of steps) {
    if (!isPlainRecord(v) || !Object.hasOwn(v, step)) return NOT_PLAIN;
    v = v[step];
  }
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  return typeof v === 'number' && Number.isFinite(v) ? v : NOT_PLAIN;
}

function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

// JSONata returns "sequences" (arrays tagged with extra props), builds objects without a
// prototype and may return lambdas; callers store and compare results as JSON, so hand back plain
// arrays and objects and drop functions. Copy-on-change: untouched subtrees keep their identity.
function toPlain(value: unknown): unknown {
  if (typeof value === 'function') return undefined;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const items = value.map(toPlain);
    const changed = (value as { sequence?: boolean }).sequence || items.some((v, i) => v !== value[i]);
    return changed ? items : value;
  }
  let changed = Object.getPrototypeOf(value) === null;
  const entries = Object.entries(value).map(([k, v]) => {
    const plain = toPlain(v);
    if (plain !== v) changed = true;
    return [k, plain] as const;
  });
  return changed ? Object.fromEntries(entries.filter(([, v]) => v !== undefined)) : value;
}

// ---------------------------------------------------------------------------------------------
// Templates

type TemplatePart = { text: string } | { expr: string };

const parsedTemplates = new Map<string, TemplatePart[]>();

/**
 * Splits a string into literal text and `{{ expr }}` segments. The scanner skips JSONata string
 * literals and nested braces, so `{{ {"a": {"b": 1}} }}` and `{{ "}}" }}` stay one segment.
 * An unterminated `{{` stays literal text (the loader reports it via checkTemplateSyntax).
 */
export function parseTemplate(str: string): TemplatePart[] {
  const hit = parsedTemplates.get(str);
  if (hit) return hit;
  const parts = scanTemplate(str).parts;
  if (parsedTemplates.size >= CACHE_LIMIT) parsedTemplates.clear();
  parsedTemplates.set(str, parts);
  return parts;
}

function scanTemplate(str: string): { parts: TemplatePart[]; unterminatedAt?: number } {
  const parts: TemplatePart[] = [];
  let pos = 0;
  for (;;) {
    const open = str.indexOf('{{', pos);
    if (open < 0) break;
    const close = findClose(str, open + 2);
    if (close < 0) {
      pushText(parts, str.slice(pos));
      return { parts, unterminatedAt: open };
    }
    pushText(parts, str.slice(pos, open));
    parts.push({ expr: str.slice(open + 2, close).trim() });
    pos = close + 2;
  }
  pushText(parts, str.slice(pos));
  return { parts };
}

function pushText(parts: TemplatePart[], text: string): void {
  if (text !== '') parts.push({ text });
}

/** Index of the `}}` closing a segment whose body starts at `from`, or -1. */
function findClose(str: string, from: number): number {
  let depth = 0;
  for (let i = from; i < str.length; i++) {
    const c = str[i];
    if (c === '"' || c === "'" || c === '`') {
      i = skipQuoted(str, i);
      if (i < 0) return -1;
    } else if (c === '{') depth++;
    else if (c === '}') {
      if (depth > 0) depth--;
      else if (str[i + 1] === '}') return i;
    }
  }
  return -1;
}

function skipQuoted(str: string, start: number): number {
  const quote = str[start];
  for (let i = start + 1; i < str.length; i++) {
    if (str[i] === '\\' && quote !== '`') i++;
    else if (str[i] === quote) return i;
  }
  return -1;
}

/** Syntax problems of the `{{ }}` segments of one string (empty list when it is fine). */
export function checkTemplateSyntax(str: string): string[] {
  const { parts, unterminatedAt } = scanTemplate(str);
  const problems: string[] = [];
  for (const part of parts) {
    if (!('expr' in part)) continue;
    const msg = checkExpressionSyntax(part.expr);
    if (msg) problems.push(`invalid expression "{{ ${part.expr} }}": ${msg}`);
  }
  if (unterminatedAt !== undefined) problems.push(`unterminated "{{" at position ${unterminatedAt}`);
  return problems;
}

/** Deep-walks JSON and reports template syntax problems with their path (`config.output.x`). */
export function findTemplateProblems(value: unknown, path: string): string[] {
  if (typeof value === 'string') return checkTemplateSyntax(value).map((p) => `${path}: ${p}`);
  if (Array.isArray(value)) return value.flatMap((v, i) => findTemplateProblems(v, `${path}[${i}]`));
  if (isPlainObject(value)) {
    return Object.entries(value).flatMap(([k, v]) => findTemplateProblems(v, `${path}.${k}`));
  }
  return [];
}

/**
 * Renders `{{ expr }}` segments anywhere in a JSON value. A string that is exactly one segment
 * yields the raw result (numbers stay numbers, objects stay objects, undefined becomes null);
 * otherwise results are interpolated (null/undefined → "", objects → JSON).
 */
export async function renderTemplate(value: unknown, scope: EvalScope): Promise<unknown> {
  if (typeof value === 'string') return renderString(value, scope);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) out.push(await renderTemplate(item, scope));
    return out;
  }
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await renderTemplate(v, scope);
    return out;
  }
  return value;
}

async function renderString(str: string, scope: EvalScope): Promise<unknown> {
  if (!str.includes('{{')) return str;
  const parts = parseTemplate(str);
  const only = parts.length === 1 ? parts[0] : undefined;
  if (only && 'expr' in only) return (await evaluateExpression(only.expr, scope)) ?? null;
  let out = '';
  for (const part of parts) {
    out += 'text' in part ? part.text : stringify(await evaluateExpression(part.expr, scope));
  }
  return out;
}

function stringify(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Conditions

/**
 * JSONata-style truthiness, so `expression` conditions behave as `$boolean(expr)` would:
 * empty strings, 0, empty arrays/objects, null and undefined are false.
 */
export function isTruthy(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0 && !Number.isNaN(value);
  if (typeof value === 'string') return value.length > 0;
  if (Array.isArray(value)) return value.some(isTruthy);
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return false;
}

/** Whether an edge may be taken. No condition means always. */
export async function evaluateCondition(cond: EdgeCondition | undefined, scope: EvalScope): Promise<boolean> {
  if (!cond) return true;
  if (cond.type === 'expression') {
    if (typeof cond.expression !== 'string') throw new EvaluationError('expression condition without "expression"');
    return isTruthy(await evaluateExpression(cond.expression, scope));
  }
  if (typeof cond.left !== 'string') throw new EvaluationError(`${cond.type} condition without "left"`);
  // A missing path compares like JSON null: `equals null` matches an absent value.
  const left = (await evaluateExpression(cond.left, scope)) ?? null;
  const right = cond.right ?? null;
  switch (cond.type) {
    case 'equals':
      return isDeepStrictEqual(left, right);
    case 'notEquals':
      return !isDeepStrictEqual(left, right);
    case 'contains':
      return contains(left, right);
    case 'regex':
      return matches(left, right, cond.left);
    case 'truthy':
      return isTruthy(left);
    case 'falsy':
      return !isTruthy(left);
    default:
      throw new EvaluationError(`unknown condition type "${String((cond as { type: unknown }).type)}"`);
  }
}

/** Substring for strings, element (deep-equal) for arrays, own key for objects. */
function contains(left: unknown, right: unknown): boolean {
  if (typeof left === 'string') return right !== null && left.includes(stringify(right));
  if (Array.isArray(left)) return left.some((item) => isDeepStrictEqual(item, right));
  if (isPlainObject(left) && typeof right === 'string') return Object.hasOwn(left, right);
  return false;
}

const regexCache = new Map<string, RegExp>();

/** Compiles a condition pattern; the loader uses this too, so bad patterns fail at load. */
export function compileConditionRegex(pattern: unknown): RegExp {
  if (typeof pattern !== 'string') throw new EvaluationError('regex condition "right" must be a pattern string');
  let re = regexCache.get(pattern);
  if (re) return re;
  try {
    re = new RegExp(pattern);
  } catch (err) {
    throw new EvaluationError(`invalid regex /${pattern}/: ${describe(err)}`);
  }
  if (regexCache.size >= CACHE_LIMIT) regexCache.clear();
  regexCache.set(pattern, re);
  return re;
}

function matches(left: unknown, pattern: unknown, leftExpr: string): boolean {
  const re = compileConditionRegex(pattern);
  // Only scalars have a meaningful text form; objects and missing values never match.
  if (typeof left !== 'string' && typeof left !== 'number' && typeof left !== 'boolean') return false;
  try {
    return re.test(String(left));
  } catch (err) {
    throw new EvaluationError(`regex condition on "${leftExpr}" failed: ${describe(err)}`, leftExpr);
  }
}

// ---------------------------------------------------------------------------------------------
// Ports

/**
 * Resolves a node's `inputs`. A missing optional connection/variable resolves to undefined; a
 * missing required one (no such completed node, no such output key, no such variable) throws.
 */
export async function resolvePorts(
  inputs: Record<string, PortValue>,
  scope: EvalScope,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [name, port] of Object.entries(inputs)) out[name] = await resolvePort(name, port, scope);
  return out;
}

async function resolvePort(name: string, port: PortValue, scope: EvalScope): Promise<unknown> {
  switch (port.type) {
    case 'static':
      return port.value;
    case 'expression':
      return evaluateExpression(port.expression, scope);
    case 'connection':
      return resolveConnection(name, port, scope);
    case 'variable':
      if (Object.hasOwn(scope.vars, port.variableName)) return scope.vars[port.variableName];
      if (port.optional) return undefined;
      throw new EvaluationError(`input "${name}": variable "${port.variableName}" is not set`);
    default:
      throw new EvaluationError(`input "${name}": unknown port type "${String((port as { type: unknown }).type)}"`);
  }
}

function resolveConnection(name: string, port: Extract<PortValue, { type: 'connection' }>, scope: EvalScope): unknown {
  const missing = (what: string): undefined => {
    if (port.optional) return undefined;
    throw new EvaluationError(`input "${name}": ${what}`);
  };
  if (!Object.hasOwn(scope.nodes, port.nodeId)) return missing(`node "${port.nodeId}" has no output yet`);
  const output = scope.nodes[port.nodeId];
  if (port.outputKey === undefined) return output;
  if (isPlainObject(output) && Object.hasOwn(output, port.outputKey)) return output[port.outputKey];
  return missing(`node "${port.nodeId}" output has no key "${port.outputKey}"`);
}
