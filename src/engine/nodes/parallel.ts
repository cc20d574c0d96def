// core.parallel and core.join: fork a run into branches and merge them again. The nodes themselves
// do nothing; what they mean is in the engine (src/engine/branches.ts): every outgoing edge of a
// `core.parallel` whose condition holds starts a branch, and a `core.join` fires, in the step that
// satisfies it, with `{ arrived, outputs }` as its output.
import { type NodeType, SCHEMA_DIALECT } from './types.js';

export const parallel: NodeType<Record<string, never>> = {
  typeId: 'core.parallel',
  inline: true,
  configSchema: { $schema: SCHEMA_DIALECT, type: 'object', additionalProperties: false },
  async execute() {
    return { kind: 'completed', output: {} };
  },
};

interface JoinConfig {
  mode: 'all' | 'any' | 'count';
  count?: number;
}

export const join: NodeType<JoinConfig> = {
  typeId: 'core.join',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['mode'],
    properties: { mode: { enum: ['all', 'any', 'count'] }, count: { type: 'integer', minimum: 1 } },
    additionalProperties: false,
  },
  checkConfig(config) {
    if (config.mode === 'count' && config.count === undefined) return ['config.mode "count" needs config.count'];
    if (config.mode !== 'count' && config.count !== undefined) return ['config.count is used only with mode "count"'];
    return [];
  },
  // A line only ever arrives at a join (the engine fires it); executing one means the workflow
  // led into it outside any fork, which the loader refuses.
  async execute({ node }) {
    return {
      kind: 'failed',
      error: { code: 'join_outside_parallel', message: `join '${node.id}' was reached outside a core.parallel` },
    };
  },
};
