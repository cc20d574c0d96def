// `handoff answer <url> <taskId> "text"`: reply to a task waiting for input (a clarification):
// message/send into the task with a text part (and/or --data, e.g. {"answers":{"name":"Ada"}}).
// --node names the node answered when the task waits at several (message metadata openwop.nodeId).
// The answer is bound to the questions read just before it (`expectedArtifactHash`).
import type { Command } from 'commander';
import { taskCommand, type ClientOptions, nodeOption, run, sendDecision, textAndData } from './client/command.js';

interface AnswerOptions extends ClientOptions {
  data?: string;
  node?: string;
  wait?: boolean;
}

export function answerCommand(): Command {
  return taskCommand('answer', 'reply to a task that is waiting for input (exit code from the resulting state)')
    .argument('[text]', 'the answer')
    .option('--data <json>', 'a JSON object sent as a data part (Handoff: {"answers": {"<questionId>": "…"}})')
    .option('--node <id>', 'the node to answer at, when the task waits at several (parallel branches)')
    .option('--no-wait', 'return at once instead of waiting for the task to settle')
    .action(
      run(async (url: string, taskId: string, text: string | undefined, opts: AnswerOptions) => {
        const parts = textAndData(text, opts.data, 'nothing to answer: give a text and/or --data');
        const metadata = opts.node === undefined ? {} : { metadata: { openwop: { nodeId: nodeOption(opts.node) } } };
        return sendDecision(url, opts, parts, { taskId, ...metadata }, opts.node);
      }),
    );
}
