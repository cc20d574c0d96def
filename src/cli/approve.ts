// `handoff approve <url> <taskId> --action …`: decide an approval gate. message/send into the task
// with a data part {action, …} (README "A2A"): accept | reject [feedback]; refine with
// refineFeedback (--data, or {scope:'whole', text: --feedback}); edit-accept with
// editedArtifactData (--data); ask with the question (--feedback) as a text part. A task waiting at
// several nodes at once (parallel branches) is decided one node at a time: --node names it, sent as
// the data part's `nodeId`. The decision is bound to the artifact read just before it
// (`expectedArtifactHash`): one that changed meanwhile is refused, not approved unseen.
import { APPROVAL_ACTIONS, type ApprovalAction } from '../engine/vocabulary.js';
import { type Command, Option } from 'commander';
import type { Part } from '../a2a/v0_3/types.js';
import { UsageError } from './client/card.js';
import * as cmd from './client/command.js';

interface ApproveOptions extends cmd.ClientOptions {
  action: ApprovalAction;
  feedback?: string;
  data?: string;
  node?: string;
  wait?: boolean;
}

/** The parts of an approval reply; `node`, when given, names the interrupt it decides. */
export function approvalParts(
  action: ApprovalAction,
  feedback: string | undefined,
  data: string | undefined,
  node?: string,
): Part[] {
  const decision: Record<string, unknown> = node === undefined ? { action } : { action, nodeId: cmd.nodeOption(node) };
  switch (action) {
    case 'accept':
    case 'reject':
      if (data !== undefined)
        throw new UsageError(
          `--data is for refine (refineFeedback) and edit-accept (editedArtifactData), not ${action}`,
        );
      if (feedback) decision.feedback = feedback;
      return [cmd.dataPart(decision)];
    case 'refine':
      if (data !== undefined) decision.refineFeedback = cmd.parseJsonObject(data);
      else if (feedback) decision.refineFeedback = { scope: 'whole', text: feedback };
      else throw new UsageError('refine needs --feedback TEXT or --data {"scope":…,"text":…} (refineFeedback)');
      if (feedback) decision.feedback = feedback;
      return [cmd.dataPart(decision)];
    case 'edit-accept':
      if (data === undefined) throw new UsageError('edit-accept needs --data JSON (the edited artifact data)');
      decision.editedArtifactData = cmd.parseJsonValue(data);
      if (feedback) decision.feedback = feedback;
      return [cmd.dataPart(decision)];
    case 'ask':
      if (data !== undefined) throw new UsageError('--data is for refine and edit-accept, not ask');
      if (!feedback) throw new UsageError('ask needs --feedback TEXT (the question)');
      return [cmd.dataPart(decision), cmd.textPart(feedback)];
  }
}

export function approveCommand(): Command {
  return cmd
    .taskCommand('approve', 'decide a task waiting for approval (exit code from the resulting state)')
    .addOption(new Option('--action <action>', 'the decision').choices([...APPROVAL_ACTIONS]).makeOptionMandatory())
    .option('--feedback <text>', 'feedback (refine: the revision request; ask: the question)')
    .option('--data <json>', 'refine: refineFeedback object; edit-accept: the edited artifact data')
    .option('--node <id>', 'the node to decide at, when the task waits at several (parallel branches)')
    .option('--no-wait', 'return at once instead of waiting for the task to settle')
    .action(
      cmd.run(async (url: string, taskId: string, opts: ApproveOptions) => {
        const parts = approvalParts(opts.action, opts.feedback, opts.data, opts.node);
        return cmd.sendDecision(url, opts, parts, { taskId }, opts.node);
      }),
    );
}
