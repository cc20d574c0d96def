// `handoff validate <file|dir>`: check workflow files with the host's own loader
// (src/engine/workflow/loader.ts), before a host refuses to start over them. Every problem is
// printed as the loader words it (`<file>: node "<id>": <problem>`) and the exit code is 1; a clean
// set prints one line (`3 workflows valid: a, b, c`) and exits 0. A directory is every `*.json` in
// it, checked as one set, as the host loads it (ids unique across files, and whatever the loader
// checks across workflows); a single file is checked alone. Secrets are the host's at run time:
// any `{{ secrets.NAME }}` counts as defined here, while where a secret may appear is still checked.
import { stat } from 'node:fs/promises';
import { Command } from 'commander';
import {
  jsonFiles,
  type LoadOptions,
  loadWorkflows,
  readJson,
  validateWorkflow,
  WorkflowValidationError,
} from '../engine/workflow/loader.js';
import { UsageError } from './client/card.js';
import { run } from './client/command.js';
import { EXIT_ERROR, EXIT_OK } from './client/output.js';

/** Any secret name is defined: the values are the host's, not the files'. */
const ANY_SECRET: LoadOptions = { secrets: { has: () => true } };

interface Checked {
  files: string[];
  /** The workflow ids of the files that passed, in file order. */
  ids: string[];
  /** One per file with problems (its source and the loader's sentences). */
  failures: WorkflowValidationError[];
}

/** The files at `path`: itself, or the `*.json` files of a directory. */
async function filesAt(path: string): Promise<{ files: string[]; directory: boolean }> {
  let directory: boolean;
  try {
    directory = (await stat(path)).isDirectory();
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  if (!directory) return { files: [path], directory };
  const files = await jsonFiles(path);
  if (files.length === 0) throw new UsageError(`${path} holds no workflow files (*.json)`);
  return { files, directory };
}

/** Each file on its own, then (a directory whose files all passed) the set as the host loads it. */
async function check(path: string): Promise<Checked> {
  const { files, directory } = await filesAt(path);
  const checked: Checked = { files, ids: [], failures: [] };
  const sources = new Map<string, string>();
  for (const file of files) {
    try {
      const def = validateWorkflow(await readJson(file), file, ANY_SECRET);
      const previous = sources.get(def.id);
      if (previous !== undefined)
        throw new WorkflowValidationError(file, [`workflow id "${def.id}" is already defined in ${previous}`]);
      sources.set(def.id, file);
      checked.ids.push(def.id);
    } catch (err) {
      if (!(err instanceof WorkflowValidationError)) throw err;
      checked.failures.push(err);
    }
  }
  if (directory && checked.failures.length === 0) {
    try {
      await loadWorkflows([path], ANY_SECRET);
    } catch (err) {
      if (!(err instanceof WorkflowValidationError)) throw err;
      checked.failures.push(err);
    }
  }
  return checked;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

export function validateCommand(): Command {
  return new Command('validate')
    .description('check workflow files as the host loads them: every problem and exit 1, or one line and exit 0')
    .argument('<path>', 'a workflow file, or a directory of them (every *.json, checked as one set)')
    .action(
      run(async (path: string) => {
        const { files, ids, failures } = await check(path);
        if (failures.length === 0) {
          process.stdout.write(`${plural(ids.length, 'workflow')} valid: ${ids.join(', ')}\n`);
          return EXIT_OK;
        }
        for (const failure of failures) process.stdout.write(`${failure.message}\n`);
        const problems = failures.reduce((n, f) => n + f.problems.length, 0);
        const where = new Set(failures.map((f) => f.source)).size;
        process.stdout.write(`${plural(problems, 'problem')} in ${where} of ${plural(files.length, 'file')}\n`);
        return EXIT_ERROR;
      }),
    );
}
