// Agent discovery (docs/protocol/a2a.md#v03-agent-card, #v10-agent-card): `<url>/.well-known/agent-card.json`
// (or the card URL itself when the argument already names a `.json`), then the version and JSON-RPC
// endpoint to speak. A2A 1.0 when the card's `supportedInterfaces` lists a JSONRPC interface of
// protocolVersion 1.x (or when --a2a-version 1.0 asks for it), else 0.3: `card.url` when its transport
// is JSONRPC, else the first JSONRPC entry of `additionalInterfaces` (or of `supportedInterfaces`).
import type { AgentCard } from '../../a2a/v0_3/types.js';
import type { A2AVersion } from './a2a.js';
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
  /** The A2A version spoken at `endpoint`. */
  version: A2AVersion;
}

/** A 1.0 card entry (the hybrid card Handoff serves 0.3 clients has them too). */
interface SupportedInterface {
  url?: unknown;
  protocolBinding?: unknown;
  protocolVersion?: unknown;
}

type AnyCard = AgentCard & { supportedInterfaces?: SupportedInterface[] };

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

export async function resolveAgent(input: string, conn: Connection, want?: A2AVersion): Promise<Agent> {
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
  const card = raw as AnyCard;
  if (
    typeof card !== 'object' ||
    card === null ||
    (typeof card.url !== 'string' && !Array.isArray(card.supportedInterfaces))
  ) {
    throw new Error(`${cardUrl} is not an A2A agent card (no "url" and no "supportedInterfaces")`);
  }
  return { baseUrl, cardUrl, card, ...pickInterface(card, cardUrl, want) };
}

/** The first JSONRPC entry of `supportedInterfaces` whose protocolVersion is `major.`x. */
function jsonRpcInterface(card: AnyCard, major: '0.3' | '1'): SupportedInterface | undefined {
  const list = Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : [];
  return list.find(
    (i) =>
      typeof i?.url === 'string' &&
      String(i.protocolBinding).toUpperCase() === 'JSONRPC' &&
      typeof i.protocolVersion === 'string' &&
      (major === '1' ? /^1\./.test(i.protocolVersion) : /^0\.3(\.|$)/.test(i.protocolVersion)),
  );
}

/** The version to speak and its endpoint: `want`, else 1.0 when the card offers it, else 0.3. */
export function pickInterface(
  card: AnyCard,
  cardUrl: string,
  want?: A2AVersion,
): { version: A2AVersion; endpoint: string } {
  const v1 = jsonRpcInterface(card, '1');
  if (want === '1.0' || (want === undefined && v1)) {
    if (!v1)
      throw new Error(
        `the agent at ${cardUrl} offers no A2A 1.0 JSON-RPC interface (no supportedInterfaces entry with protocolVersion 1.x and protocolBinding JSONRPC); use --a2a-version 0.3`,
      );
    return { version: '1.0', endpoint: checkedUrl(v1.url as string, cardUrl) };
  }
  if (typeof card.url === 'string') return { version: '0.3', endpoint: jsonRpcEndpoint(card, cardUrl) };
  const v03 = jsonRpcInterface(card, '0.3');
  if (!v03) throw new Error(`the agent at ${cardUrl} offers no A2A 0.3 JSON-RPC interface; use --a2a-version 1.0`);
  return { version: '0.3', endpoint: checkedUrl(v03.url as string, cardUrl) };
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
  return checkedUrl(target, cardUrl);
}

/** An endpoint of the card, resolved against the card's own URL; http(s) only. */
function checkedUrl(target: string, cardUrl: string): string {
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
