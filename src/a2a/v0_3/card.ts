// The A2A v0.3 Agent Card and the RFC 0100 `a2a` discovery block, built from one options object
// so the card's streaming/pushNotifications flags always equal the block's (RFC 0152 §C MUST).
//
//   const card = buildAgentCard({ baseUrl: 'https://h.example.com', name, description, version,
//     skills, streaming: true, pushNotifications: true, requireAuth: true });
import { OPERATION_SCOPES } from '../../operation-scopes.js';
import type { AgentCard, AgentSkill, SecurityScheme } from './types.js';

export interface SkillInfo {
  id: string;
  name: string;
  description: string;
  tags?: string[];
  examples?: string[];
}

export interface AgentCardOptions {
  /** Externally reachable origin (plus any path prefix), e.g. "https://handoff.example.com". */
  baseUrl: string;
  name: string;
  description: string;
  version: string;
  skills: SkillInfo[];
  streaming: boolean;
  pushNotifications: boolean;
  requireAuth: boolean;
  /** HANDOFF_OIDC_ISSUER: the provider's discovery URL and, once known, its token endpoint. */
  oidc?: { discoveryUrl: string; tokenUrl?: string };
}

/** The version the discovery block prefers, and the card its agentCardUrl answers in. */
const PREFERRED_VERSION = '1.0';

export interface A2ADiscoveryBlock {
  supported: true;
  agentCardUrl: string;
  durableTasks: true;
  streaming: boolean;
  pushNotifications: boolean;
  /** RFC 0152 §A: the versions served, the preferred one first; the card lists the same set. */
  protocolVersions: string[];
  preferredVersion: string;
  profiles: string[];
}

/** Where JSON-RPC is served and where the card is served, relative to the base URL. */
export const A2A_RPC_PATH = '/v1/a2a';
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';

/** Trailing slashes would double up when paths are appended. */
export const origin = (baseUrl: string): string => baseUrl.replace(/\/+$/, '');

const toSkill = (s: SkillInfo): AgentSkill => {
  const skill: AgentSkill = { id: s.id, name: s.name, description: s.description, tags: s.tags ?? ['workflow'] };
  if (s.examples && s.examples.length > 0) skill.examples = s.examples;
  return skill;
};

export function buildAgentCard(opts: AgentCardOptions): AgentCard {
  // The JS SDK client posts to `card.url`, so it must be the absolute JSON-RPC endpoint.
  const url = origin(opts.baseUrl) + A2A_RPC_PATH;
  const card: AgentCard = {
    protocolVersion: '0.3.0',
    name: opts.name,
    description: opts.description,
    url,
    version: opts.version,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    capabilities: {
      streaming: opts.streaming,
      pushNotifications: opts.pushNotifications,
      // The task history of status transitions is not exposed.
      stateTransitionHistory: false,
    },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['application/json', 'text/plain'],
    skills: opts.skills.map(toSkill),
  };
  // An anonymous host (loopback / conformance interop) advertises no scheme it would not enforce.
  if (opts.requireAuth) {
    card.securitySchemes = { bearer: { type: 'http', scheme: 'bearer' }, ...oidcSchemes(opts.oidc) };
    // Alternatives: any one scheme will do.
    card.security = Object.keys(card.securitySchemes).map((name) => ({ [name]: [] }));
  }
  return card;
}

/** The provider's schemes: OpenID Connect discovery, and OAuth2 client credentials at its token endpoint. */
function oidcSchemes(oidc: AgentCardOptions['oidc']): Record<string, SecurityScheme> {
  if (!oidc) return {};
  const schemes: Record<string, SecurityScheme> = {};
  if (oidc.tokenUrl) {
    const scopes = Object.fromEntries(
      OPERATION_SCOPES.map((s) => [s, s === 'audit:read' ? 'Handoff audit:read' : `OpenWOP ${s}`]),
    );
    schemes.oauth2 = { type: 'oauth2', flows: { clientCredentials: { tokenUrl: oidc.tokenUrl, scopes } } };
  }
  schemes.oidc = { type: 'openIdConnect', openIdConnectUrl: oidc.discoveryUrl };
  return schemes;
}

export function buildA2ADiscoveryBlock(
  opts: Pick<AgentCardOptions, 'baseUrl' | 'streaming' | 'pushNotifications'>,
): A2ADiscoveryBlock {
  return {
    supported: true,
    // The card in the preferred version (RFC 0152 §C): the well-known path answers a header-less
    // request with the 0.3 card, which the 0.3 SDK clients read, and `?A2A-Version=1.0` with the
    // 1.0 card, whose supportedInterfaces list exactly protocolVersions (docs/decisions.md).
    agentCardUrl: `${origin(opts.baseUrl) + AGENT_CARD_PATH}?A2A-Version=${PREFERRED_VERSION}`,
    durableTasks: true,
    streaming: opts.streaming,
    pushNotifications: opts.pushNotifications,
    protocolVersions: ['1.0', '0.3'],
    preferredVersion: PREFERRED_VERSION,
    profiles: ['a2a-1.0', 'a2a-0.3-legacy'],
  };
}
