// core.delay: a durable timer. The first execution records when to wake and releases the run;
// no process is held while it sleeps, and a restart does not reset the clock.
import type { PortValue } from '../workflow/definition.js';
import { renderTemplate } from '../workflow/evaluate.js';
import { type EvalScope, type NodeType, SCHEMA_DIALECT } from './types.js';

interface DelayConfig {
  /** Milliseconds, or a template rendering to a non-negative number. Absent: the `delayMs` input. */
  ms?: number | string;
}

export const delay: NodeType<DelayConfig> = {
  typeId: 'core.delay',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    // One union type (not oneOf) so a wrong value yields one readable error.
    properties: { ms: { type: ['integer', 'string'], minimum: 0, minLength: 1 } },
    additionalProperties: false,
  },
  checkConfig(config, { inputs }) {
    if (config.ms !== undefined) return [];
    const port = inputs.delayMs;
    if (!port) return ['config.ms or inputs.delayMs is required'];
    if (port.type !== 'static' && port.type !== 'variable')
      return ['inputs.delayMs must be a static value or a variable'];
    return [];
  },
  async execute({ config, node, scope, now, wakeAt }) {
    if (wakeAt !== undefined) {
      if (now >= wakeAt) return { kind: 'completed', output: { wokeAt: new Date(wakeAt).toISOString() } };
      return { kind: 'sleep', wakeAt };
    }
    const raw =
      config.ms !== undefined ? await renderTemplate(config.ms, scope) : delayInput(node.inputs.delayMs, scope);
    const ms = Number(raw);
    if (!Number.isFinite(ms) || ms < 0) {
      const message = `delay must be a non-negative number of ms, got ${String(raw)}`;
      return { kind: 'failed', error: { code: 'invalid_delay', message } };
    }
    if (ms === 0) return { kind: 'completed', output: { wokeAt: new Date(now).toISOString() } };
    return { kind: 'sleep', wakeAt: now + ms };
  },
};

/**
 * The `delayMs` input port (the canonical `conformance-delay` and `conformance-cancellable`
 * fixtures): a static value, or a variable, where the run's input of that name wins over the
 * variable's default (the fixtures document `inputs.delayMs` as the caller's knob).
 */
function delayInput(port: PortValue | undefined, scope: EvalScope): unknown {
  if (port?.type === 'static') return port.value;
  if (port?.type !== 'variable') return undefined;
  const name = port.variableName;
  return Object.hasOwn(scope.inputs, name) ? scope.inputs[name] : scope.vars[name];
}
