// Limits on parsed request JSON, checked right after parsing and before anything walks the value
// recursively (schema validation, structuredClone, JSON.stringify, canonical hashing): a body of a
// few kilobytes can nest thousands of levels and overflow the stack of any recursive walk. The
// walk here is iterative. It also finds U+0000 in strings and keys, which PostgreSQL text cannot
// hold: such a value is refused at the door, on both databases alike, instead of failing a query.
//
//   const problem = inspectJson(body, { maxDepth: 64, root: 'body' });
//   if (problem) reply 400 `${problem.path}: ${problem.message}`

export interface JsonProblem {
  kind: 'depth' | 'nul';
  /** Where: `body.inputs.a[0]`, `params.message.messageId`. */
  path: string;
  message: string;
}

export interface InspectOptions {
  /** Containers (objects, arrays) nested at most this deep; the root object is depth 1. */
  maxDepth: number;
  /** Name of the root in reported paths. */
  root: string;
  /** Also refuse U+0000 in strings and keys (default true). */
  nul?: boolean;
}

/** One value still to look at, with what is needed to name its path if it is the culprit. */
interface Frame {
  value: unknown;
  depth: number;
  parent: Frame | undefined;
  key: string | number | undefined;
}

/** The first problem found (depth first), or undefined when the value is within the limits. */
export function inspectJson(value: unknown, opts: InspectOptions): JsonProblem | undefined {
  const checkNul = opts.nul !== false;
  const stack: Frame[] = [{ value, depth: 0, parent: undefined, key: undefined }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const v = frame.value;
    if (typeof v === 'string') {
      if (checkNul && v.includes('\0')) return nulAt(frame, opts.root);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    const depth = frame.depth + 1;
    if (depth > opts.maxDepth) {
      return {
        kind: 'depth',
        path: pathOf(frame, opts.root),
        message: `JSON nests deeper than ${opts.maxDepth} levels (HANDOFF_JSON_MAX_DEPTH)`,
      };
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], depth, parent: frame, key: i });
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      const child: Frame = { value: (v as Record<string, unknown>)[key], depth, parent: frame, key };
      if (checkNul && key.includes('\0')) return nulAt(child, opts.root);
      stack.push(child);
    }
  }
  return undefined;
}

const nulAt = (frame: Frame, root: string): JsonProblem => ({
  kind: 'nul',
  path: pathOf(frame, root),
  message: 'must not contain the character U+0000',
});

/** `root.a[0].b` for a frame, walking up its parents (only done for the culprit). */
function pathOf(frame: Frame, root: string): string {
  const keys: Array<string | number> = [];
  for (let f: Frame | undefined = frame; f?.key !== undefined; f = f.parent) keys.push(f.key);
  const path = keys
    .reverse()
    .reduce<string>((acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : `${acc}.${k}`), root);
  // Keys are the caller's: a message quoting them stays short.
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

/** True when a string (an id from a path, a query or a header) cannot be stored or looked up. */
export const hasNul = (s: string): boolean => s.includes('\0');
