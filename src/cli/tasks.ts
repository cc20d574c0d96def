// `handoff tasks <url>`: the caller's tasks, most recently changed first. Over A2A 1.0 (the default
// when the agent's card offers it) the ListTasks method; over 0.3, which has no list method,
// Handoff's own `GET /v1/a2a/tasks`, so any other 0.3 agent, or a host without that route, gets a
// clear error and exit 1.
import type { Command } from 'commander';
import type { A2ATaskState } from '../a2a/model.js';
import type { A2AClient } from './client/a2a.js';
import { baseUrlOf, UsageError } from './client/card.js';
import { clientCommand, type ClientOptions, connect, connection, printJson, run } from './client/command.js';
import { getJson, HttpStatusError } from './client/http.js';
import { cliCommand } from './client/invocation.js';
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

type Rec = Record<string, unknown>;
const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `--limit`: 1..100, or undefined. */
function pageSize(limit: string | undefined): number | undefined {
  if (limit === undefined) return undefined;
  const n = Number(limit);
  if (!Number.isSafeInteger(n) || n < 1 || n > 100)
    throw new UsageError(`--limit must be an integer 1..100, got '${limit}'`);
  return n;
}

/** 0.3: Handoff's `GET /v1/a2a/tasks`. */
async function restPage(url: string, opts: TasksOptions, limit: number | undefined): Promise<TaskPage> {
  const listUrl = new URL(baseUrlOf(url) + TASK_LIST_PATH);
  if (limit !== undefined) listUrl.searchParams.set('limit', String(limit));
  if (opts.state) listUrl.searchParams.set('state', opts.state);
  if (opts.contextId) listUrl.searchParams.set('contextId', opts.contextId);
  if (opts.cursor) listUrl.searchParams.set('cursor', opts.cursor);
  let page: TaskPage;
  try {
    page = (await getJson(listUrl.toString(), connection(opts))) as TaskPage;
  } catch (err) {
    if (err instanceof HttpStatusError && (err.status === 404 || err.status === 405)) {
      throw new Error(
        `this host offers no task list (GET ${baseUrlOf(url)}${TASK_LIST_PATH} answered HTTP ${err.status}); use \`${cliCommand()} get\` with a task id`,
      );
    }
    throw err;
  }
  if (typeof page !== 'object' || page === null || !Array.isArray(page.tasks)) {
    throw new Error(
      `this host offers no task list (GET ${baseUrlOf(url)}${TASK_LIST_PATH} did not answer {tasks: […]})`,
    );
  }
  return page;
}

/** 1.0: ListTasks, its Tasks shown as the same rows (state, interrupt kind, status time). */
async function listTasksPage(a2a: A2AClient, opts: TasksOptions, limit: number | undefined) {
  const { wire, views, nextPageToken } = await a2a.listTasks({
    ...(limit !== undefined ? { pageSize: limit } : {}),
    ...(opts.state ? { state: opts.state } : {}),
    ...(opts.contextId ? { contextId: opts.contextId } : {}),
    ...(opts.cursor ? { pageToken: opts.cursor } : {}),
  });
  const tasks: A2ATaskState[] = views.map((t) => {
    const openwop = isObject(t.metadata?.openwop) ? t.metadata.openwop : {};
    const kind = isObject(openwop.interrupt) ? openwop.interrupt.kind : undefined;
    return {
      taskId: t.id,
      runId: t.id,
      contextId: t.contextId,
      state: t.status.state as A2ATaskState['state'],
      updatedAt: t.status.timestamp ?? '',
      ...(kind === 'approval' || kind === 'clarification' ? { interruptKind: kind } : {}),
    };
  });
  return { wire, page: { tasks, ...(nextPageToken ? { nextCursor: nextPageToken } : {}) } };
}

export function tasksCommand(): Command {
  return clientCommand('tasks', `list your tasks (A2A 1.0 ListTasks; 0.3: a Handoff host's GET <url>${TASK_LIST_PATH})`)
    .argument('<url>', 'Handoff base URL')
    .option('--state <state>', 'only tasks in this state (e.g. input-required)')
    .option('--context-id <id>', 'only tasks of this context')
    .option('--limit <n>', 'page size, 1..100 (default 50)')
    .option('--cursor <cursor>', 'the next page, from a previous listing')
    .action(
      run(async (url: string, opts: TasksOptions) => {
        const limit = pageSize(opts.limit);
        let page: TaskPage;
        let wire: unknown;
        const { a2a } = await connect(url, opts);
        if (a2a.version === '1.0') ({ page, wire } = await listTasksPage(a2a, opts, limit));
        else wire = page = await restPage(url, opts, limit);
        if (opts.json) {
          printJson(wire);
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
          process.stdout.write(`${p.dim(`more: ${cliCommand()} tasks ${url} --cursor ${page.nextCursor}`)}\n`);
        return EXIT_OK;
      }),
    );
}
