// Capability and seam gating (docs/protocol/openwop.md#conformance-gating): a leg whose flag is not advertised in the
// ROOT `a2a` block, or whose host-sample seam answers 404/403, skips — and the runner turns the
// skip into a FAIL under --strict. Any other status is an answer from the host.
import { DIALECTS, type Dialect } from './dialect.js';
import type { LegRun, SuiteContext } from './context.js';
import type { HttpAnswer } from './http.js';

export type A2AFlag = 'durableTasks' | 'pushNotifications' | 'streaming';

export function gate(ctx: SuiteContext, leg: LegRun, flag: A2AFlag): void {
  const d = ctx.discovery;
  if (!d.block) {
    leg.skip('not-advertised', `a2a.${flag} unknown: ${d.error ?? 'the discovery document has no root a2a block'}`);
  }
  const value = d.block[flag];
  if (value !== true) {
    leg.skip(
      'not-advertised',
      `a2a.${flag} is not advertised (value: ${value === undefined ? 'absent' : JSON.stringify(value)})`,
    );
  }
}

/** A seam answering 404 or 403 is not mounted (the leg skips); anything else is an answer. */
export function seamAbsent(res: HttpAnswer): boolean {
  return res.status === 404 || res.status === 403;
}

export function skipSeamAbsent(leg: LegRun, res: HttpAnswer, what: string): never {
  leg.skip(
    'seam-absent',
    `seam absent: ${res.request} answered ${res.status} (${what}; a host serves the seams only behind its test gate, e.g. HANDOFF_TEST_SEAMS=1)`,
  );
}

/** The A2A version the discovery leg chose (0.3 if it chose none). */
export const dialectOf = (ctx: SuiteContext): Dialect => ctx.discovery.dialect ?? DIALECTS['0.3'];

/** The gated legs need the JSON-RPC URL from the card the discovery leg read. */
export function requireRpcUrl(ctx: SuiteContext, leg: LegRun): string {
  const url = ctx.discovery.rpcUrl;
  if (url) return url;
  leg.fail('the agent card names a JSON-RPC URL', {
    field: 'url',
    expected: 'an absolute JSON-RPC URL in the card at a2a.agentCardUrl',
    note: ctx.discovery.rpcUrlError ?? ctx.discovery.error ?? 'the card could not be read (see the discovery leg)',
  });
}
