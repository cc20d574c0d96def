// One typed configuration, from flags and their environment twins (flags win).
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ApiKeyIdentity {
  tenantId: string;
  principalId: string;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl?: string;
  /** PostgreSQL schema (HANDOFF_PG_SCHEMA); lets several hosts or test suites share a server. */
  pgSchema?: string;
  /** Connections each instance may open to PostgreSQL (HANDOFF_PG_POOL_SIZE), plus one for LISTEN. */
  pgPoolSize: number;
  workflowDirs: string[];
  retentionDays: number;
  /** API key → identity. Empty: no authentication, loopback only. */
  apiKeys: Map<string, ApiKeyIdentity>;
  publicUrl?: string;
  defaultSkill: string;
  testSeams: boolean;
  leaseMs: number;
  pollMs: number;
  logLevel: string;
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
  };
  /** SSE: keepalive comment interval and the per-connection buffer cap. */
  sse: { keepaliveMs: number; maxBufferedBytes: number };
}

/** The demo workflows shipped with the package (…/workflows next to dist/ and src/). */
export const BUILTIN_WORKFLOWS = resolve(fileURLToPath(new URL('../../workflows', import.meta.url)));

/** Identity used for every request when no API keys are configured (loopback-only mode). */
export const LOCAL_IDENTITY: ApiKeyIdentity = { tenantId: 'default', principalId: 'local' };

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
}

export function loadConfig(flags: RawOptions, env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = resolve(flags.data ?? env.HANDOFF_DATA ?? '.handoff');
  const extraDirs = flags.workflows ?? (env.HANDOFF_WORKFLOWS ? env.HANDOFF_WORKFLOWS.split(':').filter(Boolean) : []);
  const databaseUrl = flags.databaseUrl ?? env.HANDOFF_DATABASE_URL;
  const publicUrl = flags.publicUrl ?? env.HANDOFF_PUBLIC_URL;
  const config: Config = {
    host: flags.host ?? env.HANDOFF_HOST ?? '127.0.0.1',
    port: int('port', flags.port ?? env.HANDOFF_PORT ?? '8080', 0, 65535),
    dataDir,
    pgPoolSize: int('HANDOFF_PG_POOL_SIZE', env.HANDOFF_PG_POOL_SIZE ?? '10', 1, 1000),
    workflowDirs: [BUILTIN_WORKFLOWS, ...extraDirs.map((d) => resolve(d))],
    retentionDays: num('retention-days', flags.retentionDays ?? env.HANDOFF_RETENTION_DAYS ?? '30', 0),
    apiKeys: parseApiKeys(env.HANDOFF_API_KEYS),
    defaultSkill: flags.defaultSkill ?? env.HANDOFF_DEFAULT_SKILL ?? 'echo',
    testSeams: env.HANDOFF_TEST_SEAMS === '1',
    leaseMs: int('HANDOFF_LEASE_MS', env.HANDOFF_LEASE_MS ?? '30000', 100, 3_600_000),
    pollMs: int('HANDOFF_POLL_MS', env.HANDOFF_POLL_MS ?? '1000', 10, 60_000),
    logLevel: flags.logLevel ?? env.HANDOFF_LOG_LEVEL ?? 'info',
    sqliteSynchronous: env.HANDOFF_SQLITE_SYNCHRONOUS === 'FULL' ? 'FULL' : 'NORMAL',
    bodyLimit: int('HANDOFF_BODY_LIMIT', env.HANDOFF_BODY_LIMIT ?? String(1024 * 1024), 1024, 64 * 1024 * 1024),
    instanceId: env.HANDOFF_INSTANCE_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    push: {
      allowCidrs: (env.HANDOFF_PUSH_ALLOW_CIDRS ?? '').split(',').map((c) => c.trim()).filter(Boolean),
      // Roughly a day: 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 8 h.
      retrySchedule: env.HANDOFF_PUSH_RETRY_SCHEDULE ?? '5s,30s,2m,10m,30m,1h,2h,4h,8h,8h',
      ...(env.HANDOFF_PUSH_CA_FILE ? { caFile: resolve(env.HANDOFF_PUSH_CA_FILE) } : {}),
      ...(env.HANDOFF_SECRET_KEY ? { secretKey: env.HANDOFF_SECRET_KEY } : {}),
    },
    sse: {
      keepaliveMs: int('HANDOFF_SSE_KEEPALIVE_MS', env.HANDOFF_SSE_KEEPALIVE_MS ?? '15000', 100, 15_000),
      maxBufferedBytes: int('HANDOFF_SSE_MAX_BUFFER', env.HANDOFF_SSE_MAX_BUFFER ?? String(1024 * 1024), 1024, 256 * 1024 * 1024),
    },
  };
  if (databaseUrl) config.databaseUrl = databaseUrl;
  if (env.HANDOFF_PG_SCHEMA) config.pgSchema = env.HANDOFF_PG_SCHEMA;
  if (publicUrl) config.publicUrl = publicUrl.replace(/\/+$/, '');
  if (config.apiKeys.size === 0 && !isLoopback(config.host)) {
    throw new ConfigError(
      `refusing to listen on ${config.host} without authentication: set HANDOFF_API_KEYS, or bind to 127.0.0.1`,
    );
  }
  return config;
}

export const sqliteFile = (c: Config): string => join(c.dataDir, 'handoff.db');

/** `key=tenant:principal,key2=tenant2:principal2` or a JSON object `{key: {tenant, principal}}`. */
export function parseApiKeys(raw: string | undefined): Map<string, ApiKeyIdentity> {
  const keys = new Map<string, ApiKeyIdentity>();
  if (!raw || raw.trim() === '') return keys;
  if (raw.trim().startsWith('{')) {
    const obj = JSON.parse(raw) as Record<string, { tenant?: string; principal?: string }>;
    for (const [key, v] of Object.entries(obj)) keys.set(key, identity(key, v.tenant, v.principal));
    return keys;
  }
  for (const entry of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new ConfigError(`HANDOFF_API_KEYS entry must be key=tenant:principal, got '${entry.slice(0, 4)}…'`);
    const [tenant, principal] = entry.slice(eq + 1).split(':');
    keys.set(entry.slice(0, eq), identity(entry.slice(0, eq), tenant, principal));
  }
  return keys;
}

function identity(key: string, tenant: string | undefined, principal: string | undefined): ApiKeyIdentity {
  if (!tenant || !principal || key.length < 8) {
    throw new ConfigError('each API key needs at least 8 characters, a tenant and a principal');
  }
  return { tenantId: tenant, principalId: principal };
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
  if (!Number.isInteger(n) || n > max) throw new ConfigError(`${name} must be an integer in ${min}..${max}, got '${raw}'`);
  return n;
}
