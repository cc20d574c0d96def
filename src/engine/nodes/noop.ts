// core.noop: does nothing and completes at once (the canonical conformance fixtures are built of it).
import { type NodeType, SCHEMA_DIALECT } from './types.js';

export const noop: NodeType<Record<string, never>> = {
  typeId: 'core.noop',
  inline: true,
  configSchema: { $schema: SCHEMA_DIALECT, type: 'object', additionalProperties: false },
  async execute() {
    return { kind: 'completed', output: {} };
  },
};
