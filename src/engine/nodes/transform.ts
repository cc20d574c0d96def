// core.transform: render `output` (a template) as the node's output and `set` into variables.
import { renderTemplate } from '../workflow/evaluate.js';
import type { NodeExecutor } from './types.js';

export const transform: NodeExecutor = {
  inline: true,
  typeId: 'core.transform',
  async execute(ctx) {
    const config = ctx.node.config as { output?: unknown; set?: Record<string, unknown> };
    // `set` is applied first so `output` and the outgoing edge conditions see the new values.
    const vars = config.set ? ((await renderTemplate(config.set, ctx.scope)) as Record<string, unknown>) : undefined;
    const scope = vars ? { ...ctx.scope, vars: { ...ctx.scope.vars, ...vars } } : ctx.scope;
    const output = config.output === undefined ? {} : await renderTemplate(config.output, scope);
    return { kind: 'completed', output, ...(vars ? { vars } : {}) };
  },
};
