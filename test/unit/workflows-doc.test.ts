// docs/workflows.md is the workflow language reference; these checks keep it in step with the code:
// every registered node type has its `### <typeId>` section and no section names a type that is
// not registered, every JSON example parses, every complete definition it shows loads, and one
// that shows a demo (the worked example) is that demo as it is in workflows/. (That every demo in
// workflows/ loads is test/unit/workflow-loader.test.ts, "demo workflows".)
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { NODE_TYPES } from '../../src/engine/nodes/index.js';
import { validateWorkflow } from '../../src/engine/workflow/loader.js';
import { REPO_ROOT } from '../support/host.js';

const DOC_PATH = 'docs/workflows.md';
const doc = readFileSync(join(REPO_ROOT, DOC_PATH), 'utf8');

/** The `### …` headings that are written like a type id (`core.transform`, `a2a.invoke`). */
function typeHeadings(markdown: string): string[] {
  return [...markdown.matchAll(/^### ([a-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)+)\s*$/gm)].map((m) => m[1] as string);
}

/** The bodies of the ```json blocks, with the line each starts on. */
function jsonBlocks(markdown: string): Array<{ line: number; text: string }> {
  const blocks: Array<{ line: number; text: string }> = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```json') continue;
    const end = lines.indexOf('```', i + 1);
    assert.ok(end > i, `${DOC_PATH}:${i + 1}: a json block that is never closed`);
    blocks.push({ line: i + 1, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

const isDefinition = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Array.isArray((v as { nodes?: unknown }).nodes);

describe('docs/workflows.md', () => {
  it('has a `### <typeId>` section for every registered node type', () => {
    const documented = new Set(typeHeadings(doc));
    const missing = [...NODE_TYPES.keys()].filter((typeId) => !documented.has(typeId));
    assert.deepEqual(missing, [], `${DOC_PATH} lacks a "### <typeId>" section for these node types`);
  });

  it('documents no node type that is not registered', () => {
    const unknown = typeHeadings(doc).filter((typeId) => !NODE_TYPES.has(typeId));
    assert.deepEqual(unknown, [], `${DOC_PATH} names node types that src/engine/nodes/index.ts does not register`);
  });

  it('has JSON examples that parse, and complete definitions that load', () => {
    const blocks = jsonBlocks(doc);
    assert.ok(blocks.length > 0, 'the page shows JSON examples');
    let definitions = 0;
    for (const { line, text } of blocks) {
      let value: unknown;
      assert.doesNotThrow(() => {
        value = JSON.parse(text);
      }, `${DOC_PATH}:${line}: a json block that is not JSON`);
      if (!isDefinition(value)) continue;
      definitions++;
      // Any secret a shown definition names is taken as defined: the host's secrets are not the page's.
      validateWorkflow(value, `${DOC_PATH}:${line}`, { secrets: { has: () => true } });
    }
    assert.ok(definitions >= 2, 'the page shows a small definition and the worked example');
  });

  it('shows a demo workflow exactly as workflows/ has it', () => {
    const demos = jsonBlocks(doc)
      .map(({ line, text }) => ({ line, def: JSON.parse(text) as unknown }))
      .filter((b): b is { line: number; def: Record<string, unknown> } => isDefinition(b.def))
      .map((b) => ({ ...b, file: join(REPO_ROOT, 'workflows', `${String(b.def.id)}.json`) }))
      .filter((b) => existsSync(b.file));
    assert.ok(demos.length > 0, 'the worked example is a demo of workflows/');
    for (const { line, def, file } of demos) {
      assert.deepEqual(def, JSON.parse(readFileSync(file, 'utf8')), `${DOC_PATH}:${line} differs from ${file}`);
    }
  });
});
