// core.fail: end the run as failed with a stated code and message.
import { renderTemplate } from '../workflow/evaluate.js';
import { type NodeType, SCHEMA_DIALECT } from './types.js';

interface FailConfig {
  /** Default `workflow_failed`. */
  code?: string;
  /** Default: the node's name. */
  message?: string;
}

export const fail: NodeType<FailConfig> = {
  typeId: 'core.fail',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    properties: { code: { type: 'string', minLength: 1 }, message: { type: 'string' } },
    additionalProperties: false,
  },
  async execute({ config, scope, node }) {
    // An empty config (the canonical `conformance-failure` fixture) still fails with a structured error.
    const code = String(await renderTemplate(config.code ?? 'workflow_failed', scope));
    const message = String(await renderTemplate(config.message ?? `node "${node.name}" failed the run`, scope));
    return { kind: 'failed', error: { code, message } };
  },
};
