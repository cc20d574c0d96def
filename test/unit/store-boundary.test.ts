// The store is the only door to the database: outside src/store/, no source file imports Kysely
// or the table types, reaches for a store's raw `db`, or opens a transaction of its own.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../support/host.js';

const SRC = join(REPO_ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return path === join(SRC, 'store') ? [] : sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

const FORBIDDEN: Array<[RegExp, string]> = [
  [/from 'kysely'/, 'imports Kysely'],
  [/from '[./]*\/store\/db\.js'/, 'imports the table types'],
  [/\.db\.(select|insert|update|delete|transaction|executeQuery)|store\.db\b/, 'uses a raw database handle'],
];

describe('store boundary', () => {
  it('no file outside src/store/ touches the database but through the store', () => {
    const offences = sources(SRC).flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return FORBIDDEN.filter(([re]) => re.test(text)).map(([, what]) => `${relative(REPO_ROOT, file)} ${what}`);
    });
    assert.deepEqual(offences, []);
  });
});
