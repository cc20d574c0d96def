// One typed configuration, from flags and their environment twins (flags win).
import { existsSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ipaddr from 'ipaddr.js';
import { type LlmProvider, parseLlmProviders } from './calls/llm-providers.js';
import { parseHostPattern } from './egress/address.js';
import { OPERATION_SCOPES } from './operation-scopes.js';
import { loadSecrets, type SecretStore } from './secrets/store.js';
import { type AgentEntry, parseAgentRegistry, parseAgentsFile, registryCredentials } from './peers/registry.js';
import { tracingConfigured } from './telemetry/sdk.js';

export interface ApiKeyIdentity {
  tenantId: string;
  principalId: string;
  /** An operator's key: reads the audit log of every tenant (`GET /v1/audit`). */
  admin?: boolean;
  /** Where notifications to this principal go (`to: ["approvers"]`, src/notify/). */
  email?: string;
  /**
   * The OpenWOP scopes the key is limited to (`runs:read`, `approvals:respond`, … src/http/scopes.ts),
   * as a scoped token is; absent, the key may do everything its tenant may.
   */
  scopes?: string[];
  /** The approver groups the key's principal is in (a gate's `approverGroupRefs`, RFC 0104); JSON form only. */
  groups?: string[];
  /** The approver roles the key's principal holds (a gate's `approverRoleRefs`, RFC 0104); JSON form only. */
  roles?: string[];
}

/** HANDOFF_OIDC_ISSUER and its companions (src/http/oidc.ts checks tokens with them). */
export interface OidcSettings {
  /** HANDOFF_OIDC_ISSUER: exactly as the provider spells `iss` (no trailing slash is added or removed). */
  issuer: string;
  /** HANDOFF_OIDC_AUDIENCE: the `aud` every token must carry. */
  audience: string;
  /** HANDOFF_OIDC_TENANT_CLAIM (default `tenant`): the claim naming the caller's tenant. */
  tenantClaim: string;
  /** HANDOFF_OIDC_SCOPES_CLAIM: when set, the claim whose scopes gate operations (src/http/scopes.ts). */
  scopesClaim?: string;
  /** HANDOFF_OIDC_GROUPS_CLAIM: when set, the claim naming the caller's approver groups (a gate's `approverGroupRefs`). */
  groupsClaim?: string;
  /** HANDOFF_OIDC_ROLES_CLAIM: when set, the claim naming the caller's approver roles (a gate's `approverRoleRefs`). */
  rolesClaim?: string;
  /** HANDOFF_OIDC_JWKS_COOLDOWN_MS: the least time between two fetches of the keys (default 30 s). */
  jwksCooldownMs: number;
  /** HANDOFF_OIDC_CONSOLE_CLIENT_ID: the public client the web console signs in as (code + PKCE). */
  consoleClientId?: string;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl?: string;
  /** PostgreSQL schema (HANDOFF_PG_SCHEMA); lets several hosts or test suites share a server. */
  pgSchema?: string;
  /**
   * The store's PostgreSQL pool (HANDOFF_PG_POOL_SIZE). The bus adds one LISTEN connection and a
   * NOTIFY pool of at most two (src/bus/pg.ts): up to pgPoolSize + 3 connections per instance.
   */
  pgPoolSize: number;
  workflowDirs: string[];
  /**
   * Seed the canonical OpenWOP `conformance-*` fixtures and advertise them, and mount the RFC 0100
   * seams (HANDOFF_CONFORMANCE_FIXTURES=1).
   */
  conformanceFixtures: boolean;
  /** A refused workflow file stops the host (`--strict-workflows`, HANDOFF_STRICT_WORKFLOWS=1); default: it is listed. */
  strictWorkflows: boolean;
  retentionDays: number;
  /** API key → identity. Empty (and no oidc): no authentication, loopback only. */
  apiKeys: Map<string, ApiKeyIdentity>;
  /** HANDOFF_OIDC_*: the provider whose JWT access tokens are accepted beside API keys. */
  oidc?: OidcSettings;
  /** HANDOFF_CARD_SIGNING_KEY_FILE: PEM private key(s) that sign the agent cards (the last one signs). */
  cardSigningKeyFile?: string;
  publicUrl?: string;
  defaultSkill: string;
  testSeams: boolean;
  leaseMs: number;
  pollMs: number;
  /** Branches one run may have live at once (HANDOFF_MAX_BRANCHES): a fork past it fails the run. */
  maxBranches: number;
  logLevel: string;
  /** OpenTelemetry traces are exported (an OTLP endpoint is set in the standard variables). */
  tracing: boolean;
  sqliteSynchronous: 'NORMAL' | 'FULL';
  bodyLimit: number;
  instanceId: string;
  push: {
    /** CIDRs the egress guard lets pushes reach although private (operator allowlist). */
    allowCidrs: string[];
    /** Extra CA (PEM file) trusted for push receivers; replaces the public roots. */
    caFile?: string;
    /** Backoff ceilings; their count is the number of retries before the dead letter. */
    retrySchedule: string;
    /** Base64 of 32 bytes; else a key file in the data directory. */
    secretKey?: string;
    /**
     * How long a worker holds a claimed delivery (HANDOFF_PUSH_LEASE_MS). Longer than one attempt,
     * or another instance would send the same delivery again while the first is still trying.
     */
    leaseMs: number;
  };
  /**
   * SSE: keepalive comment interval, the per-connection buffer cap (which the first frame must fit),
   * the host-wide cap on open streams and on bytes buffered for all of them together.
   */
  sse: {
    keepaliveMs: number;
    maxBufferedBytes: number;
    /** A stream whose buffer makes no progress this long is destroyed (HANDOFF_SSE_STALL_MS). */
    stallMs: number;
    maxStreams: number;
    maxTotalBufferedBytes: number;
  };
  /** Request bodies (and so run inputs) may nest JSON at most this deep (HANDOFF_JSON_MAX_DEPTH). */
  jsonMaxDepth: number;
  /**
   * Bytes of JSON one page of a list may hold (HANDOFF_LIST_MAX_BYTES): a page ends early, with
   * its next-page token, before an item would pass it; a larger item comes alone on its page.
   */
  listMaxBytes: number;
  /** Origins a browser may call from (HANDOFF_CORS_ORIGINS); empty: CORS closed. `*` only with API keys. */
  corsOrigins: string[];
  /** Host names requests may carry besides loopback and the public URL's (HANDOFF_ALLOWED_HOSTS); `*`: any. */
  allowedHosts: string[];
  /** Quotas that keep one tenant from starving the others. */
  quotas: {
    /** Push configs one task may have (HANDOFF_PUSH_MAX_CONFIGS_PER_TASK). */
    pushConfigsPerTask: number;
    /** Requests per tenant per window (HANDOFF_TENANT_RATE); undefined: no limit. */
    tenantRate?: { max: number; windowMs: number };
    /** Non-terminal runs one tenant may have (HANDOFF_TENANT_MAX_ACTIVE_RUNS); undefined: no limit. */
    tenantMaxActiveRuns?: number;
  };
  /**
   * What outbound calls (http.request, llm.chat) may reach besides public https; pushes keep their
   * own list (push.allowCidrs).
   */
  egress: {
    /** CIDRs calls may reach although private (HANDOFF_EGRESS_ALLOW_CIDRS). */
    allowCidrs: string[];
    /** Hosts calls may reach over plain http and at any address (HANDOFF_EGRESS_ALLOW_HOSTS). */
    allowHosts: string[];
    /** Extra CA (PEM file) trusted for calls (HANDOFF_EGRESS_CA_FILE); replaces the public roots. */
    caFile?: string;
  };
  /** Named Chat Completions endpoints (HANDOFF_LLM_PROVIDERS). */
  llmProviders: Map<string, LlmProvider>;
  /** Values of the secrets workflows name (HANDOFF_SECRET_<NAME>, HANDOFF_SECRETS_FILE). */
  secrets: SecretStore;
  /** Serve HTTPS with this PEM certificate and key (--tls-cert / --tls-key); plain HTTP without. */
  tls?: { certFile: string; keyFile: string };
  /** Other A2A agents this host may call (src/peers/). */
  agents: {
    /** Name → card URL and bearer token (HANDOFF_AGENTS, HANDOFF_AGENT_TOKEN_<NAME>). */
    registry: Map<string, AgentEntry>;
    /** Bound on each call to a peer (HANDOFF_AGENT_TIMEOUT_MS). */
    timeoutMs: number;
    /** Extra CA (PEM file) trusted for https peers, in addition to the public roots. */
    caFile?: string;
    /** Polling a peer task: first delay and ceiling (HANDOFF_AGENT_POLL_MIN_MS / _MAX_MS; 1 s, 60 s). */
    pollMinMs: number;
    pollMaxMs: number;
    /** A push or stream event reads the peer task no sooner than this after the run's last commit (HANDOFF_AGENT_WAKE_MIN_MS; 1 s). */
    wakeMinMs: number;
    /** Stream subscriptions one instance holds at most; beyond, waits poll (HANDOFF_AGENT_MAX_STREAMS; 1,000). */
    maxStreams: number;
  };
  /** Notifications from gates and their decision links (src/notify/). */
  notify: {
    /** `smtp://` or `smtps://`, credentials optional (HANDOFF_SMTP_URL); unset: no e-mail. */
    smtpUrl?: string;
    /** The From of every e-mail (HANDOFF_SMTP_FROM). */
    smtpFrom: string;
    /** Standard Webhooks signing secret of webhook notifications (HANDOFF_WEBHOOK_SECRET). */
    webhookSecret?: string;
    /** Key of the decision links' signatures (HANDOFF_LINK_SECRET); else a file in the data dir. */
    linkSecret?: string;
  };
  /** Child runs (core.forEach, core.subWorkflow). */
  children: {
    /** Levels of child runs allowed below a run a caller started (HANDOFF_MAX_CHILD_DEPTH). */
    maxDepth: number;
    /** A parent waiting on children looks at them this often when no child's end woke it (HANDOFF_CHILD_POLL_MS). */
    pollMs: number;
  };
}

/** The demo workflows shipped with the package (…/workflows next to dist/ and src/). */
export const BUILTIN_WORKFLOWS = resolve(fileURLToPath(new URL('../../workflows', import.meta.url)));
/** The canonical OpenWOP conformance fixtures shipped with the package (…/fixtures/conformance). */
export const CONFORMANCE_FIXTURES = resolve(fileURLToPath(new URL('../../fixtures/conformance', import.meta.url)));

/** Identity used for every request when no API keys are configured (loopback-only mode). */
export const LOCAL_IDENTITY: ApiKeyIdentity = { tenantId: 'default', principalId: 'local' };

/**
 * One push delivery attempt is cut off after this long (src/push/worker.ts passes it to deliver()).
 * Fixed, not a setting: HANDOFF_PUSH_LEASE_MS must exceed it.
 */
export const PUSH_ATTEMPT_TIMEOUT_MS = 5_000;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface RawOptions {
  port?: string;
  host?: string;
  data?: string;
  databaseUrl?: string;
  workflows?: string[];
  retentionDays?: string;
  publicUrl?: string;
  defaultSkill?: string;
  logLevel?: string;
  tlsCert?: string;
  tlsKey?: string;
  strictWorkflows?: boolean;
}

export function loadConfig(flags: RawOptions, env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = resolve(flags.data ?? env.HANDOFF_DATA ?? '.handoff');
  const extraDirs = flags.workflows ?? (env.HANDOFF_WORKFLOWS ? env.HANDOFF_WORKFLOWS.split(':').filter(Boolean) : []);
  const databaseUrl = flags.databaseUrl ?? env.HANDOFF_DATABASE_URL;
  const publicUrl = flags.publicUrl ?? env.HANDOFF_PUBLIC_URL;
  const registry = agentRegistry(env);
  const config: Config = {
    host: flags.host ?? env.HANDOFF_HOST ?? '127.0.0.1',
    port: int('port', flags.port ?? env.HANDOFF_PORT ?? '8080', 0, 65535),
    dataDir,
    pgPoolSize: int('HANDOFF_PG_POOL_SIZE', env.HANDOFF_PG_POOL_SIZE ?? '10', 1, 1000),
    workflowDirs: [BUILTIN_WORKFLOWS, ...extraDirs.map((d) => resolve(d))],
    conformanceFixtures: env.HANDOFF_CONFORMANCE_FIXTURES === '1',
    strictWorkflows: flags.strictWorkflows === true || env.HANDOFF_STRICT_WORKFLOWS === '1',
    retentionDays: num('retention-days', flags.retentionDays ?? env.HANDOFF_RETENTION_DAYS ?? '30', 0),
    apiKeys: parseApiKeys(env.HANDOFF_API_KEYS),
    defaultSkill: flags.defaultSkill ?? env.HANDOFF_DEFAULT_SKILL ?? 'echo',
    // The conformance mode mounts the seams too: the suite's RFC 0100 legs drive them.
    testSeams: env.HANDOFF_TEST_SEAMS === '1' || env.HANDOFF_CONFORMANCE_FIXTURES === '1',
    leaseMs: int('HANDOFF_LEASE_MS', env.HANDOFF_LEASE_MS ?? '30000', 100, 3_600_000),
    pollMs: int('HANDOFF_POLL_MS', env.HANDOFF_POLL_MS ?? '1000', 10, 60_000),
    maxBranches: int('HANDOFF_MAX_BRANCHES', env.HANDOFF_MAX_BRANCHES ?? '64', 1, 10_000),
    logLevel: flags.logLevel ?? env.HANDOFF_LOG_LEVEL ?? 'info',
    tracing: tracingConfigured(env),
    sqliteSynchronous: env.HANDOFF_SQLITE_SYNCHRONOUS === 'FULL' ? 'FULL' : 'NORMAL',
    bodyLimit: int('HANDOFF_BODY_LIMIT', env.HANDOFF_BODY_LIMIT ?? String(1024 * 1024), 1024, 64 * 1024 * 1024),
    instanceId: instanceId(env.HANDOFF_INSTANCE_ID),
    push: {
      allowCidrs: cidrList('HANDOFF_PUSH_ALLOW_CIDRS', env.HANDOFF_PUSH_ALLOW_CIDRS ?? ''),
      // Roughly a day: 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 8 h.
      retrySchedule: retrySchedule(env.HANDOFF_PUSH_RETRY_SCHEDULE ?? '5s,30s,2m,10m,30m,1h,2h,4h,8h,8h'),
      ...(env.HANDOFF_PUSH_CA_FILE ? { caFile: existingFile('HANDOFF_PUSH_CA_FILE', env.HANDOFF_PUSH_CA_FILE) } : {}),
      ...(env.HANDOFF_SECRET_KEY ? { secretKey: secretKey(env.HANDOFF_SECRET_KEY) } : {}),
      leaseMs: pushLeaseMs(env.HANDOFF_PUSH_LEASE_MS ?? '60000'),
    },
    sse: sseLimits(env),
    jsonMaxDepth: int('HANDOFF_JSON_MAX_DEPTH', env.HANDOFF_JSON_MAX_DEPTH ?? '64', 8, 256),
    listMaxBytes: int('HANDOFF_LIST_MAX_BYTES', env.HANDOFF_LIST_MAX_BYTES ?? String(4 * 1024 * 1024), 1024, 1024 ** 3),
    corsOrigins: corsOrigins(env.HANDOFF_CORS_ORIGINS ?? ''),
    allowedHosts: allowedHosts(env.HANDOFF_ALLOWED_HOSTS ?? ''),
    quotas: {
      pushConfigsPerTask: int(
        'HANDOFF_PUSH_MAX_CONFIGS_PER_TASK',
        env.HANDOFF_PUSH_MAX_CONFIGS_PER_TASK ?? '10',
        1,
        1000,
      ),
      ...(env.HANDOFF_TENANT_RATE ? { tenantRate: tenantRate(env.HANDOFF_TENANT_RATE) } : {}),
      ...(env.HANDOFF_TENANT_MAX_ACTIVE_RUNS
        ? {
            tenantMaxActiveRuns: int(
              'HANDOFF_TENANT_MAX_ACTIVE_RUNS',
              env.HANDOFF_TENANT_MAX_ACTIVE_RUNS,
              1,
              10_000_000,
            ),
          }
        : {}),
    },
    egress: {
      allowCidrs: cidrList('HANDOFF_EGRESS_ALLOW_CIDRS', env.HANDOFF_EGRESS_ALLOW_CIDRS ?? ''),
      allowHosts: hostList(env.HANDOFF_EGRESS_ALLOW_HOSTS ?? ''),
      ...(env.HANDOFF_EGRESS_CA_FILE
        ? { caFile: existingFile('HANDOFF_EGRESS_CA_FILE', env.HANDOFF_EGRESS_CA_FILE) }
        : {}),
    },
    llmProviders: llmProviders(env.HANDOFF_LLM_PROVIDERS),
    // The agent tokens are redacted like secrets: a peer may echo the one it was sent; so are the
    // notifier's keys and the SMTP password.
    secrets: secrets(env, [...registryCredentials(registry), ...notifyCredentials(env)]),
    notify: notifySettings(env),
    agents: {
      registry,
      timeoutMs: int('HANDOFF_AGENT_TIMEOUT_MS', env.HANDOFF_AGENT_TIMEOUT_MS ?? '30000', 100, 3_600_000),
      pollMinMs: int('HANDOFF_AGENT_POLL_MIN_MS', env.HANDOFF_AGENT_POLL_MIN_MS ?? '1000', 10, 3_600_000),
      pollMaxMs: int('HANDOFF_AGENT_POLL_MAX_MS', env.HANDOFF_AGENT_POLL_MAX_MS ?? '60000', 10, 3_600_000),
      wakeMinMs: int('HANDOFF_AGENT_WAKE_MIN_MS', env.HANDOFF_AGENT_WAKE_MIN_MS ?? '1000', 0, 3_600_000),
      maxStreams: int('HANDOFF_AGENT_MAX_STREAMS', env.HANDOFF_AGENT_MAX_STREAMS ?? '1000', 0, 100_000),
      ...(env.HANDOFF_AGENT_CA_FILE
        ? { caFile: existingFile('HANDOFF_AGENT_CA_FILE', env.HANDOFF_AGENT_CA_FILE) }
        : {}),
    },
    children: {
      maxDepth: int('HANDOFF_MAX_CHILD_DEPTH', env.HANDOFF_MAX_CHILD_DEPTH ?? '5', 1, 64),
      pollMs: int('HANDOFF_CHILD_POLL_MS', env.HANDOFF_CHILD_POLL_MS ?? '60000', 10, 3_600_000),
    },
  };
  if (env.HANDOFF_AGENTS_FILE) {
    const file = existingFile('HANDOFF_AGENTS_FILE', env.HANDOFF_AGENTS_FILE);
    const verdict = parseAgentsFile(file, config.secrets, new Set(registry.keys()));
    if (!verdict.ok) throw new ConfigError(verdict.error);
    for (const [name, entry] of verdict.agents) registry.set(name, entry);
  }
  const tls = tlsFiles(
    flags.tlsCert || env.HANDOFF_TLS_CERT || undefined,
    flags.tlsKey || env.HANDOFF_TLS_KEY || undefined,
  );
  if (tls) config.tls = tls;
  const oidc = oidcSettings(env);
  if (oidc) config.oidc = oidc;
  if (env.HANDOFF_CARD_SIGNING_KEY_FILE) {
    config.cardSigningKeyFile = existingFile('HANDOFF_CARD_SIGNING_KEY_FILE', env.HANDOFF_CARD_SIGNING_KEY_FILE);
  }
  if (config.agents.pollMaxMs < config.agents.pollMinMs) {
    throw new ConfigError('HANDOFF_AGENT_POLL_MAX_MS must not be below HANDOFF_AGENT_POLL_MIN_MS');
  }
  for (const [name, provider] of config.llmProviders) {
    if (provider.apiKeySecret !== undefined && !config.secrets.has(provider.apiKeySecret)) {
      throw new ConfigError(
        `HANDOFF_LLM_PROVIDERS: provider ${name} names secret ${provider.apiKeySecret}, which is not defined` +
          ` (HANDOFF_SECRET_${provider.apiKeySecret} or HANDOFF_SECRETS_FILE)`,
      );
    }
  }
  if (databaseUrl) config.databaseUrl = databaseUrl;
  if (env.HANDOFF_PG_SCHEMA) {
    // Interpolated into `create schema`, search_path and the NOTIFY channel `handoff_runs_<schema>`,
    // which PostgreSQL limits to 63 bytes (pg_notify refuses longer names): a short identifier only.
    if (!/^[a-z_][a-z0-9_]*$/.test(env.HANDOFF_PG_SCHEMA) || env.HANDOFF_PG_SCHEMA.length > 50) {
      throw new ConfigError(
        `HANDOFF_PG_SCHEMA must be a lower-case identifier ([a-z_][a-z0-9_]*, at most 50 characters), got '${env.HANDOFF_PG_SCHEMA.slice(0, 60)}'`,
      );
    }
    config.pgSchema = env.HANDOFF_PG_SCHEMA;
  }
  if (publicUrl) config.publicUrl = publicUrl.replace(/\/+$/, '');
  if (config.apiKeys.size === 0 && !config.oidc && !isLoopback(config.host)) {
    throw new ConfigError(
      `refusing to listen on ${config.host} without authentication: set HANDOFF_API_KEYS or HANDOFF_OIDC_ISSUER, or bind to 127.0.0.1`,
    );
  }
  if (config.publicUrl && !URL.canParse(config.publicUrl)) {
    throw new ConfigError(`--public-url (HANDOFF_PUBLIC_URL) must be an absolute URL, got '${config.publicUrl}'`);
  }
  // A keyless host trusts whoever reaches it: letting every web page read its answers would
  // hand the local user's runs to any site they visit.
  if (config.corsOrigins.includes('*') && config.apiKeys.size === 0 && !config.oidc) {
    throw new ConfigError(
      'HANDOFF_CORS_ORIGINS=* requires HANDOFF_API_KEYS (a keyless host would answer any web page)',
    );
  }
  return config;
}

function notifySettings(env: NodeJS.ProcessEnv): Config['notify'] {
  const smtpUrl = env.HANDOFF_SMTP_URL || undefined;
  if (smtpUrl !== undefined) {
    const url = URL.canParse(smtpUrl) ? new URL(smtpUrl) : undefined;
    if (!url || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname) {
      throw new ConfigError('HANDOFF_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…');
    }
  }
  const smtpFrom = env.HANDOFF_SMTP_FROM || 'Handoff <handoff@localhost>';
  if (smtpUrl !== undefined && !env.HANDOFF_SMTP_FROM) {
    throw new ConfigError('HANDOFF_SMTP_URL needs HANDOFF_SMTP_FROM (the From address of notifications)');
  }
  const linkSecret = env.HANDOFF_LINK_SECRET || undefined;
  if (linkSecret !== undefined && Buffer.byteLength(linkSecret) < 32) {
    throw new ConfigError('HANDOFF_LINK_SECRET must be at least 32 bytes (e.g. `openssl rand -base64 32`)');
  }
  const webhookSecret = env.HANDOFF_WEBHOOK_SECRET || undefined;
  if (webhookSecret !== undefined) {
    const b64 = webhookSecret.replace(/^whsec_/, '');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || Buffer.from(b64, 'base64').length < 24) {
      throw new ConfigError(
        'HANDOFF_WEBHOOK_SECRET must be a Standard Webhooks secret: whsec_ and the base64 of 24 to 64 random bytes',
      );
    }
  }
  return {
    smtpFrom,
    ...(smtpUrl ? { smtpUrl } : {}),
    ...(webhookSecret ? { webhookSecret } : {}),
    ...(linkSecret ? { linkSecret } : {}),
  };
}

