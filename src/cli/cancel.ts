// `handoff cancel <url> <taskId>`: tasks/cancel. A canceled task exits 1 like any unsuccessful end.
import type { Command } from 'commander';
import { taskCommand, type ClientOptions, connect, printResult, run } from './client/command.js';

export function cancelCommand(): Command {
  return taskCommand('cancel', 'cancel a task (exit 1: canceled is not completed)').action(
    run(async (url: string, id: string, opts: ClientOptions) => {
      const { a2a } = await connect(url, opts);
      return printResult(await a2a.cancelTask(id), opts, url);
    }),
  );
}
