// The reporter `npm test` prints with: one line per test file as it ends, then each failure with its
// stack (a file that failed outside any test shows what it wrote to stderr), the slowest files, and
// a closing line `tests: N passed, N failed, N skipped`. CI reads that last line to tell a run from
// "ran no test", so nothing may follow it. The exit code stays node --test's own (non-zero when
// anything failed). Node's spec reporter writes the whole tree to a file beside it (package.json):
//
//   node --test --test-reporter=spec --test-reporter-destination=dist/test-report.txt \
//     --test-reporter=./dist/test/support/test-reporter.js --test-reporter-destination=stdout …
//
// Counted as failed: tests that failed, timed out or were cancelled, and suites whose own hook
// failed (Node's summary leaves those out, though they fail the run). Skipped includes todo.
import { relative } from 'node:path';
import type { EventData } from 'node:test';
import type { TestEvent } from 'node:test/reporters';
import { inspect } from 'node:util';

/** What the run adds up to. */
interface Tally {
  passed: number;
  failed: number;
  skipped: number;
}

interface Failure {
  path: string[];
  file: string | undefined;
  line: number | undefined;
  error: Error;
  /** The file failed outside any test (it did not load, it exited non-zero, …). */
  wholeFile: boolean;
  /** What the file wrote to stderr, for a file that failed outside any test. */
  stderr?: string;
}

/** Node's own closing diagnostics, which the tally replaces. */
const SUMMARY_DIAGNOSTIC = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/;
/** Bounds on what is kept while the run lasts: stderr per file (its tail), notes. */
const STDERR_TAIL = 8_000;
const MAX_NOTES = 20;
const SLOWEST = 10;

type FailureType = 'cancelledByParent' | 'hookFailed' | 'subtestsFailed' | 'testCodeFailure' | string;
const failureType = (err: Error): FailureType | undefined => (err as { failureType?: string }).failureType;

class Summary {
  readonly total: Tally = { passed: 0, failed: 0, skipped: 0 };
  readonly failures: Failure[] = [];
  readonly notes: string[] = [];
  private notesLeftOut = 0;
  private readonly names = new Map<string, string[]>();
  private readonly stderr = new Map<string, string>();
  readonly durations: Array<{ file: string; ms: number }> = [];

  /** The line to print for this event, if any (a file that ended). */
  add(event: TestEvent): string | undefined {
    switch (event.type) {
      case 'test:start':
        this.started(event.data);
        return undefined;
      case 'test:pass':
        this.count(event.data, event.data.skip !== undefined || event.data.todo !== undefined ? 'skipped' : 'passed');
        return undefined;
      case 'test:fail':
        this.failed(event.data);
        return undefined;
      case 'test:stderr':
        this.stderr.set(
          event.data.file,
          ((this.stderr.get(event.data.file) ?? '') + event.data.message).slice(-STDERR_TAIL),
        );
        return undefined;
      case 'test:diagnostic':
        this.note(event.data.message);
        return undefined;
      case 'test:complete':
        return this.completed(event.data);
      default:
        return undefined;
    }
  }

  /** The names of the tests open in a file, by nesting, to name a failure by its suites. */
  private started(data: EventData.TestStart): void {
    const names = this.names.get(data.file ?? '') ?? [];
    names.length = data.nesting;
    names.push(data.name);
    this.names.set(data.file ?? '', names);
  }

  private count(data: { details: { type?: 'suite' } }, as: keyof Tally): void {
    if (data.details.type !== 'suite') this.total[as]++;
  }

  private failed(data: EventData.TestFail): void {
    if (data.todo !== undefined) {
      this.count(data, 'skipped');
      return;
    }
    const error = data.details.error;
    // A suite failed because of its tests is counted by them; one whose own hook failed counts once.
    if (data.details.type === 'suite' && failureType(error) === 'subtestsFailed') return;
    this.total.failed++;
    const file = data.file ?? '';
    const path = [...(this.names.get(file) ?? []).slice(0, data.nesting), data.name];
    const wholeFile = data.nesting === 0 && data.name === data.file;
    const stderr = wholeFile ? this.stderr.get(file) : undefined;
    this.stderr.delete(file);
    this.failures.push({ path, file: data.file, line: data.line, error, wholeFile, ...(stderr ? { stderr } : {}) });
  }

