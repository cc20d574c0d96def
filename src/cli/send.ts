// `handoff send <url> [text]`: message/send (1.0: SendMessage) to any A2A agent (found through its card). Blocks
// until the task completes or needs input, unless --no-wait. Exit code from the task state.
import type { Command } from 'commander';
import { clientCommand, type ClientOptions, run, sendAndPrint, textAndData } from './client/command.js';

interface SendOptions extends ClientOptions {
  skill?: string;
  data?: string;
  wait?: boolean;
  contextId?: string;
}

export function sendCommand(): Command {
  return clientCommand('send', 'send a message to an A2A agent: starts a task (exit 0 completed, 3 pending, 1 failed)')
    .argument('<url>', 'agent base URL (its card is at <url>/.well-known/agent-card.json)')
    .argument('[text]', 'message text (Handoff: the run input `prompt`)')
    .option('--skill <id>', 'skill to run (message.metadata.skillId)')
    .option('--data <json>', 'a JSON object sent as a data part (Handoff: merged into the run inputs)')
    .option('--context-id <id>', 'continue this conversation context')
    .option('--no-wait', 'return at once (configuration.blocking false) instead of waiting')
    .action(
      run(async (url: string, text: string | undefined, opts: SendOptions) => {
        const parts = textAndData(text, opts.data, 'nothing to send: give a text and/or --data');
        return sendAndPrint(url, opts, parts, {
          ...(opts.skill ? { metadata: { skillId: opts.skill } } : {}),
          ...(opts.contextId ? { contextId: opts.contextId } : {}),
        });
      }),
    );
}
