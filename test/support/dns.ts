// Name resolution for tests, through the egress guard's `lookup` seam: names answer from a table,
// so a test can make `api.handoff.test` resolve to 127.0.0.1 or `evil.handoff.test` to 10.0.0.1.
//
//   const dispatcher = createGuardedDispatcher({ policy, lookup: resolverFor({ 'api.handoff.test': '127.0.0.1' }) });
import type { ResolvedAddress, Resolver } from '../../src/egress/dispatcher.js';

/** A resolver answering from `table` (one address or several per name); other names are ENOTFOUND. */
export function resolverFor(table: Record<string, string | string[]>): Resolver {
  return async (hostname) => {
    const answer = table[hostname];
    if (answer === undefined) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    }
    return (Array.isArray(answer) ? answer : [answer]).map(
      (address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }),
    );
  };
}