  private note(message: string): void {
    if (SUMMARY_DIAGNOSTIC.test(message)) return;
    if (this.notes.length < MAX_NOTES) this.notes.push(message);
    else this.notesLeftOut++;
  }

  /**
   * A file's end (when its process exits): ✔ or ✖, time, name. Its tests are reported after it, so
   * their counts come in the summary. Other completions say nothing.
   */
  private completed(data: EventData.TestComplete): string | undefined {
    if (data.nesting !== 0 || data.name !== data.file) return undefined;
    const ms = data.details.duration_ms;
    this.durations.push({ file: data.file, ms });
    // A file that failed outside its tests is reported next (test:fail), with its stderr.
    if (data.details.passed) this.stderr.delete(data.file);
    return `${data.details.passed ? '✔' : '✖'} ${seconds(ms).padStart(7)}  ${shown(data.file)}\n`;
  }

  /** Everything printed after the last file: failures, notes, slowest files, the closing line. */
  report(specFile: string | undefined): string {
    const out: string[] = [''];
    if (this.failures.length > 0) {
      out.push(`✖ ${this.failures.length} failed:`, '');
      for (const [i, f] of this.failures.entries()) out.push(...describeFailure(f, i + 1), '');
    }
    if (this.notes.length > 0) {
      out.push('notes:', ...this.notes.map((n) => `  ${n}`));
      if (this.notesLeftOut > 0) out.push(`  … and ${this.notesLeftOut} more (see the spec report)`);
      out.push('');
    }
    const slowest = [...this.durations].sort((a, b) => b.ms - a.ms).slice(0, SLOWEST);
    if (slowest.length > 0) {
      out.push('slowest files:', ...slowest.map((d) => `  ${seconds(d.ms).padStart(7)}  ${shown(d.file)}`), '');
    }
    if (specFile) out.push(`every test: ${specFile}`);
    const { passed, failed, skipped } = this.total;
    out.push(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
    return `${out.join('\n')}\n`;
  }
}

function describeFailure(f: Failure, n: number): string[] {
  const where = f.file ? `${shown(f.file)}${f.line ? `:${f.line}` : ''}` : '';
  const lines = [`${n}) ${f.path.map(shown).join(' › ')}`];
  if (where) lines.push(`   at ${where}`);
  lines.push(
    ...indent(
      f.wholeFile ? 'the file failed outside its tests: it did not load, or its process failed' : errorText(f.error),
    ),
  );
  if (f.stderr) lines.push('   stderr (its end):', ...indent(f.stderr.trimEnd(), 5));
  return lines;
}

/**
 * What went wrong: the error the test threw, with its stack; for a cancelled test, only why (its
 * stack is the runner's, and the cause is another failure in the list).
 */
function errorText(err: Error): string {
  const type = failureType(err);
  const cause = (err as { cause?: unknown }).cause;
  if (type === 'cancelledByParent' || type === 'subtestsFailed') return err.message;
  return inspect(cause instanceof Error ? cause : (cause ?? err), { depth: 4 });
}

const indent = (text: string, by = 3): string[] => text.split('\n').map((l) => `${' '.repeat(by)}${l}`);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
/** A path is shown from the working directory; a test name as it is. */
const shown = (name: string): string => (name.startsWith('/') ? relative(process.cwd(), name) : name);

/**
 * Where the spec reporter writes, from the runner's own flags: each `--test-reporter` pairs with
 * the `--test-reporter-destination` in the same place.
 */
export function specDestination(execArgv: readonly string[]): string | undefined {
  const values = (flag: string) =>
    execArgv.flatMap((arg, i) => {
      if (arg.startsWith(`${flag}=`)) return [arg.slice(flag.length + 1)];
      if (arg === flag && execArgv[i + 1] !== undefined) return [execArgv[i + 1] as string];
      return [];
    });
  const destination = values('--test-reporter-destination')[values('--test-reporter').indexOf('spec')];
  return destination === 'stdout' || destination === 'stderr' ? undefined : destination;
}

export default async function* reporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const summary = new Summary();
  for await (const event of source) {
    const line = summary.add(event);
    if (line) yield line;
  }
  yield summary.report(specDestination(process.execArgv));
}
