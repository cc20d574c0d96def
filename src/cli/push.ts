// `handoff push set|get|list|delete`: the task's push notification configs
// (0.3 tasks/pushNotificationConfig/*, 1.0 Create|Get|List|Delete TaskPushNotificationConfig). The agent's egress guard may refuse a webhook URL: its
// JSON-RPC error (code and reason) is printed and the exit code is 1.
import { Command } from 'commander';
import type { TaskPushNotificationConfig } from '../a2a/v0_3/types.js';
import { taskCommand, type ClientOptions, connect, printJson, run } from './client/command.js';
import { EXIT_OK, Paint } from './client/output.js';

interface SetOptions extends ClientOptions {
  token?: string;
  id?: string;
}

function formatConfig(c: TaskPushNotificationConfig, p: Paint): string {
  const cfg = c.pushNotificationConfig;
  const auth = cfg.authentication?.schemes?.length ? p.dim(`  auth ${cfg.authentication.schemes.join(',')}`) : '';
  return `${p.bold(cfg.id ?? '(no id)')}  ${cfg.url}${auth}`;
}

/** --json prints what the agent sent (in its version; set and get as a list of one); text, one config a line. */
function print(configs: TaskPushNotificationConfig[], wire: unknown, opts: ClientOptions, empty: string): number {
  if (opts.json) {
    printJson(wire);
    return EXIT_OK;
  }
  const p = new Paint(process.stdout);
  process.stdout.write(
    configs.length === 0 ? `${p.dim(empty)}\n` : `${configs.map((c) => formatConfig(c, p)).join('\n')}\n`,
  );
  return EXIT_OK;
}

export function pushCommand(): Command {
  const set = taskCommand('set', 'register a webhook for a task')
    .argument('<webhookUrl>', 'where the agent POSTs notifications (https)')
    .option('--token <token>', 'opaque token the agent echoes to the webhook (never shown back)')
    .option('--id <configId>', 'config id (default: the agent decides; Handoff and the SDK use the task id)')
    .action(
      run(async (url: string, taskId: string, webhookUrl: string, opts: SetOptions) => {
        const { a2a } = await connect(url, opts);
        const saved = await a2a.pushSet(taskId, {
          url: webhookUrl,
          ...(opts.id ? { id: opts.id } : {}),
          ...(opts.token ? { token: opts.token } : {}),
        });
        return print([saved.view], [saved.wire], opts, '');
      }),
    );
  const get = taskCommand('get', "show one webhook config of a task (default: the one whose id is the task's)")
    .argument('[configId]', 'config id')
    .action(
      run(async (url: string, taskId: string, configId: string | undefined, opts: ClientOptions) => {
        const { a2a } = await connect(url, opts);
        const config = await a2a.pushGet(taskId, configId);
        return print([config.view], [config.wire], opts, '');
      }),
    );
  const list = taskCommand('list', "list a task's webhook configs").action(
    run(async (url: string, taskId: string, opts: ClientOptions) => {
      const { a2a } = await connect(url, opts);
      const configs = await a2a.pushList(taskId);
      return print(configs.view, configs.wire, opts, '(no push configs)');
    }),
  );
  const del = taskCommand('delete', 'remove a webhook config')
    .argument('<configId>', 'config id')
    .action(
      run(async (url: string, taskId: string, configId: string, opts: ClientOptions) => {
        const { a2a } = await connect(url, opts);
        const result = await a2a.pushDelete(taskId, configId);
        if (opts.json) printJson(result ?? null);
        else process.stdout.write(`deleted ${configId}\n`);
        return EXIT_OK;
      }),
    );
  return new Command('push')
    .description('manage push notification webhooks of a task')
    .addCommand(set)
    .addCommand(get)
    .addCommand(list)
    .addCommand(del);
}
