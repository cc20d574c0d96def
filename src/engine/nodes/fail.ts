// core.fail: end the run as failed with a stated code and message.
import { renderTemplate } from '../workflow/evaluate.js';
import type { NodeExecutor } from './types.js';

export const fail: NodeExecutor = {
  inline: true,
  typeId: 'core.fail',
  async execute(ctx) {
    const config = ctx.node.config as { code: string; message: string };
    const code = String(await renderTemplate(config.code, ctx.scope));
    const message = String(await renderTemplate(config.message, ctx.scope));
    return { kind: 'failed', error: { code, message } };
  },
};
