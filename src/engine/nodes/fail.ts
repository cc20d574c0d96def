// core.fail: end the run as failed with a stated code and message.
import { renderTemplate } from '../workflow/evaluate.js';
import { type NodeType, SCHEMA_DIALECT } from './types.js';

interface FailConfig {
  code: string;
  message: string;
}

export const fail: NodeType<FailConfig> = {
  typeId: 'core.fail',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['code', 'message'],
    properties: { code: { type: 'string', minLength: 1 }, message: { type: 'string' } },
    additionalProperties: false,
  },
  async execute({ config, scope }) {
    const code = String(await renderTemplate(config.code, scope));
    const message = String(await renderTemplate(config.message, scope));
    return { kind: 'failed', error: { code, message } };
  },
};
