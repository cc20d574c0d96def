// Agent discovery (docs/protocol/a2a.md#v03-agent-card): `<url>/.well-known/agent-card.json` (or the card URL itself
// when the argument already names a `.json`), then the JSON-RPC endpoint it declares: `card.url`
// when its transport is JSONRPC, else the first JSONRPC entry of `additionalInterfaces`.
import type { AgentCard } from '../../a2a/types.js';
import { type Connection, getJson, HttpStatusError } from './http.js';

export const WELL_KNOWN_CARD = '/.well-known/agent-card.json';
/** The pre-0.3 location, tried when the current one answers 404. */
const LEGACY_CARD = '/.well-known/agent.json';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface Agent {
  /** The URL the user gave, without a trailing slash (card URL: its origin). */
  baseUrl: string;
  cardUrl: string;
  card: AgentCard;
  /** Where JSON-RPC requests go. */
  endpoint: string;
}

/** Parse and check a user-supplied agent URL: http(s) only. */
export function parseAgentUrl(input: string): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new UsageError(`'${input}' is not a URL (expected e.g. http://127.0.0.1:8080)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`'${input}' must be an http:// or https:// URL`);
  return url;
}

/** The base URL the user means: the input without query, fragment or trailing slash. */
export function baseUrlOf(input: string): string {
  const url = parseAgentUrl(input);
  url.search = '';
  url.hash = '';
  return url.toString().replace(/\/+$/, '');
}

export async function resolveAgent(input: string, conn: Connection): Promise<Agent> {
  const url = parseAgentUrl(input);
  const direct = url.pathname.endsWith('.json');
  const baseUrl = direct ? url.origin : baseUrlOf(input);
  let cardUrl = direct ? url.toString() : baseUrl + WELL_KNOWN_CARD;
  let raw: unknown;
  try {
    raw = await getJson(cardUrl, conn);
  } catch (err) {
    if (direct || !(err instanceof HttpStatusError) || err.status !== 404) throw cardError(cardUrl, err);
    cardUrl = baseUrl + LEGACY_CARD;
    try {
      raw = await getJson(cardUrl, conn);
    } catch {
      throw cardError(baseUrl + WELL_KNOWN_CARD, err);
    }
  }
  const card = raw as AgentCard;
  if (typeof card !== 'object' || card === null || typeof card.url !== 'string') {
    throw new Error(`${cardUrl} is not an A2A agent card (no "url")`);
  }
  return { baseUrl, cardUrl, card, endpoint: jsonRpcEndpoint(card, cardUrl) };
}

function cardError(cardUrl: string, err: unknown): Error {
  if (err instanceof HttpStatusError && err.status === 404)
    return new Error(`no A2A agent card at ${cardUrl} (HTTP 404)`);
  return err as Error;
}

/** The JSON-RPC URL of a card, relative URLs resolved against the card's own URL. */
export function jsonRpcEndpoint(card: AgentCard, cardUrl: string): string {
  const isJsonRpc = (t: string | undefined) => (t ?? 'JSONRPC').toUpperCase() === 'JSONRPC';
  let target: string | undefined;
  if (isJsonRpc(card.preferredTransport)) target = card.url;
  else target = card.additionalInterfaces?.find((i) => isJsonRpc(i.transport))?.url;
  if (!target)
    throw new Error(
      `the agent at ${cardUrl} offers no JSON-RPC interface (preferredTransport ${card.preferredTransport})`,
    );
  let url: URL;
  try {
    url = new URL(target, cardUrl);
  } catch {
    throw new Error(`the agent card at ${cardUrl} has an invalid url '${target}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`the agent card at ${cardUrl} points at a non-HTTP endpoint '${target}'`);
  return url.toString();
}