/** The notifier's secret values, for the redactor. */
function notifyCredentials(env: NodeJS.ProcessEnv): string[] {
  const smtpPassword =
    env.HANDOFF_SMTP_URL && URL.canParse(env.HANDOFF_SMTP_URL) ? new URL(env.HANDOFF_SMTP_URL).password : '';
  return [env.HANDOFF_WEBHOOK_SECRET, env.HANDOFF_LINK_SECRET, smtpPassword && decodeURIComponent(smtpPassword)].filter(
    (v): v is string => typeof v === 'string' && v.length > 0,
  );
}

/** HANDOFF_OIDC_ISSUER and its companions; the audience is required with it (a token for any API would do). */
function oidcSettings(env: NodeJS.ProcessEnv): OidcSettings | undefined {
  const issuer = env.HANDOFF_OIDC_ISSUER;
  const companions = [
    'HANDOFF_OIDC_AUDIENCE',
    'HANDOFF_OIDC_TENANT_CLAIM',
    'HANDOFF_OIDC_SCOPES_CLAIM',
    'HANDOFF_OIDC_GROUPS_CLAIM',
    'HANDOFF_OIDC_ROLES_CLAIM',
  ];
  if (!issuer) {
    const stray = companions.find((c) => env[c] !== undefined);
    if (stray) throw new ConfigError(`${stray} is set but HANDOFF_OIDC_ISSUER is not`);
    return undefined;
  }
  const url = URL.canParse(issuer) ? new URL(issuer) : undefined;
  if (!url || (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname)))) {
    throw new ConfigError(
      `HANDOFF_OIDC_ISSUER must be an https URL (http only on loopback), exactly as the provider's 'iss', got '${issuer.slice(0, 100)}'`,
    );
  }
  const audience = env.HANDOFF_OIDC_AUDIENCE;
  if (!audience)
    throw new ConfigError('HANDOFF_OIDC_ISSUER needs HANDOFF_OIDC_AUDIENCE: the `aud` tokens for this host carry');
  const settings: OidcSettings = {
    issuer,
    audience,
    tenantClaim: env.HANDOFF_OIDC_TENANT_CLAIM || 'tenant',
    jwksCooldownMs: int('HANDOFF_OIDC_JWKS_COOLDOWN_MS', env.HANDOFF_OIDC_JWKS_COOLDOWN_MS ?? '30000', 0, 3_600_000),
  };
  if (env.HANDOFF_OIDC_SCOPES_CLAIM) settings.scopesClaim = env.HANDOFF_OIDC_SCOPES_CLAIM;
  if (env.HANDOFF_OIDC_GROUPS_CLAIM) settings.groupsClaim = env.HANDOFF_OIDC_GROUPS_CLAIM;
  if (env.HANDOFF_OIDC_ROLES_CLAIM) settings.rolesClaim = env.HANDOFF_OIDC_ROLES_CLAIM;
  if (env.HANDOFF_OIDC_CONSOLE_CLIENT_ID) settings.consoleClientId = env.HANDOFF_OIDC_CONSOLE_CLIENT_ID;
  return settings;
}

