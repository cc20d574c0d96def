// Secrets by reference in templates: `{{ secrets.API_TOKEN }}`. The run scope never holds secret
// values, so no expression can read one; only the exact form `{{ secrets.NAME }}`, and only in
// the config fields a node type names (headers, query parameters, an API key: what is sent and
// never recorded), is replaced by the value, at the moment of the call.
//
//   loader:  secretProblems(node.config, type.secretPaths, secrets.has)  → sentences, or []
//   node:    await renderWithSecrets(config.headers, scope, secrets)      → values filled in
import type { EvalScope } from '../nodes/types.js';
import { evaluateExpression, parseTemplate, renderTemplate } from './evaluate.js';

/** `secrets.NAME`, the only expression that reads a secret. */
const REFERENCE = /^secrets\.([A-Z0-9_]+)$/;
/** Any mention of `secrets` as a name (not `$secrets`, not `x.secrets`). */
const MENTION = /(?:^|[^\w$.])secrets\b/;

/** Where a string value holds a template segment mentioning secrets, with the segment's name. */
interface Mention {
  path: string;
  expr: string;
  /** Set when the segment is exactly `secrets.NAME`. */
  name?: string;
}

function mentions(value: unknown, path: string): Mention[] {
  if (typeof value === 'string') {
    if (!value.includes('{{')) return [];
    return parseTemplate(value).flatMap((part) => {
      if (!('expr' in part) || !MENTION.test(part.expr)) return [];
      const name = REFERENCE.exec(part.expr)?.[1];
      return [{ path, expr: part.expr, ...(name ? { name } : {}) }];
    });
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => mentions(v, `${path}[${i}]`));
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => mentions(v, `${path}.${k}`));
  }
  return [];
}

/**
 * What is wrong with the secret references in `value` (a node's config, or any other template
 * text of a workflow when `allowed` is empty), as sentences naming the path and the secret.
 */
export function secretProblems(
  value: unknown,
  root: string,
  allowed: readonly RegExp[],
  isDefined: (name: string) => boolean,
): string[] {
  return mentions(value, root)
    .map((m) => {
      if (!allowed.some((p) => p.test(m.path))) {
        return `${m.path}: a secret may not be used here (only in request headers, query parameters and an API key)`;
      }
      if (m.name === undefined)
        return `${m.path}: a secret is referenced only as {{ secrets.NAME }}, got {{ ${m.expr} }}`;
      if (!isDefined(m.name)) {
        return `${m.path}: secret ${m.name} is not defined (HANDOFF_SECRET_${m.name} or HANDOFF_SECRETS_FILE)`;
      }
      return undefined;
    })
    .filter((p): p is string => p !== undefined);
}

/** Like renderTemplate, with `{{ secrets.NAME }}` segments replaced by their values. */
export async function renderWithSecrets(
  value: unknown,
  scope: EvalScope,
  secrets: { get(name: string): string },
): Promise<unknown> {
  if (typeof value === 'string') return renderString(value, scope, secrets);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) out.push(await renderWithSecrets(item, scope, secrets));
    return out;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await renderWithSecrets(v, scope, secrets);
    return out;
  }
  return value;
}

async function renderString(str: string, scope: EvalScope, secrets: { get(name: string): string }) {
  const parts = str.includes('{{') ? parseTemplate(str) : [];
  if (!parts.some((p) => 'expr' in p && REFERENCE.test(p.expr))) return renderTemplate(str, scope);
  let out = '';
  for (const part of parts) {
    if ('text' in part) out += part.text;
    else {
      const name = REFERENCE.exec(part.expr)?.[1];
      out += name !== undefined ? secrets.get(name) : text(await evaluateExpression(part.expr, scope));
    }
  }
  return out;
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
