// core.externalEvent: the run waits (`waiting-external`) until an outside system sends the event it
// names. The event resolves the interrupt when its fields match the node's `correlation` (422
// otherwise, and the run keeps waiting): on the run's interrupt route, or by the signed token the
// interrupt carries (src/engine/interrupt-tokens.ts). The node's output is the event.
import { renderTemplate } from '../workflow/evaluate.js';
import { INTERRUPT_TOKEN_PATH } from '../interrupt-tokens.js';
import { type NodeType, SCHEMA_DIALECT } from './types.js';

interface ExternalEventConfig {
  /** What the run waits for (`order.shipped`); shown on the interrupt. */
  eventType: string;
  /** Fields the event must carry with these values (templates rendered when the wait opens). */
  correlation?: Record<string, unknown>;
}

export const externalEvent: NodeType<ExternalEventConfig> = {
  typeId: 'core.externalEvent',
  // Not inline: the worker executes it, with the host's services (the token signer).
  inline: false,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['eventType'],
    properties: {
      eventType: { type: 'string', minLength: 1 },
      correlation: { type: 'object' },
    },
    additionalProperties: false,
  },
  async execute({ config, scope, runId, node, idempotencyKey, services }) {
    const correlation = (await renderTemplate(config.correlation ?? {}, scope)) as Record<string, unknown>;
    // One id per execution (run, node, ordinal): a later wait at the same node is another.
    const correlationId = idempotencyKey;
    const token = services?.interruptTokens?.issue({ runId, nodeId: node.id, correlationId });
    const data: Record<string, unknown> = { eventType: config.eventType, correlation, correlationId };
    if (token) {
      data.interruptToken = token;
      data.callbackUrl = INTERRUPT_TOKEN_PATH + token;
    }
    return { kind: 'interrupt', interrupt: { kind: 'external-event', data } };
  },
};
