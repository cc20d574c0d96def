// `handoff answer <url> <taskId> "text"`: reply to a task waiting for input (a clarification):
// message/send into the task with a text part (and/or --data, e.g. {"answers":{"name":"Ada"}}).
import type { Command } from 'commander';
import type { Part } from '../a2a/types.js';
import { UsageError } from './client/card.js';
import {
  clientCommand,
  type ClientOptions,
  connect,
  dataPart,
  parseJsonObject,
  printResult,
  run,
  sendConfiguration,
  textPart,
  userMessage,
} from './client/command.js';

interface AnswerOptions extends ClientOptions {
  data?: string;
  wait?: boolean;
}

export function answerCommand(): Command {
  return clientCommand('answer', 'reply to a task that is waiting for input (exit code from the resulting state)')
    .argument('<url>', 'agent base URL')
    .argument('<taskId>', 'task id')
    .argument('[text]', 'the answer')
    .option('--data <json>', 'a JSON object sent as a data part (Handoff: {"answers": {"<questionId>": "…"}})')
    .option('--no-wait', 'return at once instead of waiting for the task to settle')
    .action(
      run(async (url: string, taskId: string, text: string | undefined, opts: AnswerOptions) => {
        const parts: Part[] = [];
        if (text !== undefined && text !== '') parts.push(textPart(text));
        if (opts.data !== undefined) parts.push(dataPart(parseJsonObject(opts.data)));
        if (parts.length === 0) throw new UsageError('nothing to answer: give a text and/or --data');
        const { rpc } = await connect(url, opts);
        const result = await rpc.call('message/send', {
          message: userMessage(parts, { taskId }),
          ...sendConfiguration(opts.wait),
        });
        return printResult(result, opts, url);
      }),
    );
}
