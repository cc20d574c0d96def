// The `notify` setting both gates take: who is told that the gate waits for them, and how. The
// engine only validates it; the host's notifier (src/notify/) reads it from the definition when
// the gate opens or escalates, and writes the messages to its outbox in that transaction.

/** One notify entry, as a workflow file writes it. */
export type NotifyEntry =
  | { channel: 'email'; to: string[]; remindBeforeMs?: number }
  | { channel: 'webhook'; url: string; remindBeforeMs?: number }
  | { channel: 'slack'; url: string; remindBeforeMs?: number };

/** The notify settings of a gate's config. */
export interface NotifyConfig {
  notify?: NotifyEntry[];
  /** Remind every entry this long before the gate's deadline (an entry's own value wins). */
  remindBeforeMs?: number;
}

/** `to: ["approvers"]`: the gate's approvers (its approversList, or escalateTo) with an e-mail. */
export const APPROVERS = 'approvers';

const remind = { type: 'integer', minimum: 1 } as const;
const httpsUrl = { type: 'string', pattern: '^https://[^\\s]+$' } as const;

/** The JSON Schema properties of NotifyConfig, spread into each gate's config schema. */
export const NOTIFY_PROPERTIES = {
  notify: {
    type: 'array',
    minItems: 1,
    items: {
      oneOf: [
        {
          type: 'object',
          required: ['channel', 'to'],
          properties: {
            channel: { const: 'email' },
            to: {
              type: 'array',
              minItems: 1,
              uniqueItems: true,
              // An address, or the word "approvers".
              items: { type: 'string', pattern: '^(approvers|[^\\s@]+@[^\\s@]+)$' },
            },
            remindBeforeMs: remind,
          },
          additionalProperties: false,
        },
        {
          type: 'object',
          required: ['channel', 'url'],
          properties: { channel: { enum: ['webhook', 'slack'] }, url: httpsUrl, remindBeforeMs: remind },
          additionalProperties: false,
        },
      ],
    },
  },
  remindBeforeMs: remind,
} as const;

/** What the schema cannot say about the notify settings, as sentences about `config`. */
export function notifyProblems(
  c: NotifyConfig & { timeoutMs?: number; approversList?: string[]; escalateTo?: string[] },
): string[] {
  const problems: string[] = [];
  const reminds = c.remindBeforeMs !== undefined || (c.notify ?? []).some((n) => n.remindBeforeMs !== undefined);
  if (reminds && c.timeoutMs === undefined) problems.push('config.remindBeforeMs needs config.timeoutMs (a deadline)');
  if (c.remindBeforeMs !== undefined && c.notify === undefined)
    problems.push('config.remindBeforeMs needs config.notify');
  (c.notify ?? []).forEach((n, i) => {
    if (n.channel === 'email' && n.to.includes(APPROVERS) && !c.approversList && !c.escalateTo) {
      problems.push(`config.notify[${i}].to names "approvers", but the gate has no approversList or escalateTo`);
    }
  });
  return problems;
}
