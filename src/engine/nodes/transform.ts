// core.transform: render `output` (a template) as the node's output and `set` into variables.
import { spread } from '../spread.js';
import { renderTemplate } from '../workflow/evaluate.js';
import { NAME_PATTERN, type NodeType, SCHEMA_DIALECT } from './types.js';

interface TransformConfig {
  /** Template rendered into the node's output (absent: output is {}). */
  output?: unknown;
  /** Variable name → template; the rendered values are merged into `scope.vars`. */
  set?: Record<string, unknown>;
}

export const transform: NodeType<TransformConfig> = {
  typeId: 'core.transform',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    properties: {
      output: true,
      set: { type: 'object', propertyNames: { pattern: NAME_PATTERN } },
    },
    additionalProperties: false,
  },
  async execute({ config, scope }) {
    // `set` is applied first so `output` and the outgoing edge conditions see the new values.
    const vars = config.set ? ((await renderTemplate(config.set, scope)) as Record<string, unknown>) : undefined;
    const seen = vars ? spread(scope, { vars: spread(scope.vars, vars) }) : scope;
    const output = config.output === undefined ? {} : await renderTemplate(config.output, seen);
    return vars ? { kind: 'completed', output, vars } : { kind: 'completed', output };
  },
};
