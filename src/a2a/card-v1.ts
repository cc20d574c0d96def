// The agent card for both protocol versions, chosen by the request's A2A-Version (versions.ts,
// `cardVersion`); the route sends `Vary: A2A-Version` because the body depends on it.
//
// - 1.0 clients get the 1.0 card (ProtoJSON): `supportedInterfaces` in order of preference —
//   JSON-RPC 1.0, HTTP+JSON 1.0, JSON-RPC 0.3 — and security schemes as oneof wrappers.
// - 0.3 clients (no header) get the hybrid card the official SDKs serve them: the 0.3 card of
//   card.ts (`url`, `preferredTransport`, `additionalInterfaces`, `protocolVersion`, 0.3 security)
//   plus the same `supportedInterfaces`, so a 1.x client that fetched it still finds 1.0.
//
// JSON-RPC 0.3 and 1.0 share one URL: the method name and A2A-Version tell them apart.
import { A2A_RPC_PATH, type AgentCardOptions, buildAgentCard, origin } from './v0_3/card.js';
import { A2A_REST_PATH } from './codec/rest.js';
import type { AgentCard, SecurityScheme } from './v0_3/types.js';
import type { ProtocolVersion } from './versions.js';

export interface V1AgentInterface {
  url: string;
  protocolBinding: 'JSONRPC' | 'HTTP+JSON';
  protocolVersion: string;
}

/** proto SecurityScheme: a oneof, written as its member. */
export type V1SecurityScheme =
  | { httpAuthSecurityScheme: { scheme: string; bearerFormat?: string; description?: string } }
  | { apiKeySecurityScheme: { location: string; name: string; description?: string } }
  | {
      oauth2SecurityScheme: {
        flows: { clientCredentials: { tokenUrl: string; scopes: Record<string, string> } };
        description?: string;
      };
    }
  | { openIdConnectSecurityScheme: { openIdConnectUrl: string; description?: string } };

export interface V1AgentCard {
  name: string;
  description: string;
  supportedInterfaces: V1AgentInterface[];
  version: string;
  capabilities: { streaming: boolean; pushNotifications: boolean; extendedAgentCard: boolean };
  securitySchemes?: Record<string, V1SecurityScheme>;
  securityRequirements?: Array<{ schemes: Record<string, { list: string[] }> }>;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentCard['skills'];
}

export type HybridAgentCard = AgentCard & { supportedInterfaces: V1AgentInterface[] };

function supportedInterfaces(baseUrl: string): V1AgentInterface[] {
  const jsonRpc = origin(baseUrl) + A2A_RPC_PATH;
  return [
    { url: jsonRpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: origin(baseUrl) + A2A_REST_PATH, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    { url: jsonRpc, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
  ];
}

/** The card a request of `version` gets. */
export function agentCardFor(version: '0.3', opts: AgentCardOptions): HybridAgentCard;
export function agentCardFor(version: '1.0', opts: AgentCardOptions): V1AgentCard;
export function agentCardFor(version: ProtocolVersion, opts: AgentCardOptions): HybridAgentCard | V1AgentCard;
export function agentCardFor(version: ProtocolVersion, opts: AgentCardOptions): HybridAgentCard | V1AgentCard {
  return version === '0.3' ? buildHybridAgentCard(opts) : buildAgentCardV1(opts);
}

function buildHybridAgentCard(opts: AgentCardOptions): HybridAgentCard {
  return { ...buildAgentCard(opts), supportedInterfaces: supportedInterfaces(opts.baseUrl) };
}

/** The 1.0 card, from the same options as the 0.3 one, so both always say the same. */
function buildAgentCardV1(opts: AgentCardOptions): V1AgentCard {
  const v03 = buildAgentCard(opts);
  const card: V1AgentCard = {
    name: v03.name,
    description: v03.description,
    supportedInterfaces: supportedInterfaces(opts.baseUrl),
    version: v03.version,
    // No extended card: GetExtendedAgentCard is then -32004 in 1.0 (capability not declared).
    capabilities: { streaming: opts.streaming, pushNotifications: opts.pushNotifications, extendedAgentCard: false },
    defaultInputModes: v03.defaultInputModes,
    defaultOutputModes: v03.defaultOutputModes,
    skills: v03.skills,
  };
  if (v03.securitySchemes) {
    card.securitySchemes = Object.fromEntries(
      Object.entries(v03.securitySchemes).map(([name, scheme]) => [name, securitySchemeV1(scheme)]),
    );
  }
  if (v03.security) {
    card.securityRequirements = v03.security.map((req) => ({
      schemes: Object.fromEntries(Object.entries(req).map(([name, scopes]) => [name, { list: scopes }])),
    }));
  }
  return card;
}

function securitySchemeV1(s: SecurityScheme): V1SecurityScheme {
  const description = s.description === undefined ? {} : { description: s.description };
  if (s.type === 'http') {
    const bearerFormat = s.bearerFormat === undefined ? {} : { bearerFormat: s.bearerFormat };
    return { httpAuthSecurityScheme: { scheme: s.scheme, ...bearerFormat, ...description } };
  }
  if (s.type === 'oauth2') return { oauth2SecurityScheme: { flows: s.flows, ...description } };
  if (s.type === 'openIdConnect') {
    return { openIdConnectSecurityScheme: { openIdConnectUrl: s.openIdConnectUrl, ...description } };
  }
  return { apiKeySecurityScheme: { location: s.in, name: s.name, ...description } };
}
