// The reporter of `npm test` (test/support/test-reporter.ts), run the way package.json runs it over
// small test files written here: a line per file, each failure with its stack (a file that did not
// load with its stderr), the slowest files, and the closing line CI reads — `tests: N passed, N
// failed, N skipped`, last — with node --test's exit code: non-zero when anything failed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { specDestination } from '../support/test-reporter.js';

const REPORTER = fileURLToPath(new URL('../support/test-reporter.js', import.meta.url));

const FILES = {
  'ok.test.mjs': `import { it } from 'node:test';
it('one', () => {});
it('two', () => {});
it('later', { skip: 'not yet' }, () => {});
it('some day', { todo: true }, () => {});
`,
  'bad.test.mjs': `import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
describe('sums', () => {
  it('adds up', () => assert.equal(1 + 1, 3));
  it('holds', () => {});
});
`,
  'broken.test.mjs': `throw new Error('this file does not load');
`,
};

/** node --test over `files` with the spec reporter to a file and this one to stdout. */
function runTests(dir: string, files: string[]): Promise<{ code: number; out: string }> {
  const args = [
    '--test',
    '--test-reporter=spec',
    `--test-reporter-destination=${join(dir, 'spec.txt')}`,
    `--test-reporter=${REPORTER}`,
    '--test-reporter-destination=stdout',
    ...files.map((f) => join(dir, f)),
  ];
  // Without NODE_TEST_CONTEXT the child is a runner of its own, not a subtest of this one.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: dir, env, timeout: 60_000 }, (err, stdout) => {
      resolve({ code: err ? Number((err as { code?: number }).code) : 0, out: stdout });
    });
  });
}

const lastLine = (out: string): string => out.trimEnd().split('\n').at(-1) ?? '';

describe('the npm test reporter', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'handoff-reporter-'));
    for (const [name, text] of Object.entries(FILES)) writeFileSync(join(dir, name), text);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a failing run: each failure with its stack, the slowest files, the counts last; exit non-zero', async () => {
    const { code, out } = await runTests(dir, Object.keys(FILES));
    assert.notEqual(code, 0);
    assert.equal(lastLine(out), 'tests: 3 passed, 2 failed, 2 skipped', out);
    assert.ok(!out.includes('TAP version'), 'no raw TAP');
    // One line per file as it ends.
    assert.match(out, /^✖ +[\d.]+ s {2}bad\.test\.mjs$/m);
    assert.match(out, /^✔ +[\d.]+ s {2}ok\.test\.mjs$/m);
    assert.match(out, /^✖ +[\d.]+ s {2}broken\.test\.mjs$/m);
    // The assertion, its values and the line of the test that threw.
    assert.match(out, /\d\) sums › adds up\n/);
    assert.match(out, /AssertionError/);
    assert.match(out, /bad\.test\.mjs:4:/);
    // A file that did not load shows what it wrote to stderr.
    assert.match(out, /\d\) broken\.test\.mjs\n/);
    assert.match(out, /Error: this file does not load/);
    const slowest = out.slice(out.indexOf('slowest files:'));
    for (const name of Object.keys(FILES)) assert.ok(slowest.includes(name), `${name} among the slowest files`);
    // The whole tree is in the spec report the reporter points to.
    assert.match(out, /^every test: .*spec\.txt$/m);
    assert.match(readFileSync(join(dir, 'spec.txt'), 'utf8'), /adds up/);
  });

  it('a passing run: no failure section, exit 0, the counts last', async () => {
    const { code, out } = await runTests(dir, ['ok.test.mjs']);
    assert.equal(code, 0, out);
    assert.equal(lastLine(out), 'tests: 2 passed, 0 failed, 2 skipped', out);
    assert.ok(!out.includes('failed:'), out);
  });

  it('finds the spec report among the runner’s flags, in either spelling', () => {
    const flags = ['--test-reporter', 'spec', '--test-reporter-destination', 'report.txt'];
    assert.equal(
      specDestination([...flags, '--test-reporter=./r.js', '--test-reporter-destination=stdout']),
      'report.txt',
    );
    assert.equal(specDestination(['--test-reporter=./r.js', '--test-reporter-destination=stdout']), undefined);
    assert.equal(specDestination(['--test-reporter=spec', '--test-reporter-destination=stdout']), undefined);
  });
});
