// core.delay: a durable timer. The first execution records when to wake and releases the run;
// no process is held while it sleeps, and a restart does not reset the clock.
import { renderTemplate } from '../workflow/evaluate.js';
import { type NodeType, SCHEMA_DIALECT } from './types.js';

interface DelayConfig {
  /** Milliseconds, or a template rendering to a non-negative number. */
  ms: number | string;
}

export const delay: NodeType<DelayConfig> = {
  typeId: 'core.delay',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['ms'],
    // One union type (not oneOf) so a wrong value yields one readable error.
    properties: { ms: { type: ['integer', 'string'], minimum: 0, minLength: 1 } },
    additionalProperties: false,
  },
  async execute({ config, scope, now, wakeAt }) {
    if (wakeAt !== undefined) {
      if (now >= wakeAt) return { kind: 'completed', output: { wokeAt: new Date(wakeAt).toISOString() } };
      return { kind: 'sleep', wakeAt };
    }
    const ms = Number(await renderTemplate(config.ms, scope));
    if (!Number.isFinite(ms) || ms < 0) {
      const message = `delay must be a non-negative number of ms, got ${String(ms)}`;
      return { kind: 'failed', error: { code: 'invalid_delay', message } };
    }
    if (ms === 0) return { kind: 'completed', output: { wokeAt: new Date(now).toISOString() } };
    return { kind: 'sleep', wakeAt: now + ms };
  },
};
