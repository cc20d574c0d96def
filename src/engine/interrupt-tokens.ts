// Signed callback tokens of external-event interrupts (OpenWOP interrupt.md §Signed-token
// callback): the token names one wait — run, node, and the correlation id of that execution — and
// carries an HMAC by a key of this host, so a caller who holds it may resolve that wait and no
// other. Stateless: nothing is stored; the route that takes a token (`POST /v1/interrupts/{token}`)
// verifies it, then resolves the run's open interrupt at that node if its correlation id is the
// token's (a later wait at the same node has another).
//
//   const tokens = hmacInterruptTokens(hostKey);
//   const token = tokens.issue({ runId, nodeId, correlationId });
//   tokens.verify(token);  // → the same reference, or undefined (malformed, forged)
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The wait a token names. */
export interface InterruptRef {
  runId: string;
  nodeId: string;
  correlationId: string;
}

export interface InterruptTokens {
  issue(ref: InterruptRef): string;
  verify(token: string): InterruptRef | undefined;
}

/** Where a token is answered (the route is served by the decision-links part of the host). */
export const INTERRUPT_TOKEN_PATH = '/v1/interrupts/';

export function hmacInterruptTokens(hostKey: Buffer): InterruptTokens {
  // A key of its own, derived from the host key, so a token is no other signature of this host.
  const key = createHmac('sha256', hostKey).update('openwop-interrupt-token-v1').digest();
  const sign = (body: string) => createHmac('sha256', key).update(body).digest('base64url');
  return {
    issue(ref) {
      const body = Buffer.from(JSON.stringify([ref.runId, ref.nodeId, ref.correlationId])).toString('base64url');
      return `${body}.${sign(body)}`;
    },
    verify(token) {
      const [body, mac, ...rest] = token.split('.');
      if (!body || !mac || rest.length > 0) return undefined;
      const expected = Buffer.from(sign(body));
      const given = Buffer.from(mac);
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
      try {
        const parsed: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
        if (!Array.isArray(parsed) || parsed.length !== 3 || !parsed.every((p) => typeof p === 'string'))
          return undefined;
        const [runId, nodeId, correlationId] = parsed as [string, string, string];
        return { runId, nodeId, correlationId };
      } catch {
        return undefined;
      }
    },
  };
}