function sseLimits(env: NodeJS.ProcessEnv): Config['sse'] {
  const MiB = 1024 * 1024;
  const maxBufferedBytes = int('HANDOFF_SSE_MAX_BUFFER', env.HANDOFF_SSE_MAX_BUFFER ?? String(MiB), 1024, 256 * MiB);
  const maxTotalBufferedBytes = int(
    'HANDOFF_SSE_MAX_TOTAL_BUFFER',
    env.HANDOFF_SSE_MAX_TOTAL_BUFFER ?? String(64 * MiB),
    1024,
    16 * 1024 * MiB,
  );
  if (maxTotalBufferedBytes < maxBufferedBytes) {
    throw new ConfigError(
      `HANDOFF_SSE_MAX_TOTAL_BUFFER (${maxTotalBufferedBytes}) must be at least HANDOFF_SSE_MAX_BUFFER (${maxBufferedBytes}): one stream's buffer must fit in the host's`,
    );
  }
  return {
    keepaliveMs: int('HANDOFF_SSE_KEEPALIVE_MS', env.HANDOFF_SSE_KEEPALIVE_MS ?? '15000', 100, 15_000),
    maxBufferedBytes,
    stallMs: int('HANDOFF_SSE_STALL_MS', env.HANDOFF_SSE_STALL_MS ?? '30000', 100, 600_000),
    maxStreams: int('HANDOFF_SSE_MAX_STREAMS', env.HANDOFF_SSE_MAX_STREAMS ?? '1000', 1, 1_000_000),
    maxTotalBufferedBytes,
  };
}

