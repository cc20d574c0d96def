// `handoff tasks <url>`: the caller's tasks on a Handoff host, most recently changed first, from
// Handoff's own `GET /v1/a2a/tasks` (A2A v0.3 JSON-RPC has no list method). Any other agent, or a
// host without that route, gets a clear error and exit 1.
import type { Command } from 'commander';
import type { A2ATaskState } from '../a2a/types.js';
import { baseUrlOf, UsageError } from './client/card.js';
import { clientCommand, type ClientOptions, connection, printJson, run } from './client/command.js';
import { getJson, HttpStatusError } from './client/http.js';
import { EXIT_OK, Paint } from './client/output.js';

export const TASK_LIST_PATH = '/v1/a2a/tasks';

interface TasksOptions extends ClientOptions {
  state?: string;
  contextId?: string;
  limit?: string;
  cursor?: string;
}

interface TaskPage {
  tasks: A2ATaskState[];
  nextCursor?: string;
}

export function tasksCommand(): Command {
  return clientCommand('tasks', `list your tasks on a Handoff host (GET <url>${TASK_LIST_PATH})`)
    .argument('<url>', 'Handoff base URL')
    .option('--state <state>', 'only tasks in this state (e.g. input-required)')
    .option('--context-id <id>', 'only tasks of this context')
    .option('--limit <n>', 'page size, 1..100 (default 50)')
    .option('--cursor <cursor>', 'the next page, from a previous listing')
    .action(
      run(async (url: string, opts: TasksOptions) => {
        const conn = connection(opts);
        const listUrl = new URL(baseUrlOf(url) + TASK_LIST_PATH);
        if (opts.limit !== undefined) {
          const n = Number(opts.limit);
          if (!Number.isSafeInteger(n) || n < 1 || n > 100)
            throw new UsageError(`--limit must be an integer 1..100, got '${opts.limit}'`);
          listUrl.searchParams.set('limit', String(n));
        }
        if (opts.state) listUrl.searchParams.set('state', opts.state);
        if (opts.contextId) listUrl.searchParams.set('contextId', opts.contextId);
        if (opts.cursor) listUrl.searchParams.set('cursor', opts.cursor);
        let page: TaskPage;
        try {
          page = (await getJson(listUrl.toString(), conn)) as TaskPage;
        } catch (err) {
          if (err instanceof HttpStatusError && (err.status === 404 || err.status === 405)) {
            throw new Error(
              `this host offers no task list (GET ${baseUrlOf(url)}${TASK_LIST_PATH} answered HTTP ${err.status}); use \`handoff get\` with a task id`,
            );
          }
          throw err;
        }
        if (typeof page !== 'object' || page === null || !Array.isArray(page.tasks)) {
          throw new Error(
            `this host offers no task list (GET ${baseUrlOf(url)}${TASK_LIST_PATH} did not answer {tasks: […]})`,
          );
        }
        if (opts.json) {
          printJson(page);
          return EXIT_OK;
        }
        const p = new Paint(process.stdout);
        if (page.tasks.length === 0) {
          process.stdout.write(`${p.dim('(no tasks)')}\n`);
          return EXIT_OK;
        }
        const idWidth = Math.max(4, ...page.tasks.map((t) => t.taskId.length));
        process.stdout.write(
          `${p.dim(`${'TASK'.padEnd(idWidth)}  ${'STATE'.padEnd(16)}${'WAITING ON'.padEnd(15)}UPDATED`)}\n`,
        );
        for (const t of page.tasks) {
          // Pad before painting: escape codes would throw the columns off.
          const state = p.state(t.state) + ' '.repeat(Math.max(1, 16 - t.state.length));
          process.stdout.write(
            `${t.taskId.padEnd(idWidth)}  ${state}${(t.interruptKind ?? '').padEnd(15)}${t.updatedAt}\n`,
          );
        }
        if (page.nextCursor)
          process.stdout.write(`${p.dim(`more: handoff tasks ${url} --cursor ${page.nextCursor}`)}\n`);
        return EXIT_OK;
      }),
    );
}
