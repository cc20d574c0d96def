// core.delay: a durable timer. The first execution records when to wake and releases the run;
// no process is held while it sleeps, and a restart does not reset the clock.
import { renderTemplate } from '../workflow/evaluate.js';
import type { NodeExecutor } from './types.js';

export const delay: NodeExecutor = {
  inline: true,
  typeId: 'core.delay',
  async execute(ctx) {
    if (ctx.wakeAt !== undefined) {
      if (ctx.now >= ctx.wakeAt) return { kind: 'completed', output: { wokeAt: new Date(ctx.wakeAt).toISOString() } };
      return { kind: 'sleep', wakeAt: ctx.wakeAt };
    }
    const ms = Number(await renderTemplate((ctx.node.config as { ms: unknown }).ms, ctx.scope));
    if (!Number.isFinite(ms) || ms < 0) {
      return {
        kind: 'failed',
        error: { code: 'invalid_delay', message: `delay must be a non-negative number of ms, got ${String(ms)}` },
      };
    }
    if (ms === 0) return { kind: 'completed', output: { wokeAt: new Date(ctx.now).toISOString() } };
    return { kind: 'sleep', wakeAt: ctx.now + ms };
  },
};