const commaList = (raw: string): string[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Browser origins (`scheme://host[:port]`, exactly as a browser sends them), or `*`. */
function corsOrigins(raw: string): string[] {
  const origins = commaList(raw);
  for (const o of origins) {
    if (o !== '*' && (!URL.canParse(o) || new URL(o).origin !== o)) {
      throw new ConfigError(
        `HANDOFF_CORS_ORIGINS must be comma-separated origins like https://app.example.com (scheme, host, port; no path or trailing slash), got '${o}'`,
      );
    }
  }
  return origins;
}

/** Host names (no port: any port of an allowed name is allowed), IPv6 in brackets, or `*`. */
function allowedHosts(raw: string): string[] {
  const hosts = commaList(raw).map((h) => h.toLowerCase());
  for (const h of hosts) {
    if (h !== '*' && !/^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)$/.test(h)) {
      throw new ConfigError(
        `HANDOFF_ALLOWED_HOSTS must be comma-separated host names without port (e.g. handoff.internal,10.0.0.5,[fd00::5]) or *, got '${h}'`,
      );
    }
  }
  return hosts;
}

/** `100/s`, `6000/m` or `50000/h`: requests per tenant per window. */
function tenantRate(raw: string): { max: number; windowMs: number } {
  const m = raw.trim().match(/^(\d{1,9})\/(s|m|h)$/);
  if (!m || Number(m[1]) < 1) {
    throw new ConfigError(
      `HANDOFF_TENANT_RATE must be requests per window like 100/s, 6000/m or 50000/h, got '${raw}'`,
    );
  }
  const windowMs = { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
  return { max: Number(m[1]), windowMs };
}

function cidrList(setting: string, raw: string): string[] {
  const cidrs = commaList(raw);
  for (const c of cidrs) {
    if (!ipaddr.isValidCIDR(c))
      throw new ConfigError(`${setting} must be comma-separated CIDRs like 10.1.0.0/16, got '${c}'`);
  }
  return cidrs;
}

function hostList(raw: string): string[] {
  const hosts = commaList(raw);
  for (const h of hosts) {
    try {
      parseHostPattern(h);
    } catch (err) {
      throw new ConfigError(`HANDOFF_EGRESS_ALLOW_HOSTS: ${(err as Error).message} (e.g. llm.corp,*.models.corp)`);
    }
  }
  return hosts;
}

function llmProviders(raw: string | undefined): Map<string, LlmProvider> {
  if (raw === undefined || raw.trim() === '') return new Map();
  try {
    return parseLlmProviders(raw);
  } catch (err) {
    throw new ConfigError(`HANDOFF_LLM_PROVIDERS: ${(err as Error).message}`);
  }
}

function secrets(env: NodeJS.ProcessEnv, credentials: string[]): SecretStore {
  try {
    const file = env.HANDOFF_SECRETS_FILE ? { file: resolve(env.HANDOFF_SECRETS_FILE) } : {};
    return loadSecrets({ env, credentials, ...file });
  } catch (err) {
    // The message names the variable or the file, never a value.
    throw new ConfigError((err as Error).message);
  }
}

function existingFile(setting: string, raw: string): string {
  const file = resolve(raw);
  if (!existsSync(file) || !statSync(file).isFile()) throw new ConfigError(`${setting}: no such file ${file}`);
  return file;
}

function agentRegistry(env: NodeJS.ProcessEnv): Map<string, AgentEntry> {
  const verdict = parseAgentRegistry(env);
  if (!verdict.ok) throw new ConfigError(verdict.error);
  return verdict.agents;
}

/** Both or neither: a certificate without its key (or the reverse) cannot serve TLS. */
function tlsFiles(cert: string | undefined, key: string | undefined): Config['tls'] {
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) {
    throw new ConfigError(
      '--tls-cert (HANDOFF_TLS_CERT) and --tls-key (HANDOFF_TLS_KEY) go together: give both or neither',
    );
  }
  return {
    certFile: existingFile('--tls-cert (HANDOFF_TLS_CERT)', cert),
    keyFile: existingFile('--tls-key (HANDOFF_TLS_KEY)', key),
  };
}

