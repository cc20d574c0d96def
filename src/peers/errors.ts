// Why a call to a peer failed, in the three kinds its caller acts on differently:
//   transport  the call may not have arrived or its answer was lost: retry later (network error,
//              timeout, HTTP 429 or 5xx; `retryAfterMs` from Retry-After when the peer gave one)
//   peer       the peer answered and said no: keep its code and message (a JSON-RPC or A2A error,
//              an HTTP 4xx, or -32006 for an answer that is not valid A2A); retrying will not help
//   refused    Handoff would not make the call: the egress guard refused the address, the peer
//              redirected, or the agent name is not in the registry
// Messages name the method and URL, never a header: tokens must not reach logs through them.
import { A2A_ERROR_CODE, isRestError, toJsonRpcError } from '@a2a-js/sdk/errors';
import { EgressDeniedError } from '../egress/dispatcher.js';

export type PeerFailure =
  | { kind: 'transport'; message: string; retryAfterMs?: number }
  | { kind: 'peer'; code: number; message: string }
  | { kind: 'refused'; reason: string; code?: string };

/** The A2A code for "the agent's response is invalid"; used for answers that are not A2A. */
export const INVALID_AGENT_RESPONSE = -32006;

export class PeerError extends Error {
  override readonly name = 'PeerError';
  constructor(readonly failure: PeerFailure) {
    super(failure.kind === 'refused' ? failure.reason : failure.message);
  }
}

export const transportError = (message: string, retryAfterMs?: number): PeerError =>
  new PeerError({ kind: 'transport', message, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) });
export const peerError = (code: number, message: string): PeerError => new PeerError({ kind: 'peer', code, message });
/** `code`: the node's error code when it is not `external_call_refused` (`untrusted_peer_card`). */
export const refusedError = (reason: string, code?: string): PeerError =>
  new PeerError({ kind: 'refused', reason, ...(code !== undefined ? { code } : {}) });

/** The peer does not have the method (a 0.3 peer asked for ListTasks): no JSON-RPC method, no operation, no route. */
export const unsupported = (err: PeerError): boolean =>
  err.failure.kind === 'peer' && UNSUPPORTED_CODES.has(err.failure.code);

const UNSUPPORTED_CODES = new Set<number>([
  A2A_ERROR_CODE.METHOD_NOT_FOUND,
  A2A_ERROR_CODE.UNSUPPORTED_OPERATION,
  404,
  405,
]);

/** The causes of an error, outermost first (undici wraps socket errors in `TypeError: fetch failed`). */
function* causes(err: unknown): Generator<unknown> {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as Error).cause, depth++) yield e;
}

const isA2AError = (e: unknown): e is Error => e instanceof Error && 'toErrorInfo' in e;

/** undici's own failures: a network error, a reset while reading, a dispatcher timeout. */
const isNetworkFailure = (e: unknown): boolean =>
  e instanceof TypeError && (e.message === 'fetch failed' || e.message === 'terminated');

/** How much of a peer's own words a message keeps. */
const SAID_CHARS = 300;

/**
 * Map anything a call threw to a PeerError. `what` names the call ("POST https://…/a2a tasks/get")
 * for messages; `redact` is applied to the peer's words before they are cut (a peer may echo its
 * token, and a cut through it would keep its start). Errors that are none of the known shapes (a
 * bug here) are rethrown unchanged.
 */
export function toPeerError(
  err: unknown,
  what: string,
  timeoutMs: number,
  redact: (text: string) => string = (t) => t,
): PeerError {
  if (err instanceof PeerError) return err;
  const chain = [...causes(err)];
  const denied = chain.find((e) => e instanceof EgressDeniedError) as EgressDeniedError | undefined;
  if (denied) return refusedError(`${what}: ${denied.message}`);
  const own = chain.find((e) => e instanceof PeerError) as PeerError | undefined;
  if (own) return own;
  if (chain.some((e) => e instanceof DOMException && (e.name === 'TimeoutError' || e.name === 'AbortError'))) {
    return transportError(`${what}: no answer within ${timeoutMs} ms`);
  }
  const said = (message: string) => redact(message).slice(0, SAID_CHARS);
  // Checked before the network case: the SDK wraps an in-stream JSON-RPC error as a plain Error's cause.
  const a2a = chain.find(isA2AError);
  if (a2a) return fromA2AError(a2a, `${what}: ${said(a2a.message)}`);
  if (isNetworkFailure(err)) return transportError(`${what}: ${redact(describe(chain))}`);
  // The SDK reports answers it cannot read as SyntaxErrors (JSON) or plain Errors (the rest).
  if (err instanceof SyntaxError || (err instanceof Error && err.constructor === Error)) {
    return peerError(INVALID_AGENT_RESPONSE, `${what}: ${said(err.message)}`);
  }
  throw err;
}

/** The SDK's A2A errors: JSON-RPC keeps its wire code; REST maps to the same codes or its HTTP status. */
function fromA2AError(err: Error, message: string): PeerError {
  const { code } = toJsonRpcError(err);
  // A REST error body without a known A2A reason: the HTTP status says more than "internal error".
  const restStatus = isRestError(err) && err.name === 'A2AError' ? err.statusCode : undefined;
  return peerError(restStatus ?? code, message);
}

/** The innermost useful message: "connect ECONNREFUSED 127.0.0.1:9" rather than "fetch failed". */
function describe(chain: unknown[]): string {
  const inner = [...chain].reverse().find((e) => e instanceof Error && e.message !== '') as Error | undefined;
  return inner?.message ?? 'network error';
}
