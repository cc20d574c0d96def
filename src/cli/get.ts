// `handoff get <url> <taskId>`: tasks/get. Exit code from the task state.
import type { Command } from 'commander';
import { UsageError } from './client/card.js';
import { taskCommand, type ClientOptions, connect, printResult, run } from './client/command.js';

interface GetOptions extends ClientOptions {
  history?: string;
}

export function getCommand(): Command {
  return taskCommand('get', 'show a task (exit 0 completed, 3 pending, 1 failed/canceled/rejected)')
    .option('--history <n>', 'return at most the last n history messages')
    .action(
      run(async (url: string, id: string, opts: GetOptions) => {
        const params: { id: string; historyLength?: number } = { id };
        if (opts.history !== undefined) {
          const n = Number(opts.history);
          if (!Number.isSafeInteger(n) || n < 0)
            throw new UsageError(`--history must be a non-negative integer, got '${opts.history}'`);
          params.historyLength = n;
        }
        const { a2a } = await connect(url, opts);
        return printResult(await a2a.getTask(id, params.historyLength), opts, url);
      }),
    );
}