/** Every instance sharing a database needs the same key (docs/operations.md); the value is never echoed. */
function secretKey(raw: string): string {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(raw.trim()) || Buffer.from(raw, 'base64').length !== 32) {
    throw new ConfigError('HANDOFF_SECRET_KEY must be the base64 of 32 bytes (e.g. openssl rand -base64 32)');
  }
  return raw;
}

/**
 * Checked here so a typo is refused naming the setting; parseSchedule (src/push/outbox.ts) turns
 * it into milliseconds when the host is built.
 */
function retrySchedule(raw: string): string {
  const bad = raw
    .split(',')
    .map((p) => p.trim())
    .find((p) => !/^\d+(?:\.\d+)?(ms|s|m|h)$/.test(p));
  if (bad !== undefined) {
    throw new ConfigError(
      `HANDOFF_PUSH_RETRY_SCHEDULE must be comma-separated durations like 5s,30s,2m,1h (units ms, s, m, h), got '${bad}'`,
    );
  }
  return raw;
}

/**
 * The instance id owns leases, tags metrics and logs, and marks this instance's own bus notices
 * (`instance|run|…`, so no `|`). It must be unique among live instances: two with one id would
 * both pass each other's lease fences. Default: host name, pid and a random suffix.
 */
function instanceId(raw: string | undefined): string {
  if (raw === undefined) return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(raw)) {
    throw new ConfigError(
      `HANDOFF_INSTANCE_ID must be 1..128 characters of A-Z a-z 0-9 . _ : -, got '${raw.slice(0, 40)}'`,
    );
  }
  return raw;
}

