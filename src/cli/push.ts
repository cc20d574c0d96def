// `handoff push set|get|list|delete`: the task's push notification configs
// (tasks/pushNotificationConfig/*). The agent's egress guard may refuse a webhook URL: its
// JSON-RPC error (code and reason) is printed and the exit code is 1.
import { Command } from 'commander';
import type { TaskPushNotificationConfig } from '../a2a/types.js';
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

function print(configs: TaskPushNotificationConfig[], opts: ClientOptions, empty: string): number {
  if (opts.json) {
    printJson(configs);
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
        const { rpc } = await connect(url, opts);
        const pushNotificationConfig = {
          url: webhookUrl,
          ...(opts.id ? { id: opts.id } : {}),
          ...(opts.token ? { token: opts.token } : {}),
        };
        const saved = await rpc.call<TaskPushNotificationConfig>('tasks/pushNotificationConfig/set', {
          taskId,
          pushNotificationConfig,
        });
        return print([saved], opts, '');
      }),
    );
  const get = taskCommand('get', "show one webhook config of a task (default: the one whose id is the task's)")
    .argument('[configId]', 'config id')
    .action(
      run(async (url: string, taskId: string, configId: string | undefined, opts: ClientOptions) => {
        const { rpc } = await connect(url, opts);
        const config = await rpc.call<TaskPushNotificationConfig>('tasks/pushNotificationConfig/get', {
          id: taskId,
          ...(configId ? { pushNotificationConfigId: configId } : {}),
        });
        return print([config], opts, '');
      }),
    );
  const list = taskCommand('list', "list a task's webhook configs").action(
    run(async (url: string, taskId: string, opts: ClientOptions) => {
      const { rpc } = await connect(url, opts);
      const configs = await rpc.call<TaskPushNotificationConfig[]>('tasks/pushNotificationConfig/list', {
        id: taskId,
      });
      return print(Array.isArray(configs) ? configs : [], opts, '(no push configs)');
    }),
  );
  const del = taskCommand('delete', 'remove a webhook config')
    .argument('<configId>', 'config id')
    .action(
      run(async (url: string, taskId: string, configId: string, opts: ClientOptions) => {
        const { rpc } = await connect(url, opts);
        const result = await rpc.call('tasks/pushNotificationConfig/delete', {
          id: taskId,
          pushNotificationConfigId: configId,
        });
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
