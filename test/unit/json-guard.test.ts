// inspectJson (src/json-guard.ts): the depth of parsed JSON counted without recursion (a value
// nested 200,000 deep is judged, not a stack overflow), U+0000 found in strings and keys, and the
// culprit's path named the way error messages print it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspectJson } from '../../src/json-guard.js';

const nested = (depth: number): unknown => JSON.parse(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);

describe('inspectJson', () => {
  it('counts containers: the root object is depth 1, scalars add nothing', () => {
    const opts = { maxDepth: 3, root: 'body' };
    assert.equal(inspectJson('text', opts), undefined);
    assert.equal(inspectJson({ a: { b: [1, 'x', null] } }, opts), undefined);
    assert.deepEqual(inspectJson({ a: { b: [[1]] } }, opts), {
      kind: 'depth',
      path: 'body.a.b[0]',
      message: 'JSON nests deeper than 3 levels (HANDOFF_JSON_MAX_DEPTH)',
    });
  });

  it('judges a value nested 200,000 deep without overflowing the stack', () => {
    const problem = inspectJson(nested(200_000), { maxDepth: 64, root: 'body' });
    assert.equal(problem?.kind, 'depth');
    assert.ok((problem?.path.length ?? 0) <= 201, 'the quoted path stays short');
  });

  it('finds U+0000 in strings and in keys, with their path; `nul: false` ignores it', () => {
    const opts = { maxDepth: 64, root: 'params' };
    assert.deepEqual(inspectJson({ message: { parts: [{ text: 'a\u0000' }] } }, opts), {
      kind: 'nul',
      path: 'params.message.parts[0].text',
      message: 'must not contain the character U+0000',
    });
    assert.equal(inspectJson({ data: { 'k\u0000': 1 } }, opts)?.path, 'params.data.k\u0000');
    assert.equal(inspectJson(['\u0000'], { ...opts, nul: false }), undefined);
  });

  it('reports the first problem in document order', () => {
    const problem = inspectJson({ first: 'ok', second: '\u0000', third: '\u0000' }, { maxDepth: 8, root: 'b' });
    assert.equal(problem?.path, 'b.second');
  });
});