/**
 * A delivery lease shorter than an attempt would expire while the attempt is still running, and
 * another instance would claim and send the same delivery again: refuse it rather than allow it.
 */
function pushLeaseMs(raw: string): number {
  const ms = int('HANDOFF_PUSH_LEASE_MS', raw, 1, 24 * 3_600_000);
  if (ms <= PUSH_ATTEMPT_TIMEOUT_MS) {
    throw new ConfigError(
      `HANDOFF_PUSH_LEASE_MS must exceed the ${PUSH_ATTEMPT_TIMEOUT_MS} ms push attempt timeout (a shorter lease lets a second instance resend a delivery still in flight), got '${raw}'`,
    );
  }
  return ms;
}

export const sqliteFile = (c: Pick<Config, 'dataDir'>): string => join(c.dataDir, 'handoff.db');

/**
 * `key=tenant:principal[:email][:admin],key2=tenant2:principal2` or a JSON object
 * `{key: {tenant, principal, email?, admin?, scopes?, groups?, roles?}}`. The e-mail is where the
 * principal's notifications go; an admin key (an operator's) reads the audit log of every tenant;
 * `groups` and `roles` are what a gate's `approverGroupRefs` / `approverRoleRefs` match.
 */
export function parseApiKeys(raw: string | undefined): Map<string, ApiKeyIdentity> {
  const keys = new Map<string, ApiKeyIdentity>();
  if (!raw || raw.trim() === '') return keys;
  if (raw.trim().startsWith('{')) {
    const obj = JSON.parse(raw) as Record<
      string,
      {
        tenant?: string;
        principal?: string;
        email?: string;
        admin?: unknown;
        scopes?: unknown;
        groups?: unknown;
        roles?: unknown;
      }
    >;
    for (const [key, v] of Object.entries(obj)) {
      if (v.admin !== undefined && typeof v.admin !== 'boolean') {
        throw new ConfigError(`HANDOFF_API_KEYS: "admin" of key '${key.slice(0, 4)}…' must be true or false`);
      }
      const id = identity(key, v.tenant, v.principal, { email: v.email, admin: v.admin === true });
      if (v.scopes !== undefined) id.scopes = apiKeyScopes(key, v.scopes);
      if (v.groups !== undefined) id.groups = apiKeyRefs(key, 'groups', v.groups);
      if (v.roles !== undefined) id.roles = apiKeyRefs(key, 'roles', v.roles);
      keys.set(key, id);
    }
    return keys;
  }
  for (const entry of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf('=');
    if (eq <= 0)
      throw new ConfigError(`HANDOFF_API_KEYS entry must be key=tenant:principal, got '${entry.slice(0, 4)}…'`);
    const [tenant, principal, ...extra] = entry.slice(eq + 1).split(':');
    // After tenant and principal: an e-mail address, and/or the word `admin`.
    const admin = extra.includes('admin');
    const emails = extra.filter((x) => x !== 'admin');
    if (emails.length > 1 || extra.length > 2) {
      throw new ConfigError(
        `HANDOFF_API_KEYS entry must be key=tenant:principal[:email][:admin], got '${entry.slice(0, 4)}…'`,
      );
    }
    keys.set(entry.slice(0, eq), identity(entry.slice(0, eq), tenant, principal, { email: emails[0], admin }));
  }
  return keys;
}

