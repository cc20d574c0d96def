// What a registry entry adds to the fetch its peer is called with: its credentials (a static bearer
// token, or a client-credentials access token fetched when needed and once more after a 401), and,
// with `cardKeys`, the check of the card before the SDK reads it. Neither an access token nor a
// pinned entry's static token rides on the card request: the card is read, and for a pinned entry
// verified, before any credential leaves the host (no token goes to an impostor).
//
//   const fetchImpl = pinnedCard(byOrigin(origins, authorized(peerFetch(…), entry, tokens, pool), guarded), entry);
import type { Dispatcher } from 'undici';
import { TokenError, type OutboundAuth, type TokenSource } from '../calls/client-credentials.js';
import { verifyCard } from './card-trust.js';
import { PeerError, refusedError, transportError } from './errors.js';
import { shownUrl } from './http.js';
import type { AgentEntry } from './registry.js';

/** The error code a node fails with when a pinned agent's card does not verify. */
export const UNTRUSTED_PEER_CARD = 'untrusted_peer_card';

const urlOf = (input: string | URL | Request): string =>
  typeof input === 'string' || input instanceof URL ? String(input) : input.url;

/** `fetchImpl` with the entry's credentials on every request but (for a pinned or OAuth2 entry) the card's. */
export function authorized(
  fetchImpl: typeof fetch,
  entry: AgentEntry,
  tokens: TokenSource,
  dispatcher: Dispatcher,
): typeof fetch {
  const auth: OutboundAuth | undefined = entry.clientCredentials
    ? entry.clientCredentials
    : entry.token !== undefined
      ? { type: 'bearer', token: entry.token }
      : undefined;
  if (auth === undefined) return fetchImpl;
  const bareCard = entry.cardKeys !== undefined || auth.type !== 'bearer';
  const send = async (input: string | URL | Request, init: RequestInit | undefined): Promise<Response> => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', await header(tokens, auth, dispatcher, entry.name));
    return fetchImpl(input, { ...init, headers });
  };
  const call = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (bareCard && sameUrl(urlOf(input), entry.cardUrl)) return fetchImpl(input, init);
    if (auth.type === 'bearer') return send(input, init);
    // A 401 may be a token the peer stopped taking before it expired (a key rotated): fetch anew, once.
    try {
      const res = await send(input, init);
      if (res.status !== 401) return res;
      await res.body?.cancel();
    } catch (err) {
      if (!(err instanceof PeerError && err.failure.kind === 'peer' && err.failure.code === 401)) throw err;
    }
    tokens.forget(auth);
    return send(input, init);
  };
  return call as typeof fetch;
}

async function header(tokens: TokenSource, auth: OutboundAuth, dispatcher: Dispatcher, name: string) {
  try {
    return await tokens.authorization(auth, dispatcher);
  } catch (err) {
    if (!(err instanceof TokenError)) throw err;
    const why = `agent '${name}': no access token: ${err.message}`;
    throw err.retryable ? transportError(why) : refusedError(why);
  }
}

/**
 * `fetchImpl` that, for an entry with `cardKeys`, reads the card answer and refuses it (a PeerError
 * `untrusted_peer_card` naming the agent) unless a pinned key verifies one of its signatures.
 */
export function pinnedCard(fetchImpl: typeof fetch, entry: AgentEntry): typeof fetch {
  const pinned = entry.cardKeys;
  if (pinned === undefined) return fetchImpl;
  const call = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetchImpl(input, init);
    if (!sameUrl(urlOf(input), entry.cardUrl) || !res.ok) return res;
    const text = await res.text();
    let card: unknown;
    try {
      card = JSON.parse(text);
    } catch {
      card = undefined;
    }
    const verdict = await verifyCard(card, pinned);
    if (!verdict.ok) {
      throw refusedError(
        `agent '${entry.name}': its card at ${shownUrl(entry.cardUrl)} is not trusted (cardKeys): ${verdict.why}`,
        UNTRUSTED_PEER_CARD,
      );
    }
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return call as typeof fetch;
}

function sameUrl(a: string, b: string): boolean {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.origin === y.origin && x.pathname === y.pathname;
  } catch {
    return false;
  }
}
