// The words of the run model, each defined once: approval actions and their aliases, the run's
// terminal statuses and the event types a run's log may hold.

/** The five approval actions an approval gate offers (all of them when a gate lists none). */
export const APPROVAL_ACTIONS = ['accept', 'reject', 'refine', 'edit-accept', 'ask'] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

/** Spellings accepted where an action is named: the actions, and `edit` (the interrupt schema's
 * name for `edit-accept`). */
export const APPROVAL_ACTION_NAMES: readonly string[] = [...APPROVAL_ACTIONS, 'edit'];

/** `edit` → `edit-accept`; every other name as it is (an unknown name is the caller's to refuse). */
export const normalizeApprovalAction = (name: string): string => (name === 'edit' ? 'edit-accept' : name);

/** A known action name (alias resolved), or undefined. */
export function approvalActionOf(name: string): ApprovalAction | undefined {
  const action = normalizeApprovalAction(name);
  return (APPROVAL_ACTIONS as readonly string[]).includes(action) ? (action as ApprovalAction) : undefined;
}

/** What a gate does when its deadline (`timeoutMs`) passes with no decision; `reject` by default. */
export const ON_TIMEOUT = ['reject', 'accept', 'escalate'] as const;
export type OnTimeout = (typeof ON_TIMEOUT)[number];

/** The `decidedBy` / `resolvedBy` of a resolution the deadline made (no person decided). */
export const TIMEOUT_PRINCIPAL = 'system:timeout';