/** A key's `scopes`: a list of known scope names (src/operation-scopes.ts); an empty list allows nothing. */
function apiKeyScopes(key: string, raw: unknown): string[] {
  const known = `the known ones are ${OPERATION_SCOPES.join(', ')}`;
  if (!Array.isArray(raw) || !raw.every((s) => typeof s === 'string')) {
    throw new ConfigError(
      `HANDOFF_API_KEYS: "scopes" of key '${key.slice(0, 4)}…' must be a list of scope names; ${known}`,
    );
  }
  // A typo (`approval:respond`) would otherwise be a scope that grants nothing, silently.
  const unknown = raw.find((s) => !(OPERATION_SCOPES as readonly string[]).includes(s));
  if (unknown !== undefined) {
    throw new ConfigError(
      `HANDOFF_API_KEYS: "scopes" of key '${key.slice(0, 4)}…' names the unknown scope ${JSON.stringify(unknown)}; ${known}`,
    );
  }
  return [...new Set(raw as string[])];
}

/**
 * A key's `groups` or `roles`: a list of non-empty names, matched exactly against a gate's refs —
 * so a name with a space before or after it (" finance", which would never match) is refused.
 */
function apiKeyRefs(key: string, field: 'groups' | 'roles', raw: unknown): string[] {
  if (!Array.isArray(raw) || !raw.every((s) => typeof s === 'string' && s.trim() !== '')) {
    throw new ConfigError(
      `HANDOFF_API_KEYS: "${field}" of key '${key.slice(0, 4)}…' must be a list of non-empty names such as "finance"`,
    );
  }
  const untrimmed = (raw as string[]).find((s) => s !== s.trim());
  if (untrimmed !== undefined) {
    throw new ConfigError(
      `HANDOFF_API_KEYS: "${field}" of key '${key.slice(0, 4)}…' has the name ${JSON.stringify(untrimmed)} with ` +
        'white space before or after it; names are matched exactly, so write it without',
    );
  }
  return [...new Set(raw as string[])];
}

function identity(
  key: string,
  tenant: string | undefined,
  principal: string | undefined,
  extra: { email?: string | undefined; admin?: boolean } = {},
): ApiKeyIdentity {
  if (!tenant || !principal || key.length < 8) {
    throw new ConfigError('each API key needs at least 8 characters, a tenant and a principal');
  }
  const { email, admin } = extra;
  if (email !== undefined && !/^[^\s@]+@[^\s@]+$/.test(email)) {
    throw new ConfigError(`HANDOFF_API_KEYS: the e-mail of principal ${principal} is not an address`);
  }
  const id: ApiKeyIdentity = { tenantId: tenant, principalId: principal };
  if (email) id.email = email;
  if (admin) id.admin = true;
  return id;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function num(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new ConfigError(`${name} must be a number >= ${min}, got '${raw}'`);
  return n;
}

function int(name: string, raw: string, min: number, max: number): number {
  const n = num(name, raw, min);
  if (!Number.isInteger(n) || n > max)
    throw new ConfigError(`${name} must be an integer in ${min}..${max}, got '${raw}'`);
  return n;
}
