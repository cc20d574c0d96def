// The a2a.invoke node's config and its schema.
import { SCHEMA_DIALECT } from '../types.js';

export interface InvokeConfig {
  /** A name in the host's agent registry (HANDOFF_AGENTS), or an https URL (checked in full by the egress guard). */
  agent: string;
  /** Goes into message.metadata.skillId. */
  skill?: string;
  /** Template of the message's text part. */
  text?: string;
  /** Template of the message's data part (an object once rendered). */
  data?: unknown;
  /** How to learn of the peer task's changes; `auto`: every way the peer supports, polling always. */
  wait?: 'auto' | 'push' | 'stream' | 'poll';
  /** Give up (node.failed external_call_failed) when the peer task has not ended by then. */
  timeoutMs?: number;
  /**
   * The peer asks its caller for input: `clarify` opens a clarification on this run and relays the
   * answer; `wait` keeps waiting (the peer's own people answer, e.g. an approval on the peer);
   * `fail` fails the node.
   */
  onInputRequired?: 'clarify' | 'wait' | 'fail';
}

export const DEFAULT_TIMEOUT_MS = 86_400_000;

export const invokeConfigSchema = {
  $schema: SCHEMA_DIALECT,
  type: 'object',
  required: ['agent'],
  properties: {
    agent: { type: 'string', minLength: 1 },
    skill: { type: 'string', minLength: 1 },
    text: { type: 'string' },
    data: true,
    wait: { enum: ['auto', 'push', 'stream', 'poll'] },
    timeoutMs: { type: 'integer', minimum: 1 },
    onInputRequired: { enum: ['clarify', 'wait', 'fail'] },
  },
  anyOf: [{ required: ['text'] }, { required: ['data'] }],
  additionalProperties: false,
} as const;
