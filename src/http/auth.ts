// Authentication: API keys, and with HANDOFF_OIDC_ISSUER the provider's JWT access tokens, map to
// (tenant, principal). Public routes (`config: { public: true }`) skip it. Without keys or an issuer
// every request is the local identity (the server only binds to loopback). Every refusal is a 401
// with `WWW-Authenticate: Bearer …` (RFC 6750) and happens before any route runs: it changes nothing.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ApiKeyIdentity, LOCAL_IDENTITY } from '../config.js';
import type { Caller } from '../engine/engine.js';
import { HttpError } from './errors.js';
import { looksLikeJwt, type OidcVerifier, TokenRefused } from './oidc.js';
import { isBrowserAtRoot } from './routes/console.js';
import { requiredScope } from './scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
    /** Set for a credential whose scopes gate what it may do: a token (HANDOFF_OIDC_SCOPES_CLAIM) or a key given `scopes`. */
    scopes?: ReadonlySet<string>;
  }
  interface FastifyContextConfig {
    /** Answered without an API key: discovery, the agent card, health, metrics, the console, the API document. */
    public?: boolean;
  }
}

/**
 * Whether a request may go without an API key, from the routes' `config.public`. Call before the
 * routes are added. A path no route matches goes without a key when every route under its first
 * segment is public (an unknown console asset is a 404, as for anyone); elsewhere the 401 comes first.
 */
export function publicRoutes(app: FastifyInstance): (req: FastifyRequest) => boolean {
  const publicFamily = new Map<string, boolean>();
  app.addHook('onRoute', (route) => {
    const family = firstSegment(route.url);
    publicFamily.set(family, (publicFamily.get(family) ?? true) && route.config?.public === true);
  });
  return (req) => {
    if (req.routeOptions.config.public === true) return true;
    if (req.routeOptions.url !== undefined) return false;
    return publicFamily.get(firstSegment(req.url)) === true;
  };
}

const firstSegment = (url: string): string => url.split(/[/?]/)[1] ?? '';

/**
 * The onRequest hook (callback style: it runs on every request and needs no promise for an API
 * key), and with scoped tokens the preValidation hook that checks each operation's scope.
 */
export function registerAuth(
  app: FastifyInstance,
  keys: Map<string, ApiKeyIdentity>,
  isPublic: (req: FastifyRequest) => boolean,
  oidc?: OidcVerifier,
): void {
  app.addHook('onRequest', authHook(keys, isPublic, oidc));
  const scopedKeys = [...keys.values()].some((id) => id.scopes !== undefined);
  if (oidc?.settings.scopesClaim !== undefined || scopedKeys) app.addHook('preValidation', scopeHook(isPublic));
}

function authHook(keys: Map<string, ApiKeyIdentity>, isPublic: (req: FastifyRequest) => boolean, oidc?: OidcVerifier) {
  // A key's scopes as the set the scope hook reads, made once here rather than per request.
  const entries = [...keys.entries()].map(([k, id]) => ({
    key: Buffer.from(k),
    id,
    scopes: id.scopes ? new Set(id.scopes) : undefined,
  }));
  const refuse = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void, why?: string): void => {
    if (isPublic(req) || isBrowserAtRoot(req)) {
      done();
      return;
    }
    // RFC 6750 §3.1: no error code when no credential was presented; `invalid_token` when one was.
    const error = why === undefined ? '' : `, error="invalid_token", error_description="${why.replace(/"/g, "'")}"`;
    void reply.header('WWW-Authenticate', `Bearer realm="handoff"${error}`);
    const hint = oidc ? 'an API key or an access token' : 'a valid API key';
    done(new HttpError(401, 'unauthenticated', why ?? `${hint} is required: Authorization: Bearer <credential>`));
  };
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (entries.length === 0 && !oidc) {
      req.caller = withSurface(LOCAL_IDENTITY, req);
      done();
      return;
    }
    const presented = bearer(req.headers.authorization);
    const entry = presented === undefined ? undefined : lookup(entries, presented);
    if (entry) {
      req.caller = withSurface(entry.id, req);
      if (entry.scopes) req.scopes = entry.scopes;
      done();
      return;
    }
    if (presented === undefined || !oidc || !looksLikeJwt(presented)) {
      refuse(req, reply, done, presented === undefined ? undefined : 'the credential is not a known API key or token');
      return;
    }
    oidc.verify(presented).then(
      (who) => {
        const id: ApiKeyIdentity = { tenantId: who.tenantId, principalId: who.principalId };
        if (who.groups) id.groups = who.groups;
        if (who.roles) id.roles = who.roles;
        req.caller = withSurface(id, req);
        if (who.scopes) req.scopes = who.scopes;
        done();
      },
      (err: unknown) => {
        if (!(err instanceof TokenRefused)) req.log.error({ err }, 'token check failed');
        refuse(req, reply, done, err instanceof TokenRefused ? err.message : 'the token could not be checked');
      },
    );
  };
}

/**
 * The caller with the surface its client says it is (`Handoff-Surface: console|cli`), which the
 * audit log records for its acts; any other value says nothing (the route's surface stands). The
 * principal is the key's: the header only tells which of that principal's clients acted.
 */
function withSurface(identity: ApiKeyIdentity, req: FastifyRequest): Caller {
  const said = req.headers['handoff-surface'];
  return said === 'console' || said === 'cli' ? { ...identity, surface: said } : identity;
}

/** A scoped token may do an operation only with its scope: 403 `forbidden` naming it (OpenWOP auth.md). */
function scopeHook(isPublic: (req: FastifyRequest) => boolean) {
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (req.scopes === undefined || isPublic(req)) {
      done();
      return;
    }
    const scope = requiredScope(req);
    if (scope !== undefined && req.scopes.has(scope)) {
      done();
      return;
    }
    const needs = scope ?? 'an operation no scope grants';
    void reply.header('WWW-Authenticate', `Bearer realm="handoff", error="insufficient_scope", scope="${scope ?? ''}"`);
    const details = scope === undefined ? undefined : { scopeRequired: scope };
    done(new HttpError(403, 'forbidden', `the credential lacks the scope this operation needs: ${needs}`, details));
  };
}

const bearer = (header: string | undefined): string | undefined => header?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];

function lookup<E extends { key: Buffer }>(entries: readonly E[], presented: string): E | undefined {
  const given = Buffer.from(presented);
  // Compare against every key in constant time so timing reveals nothing about near misses.
  let found: E | undefined;
  for (const e of entries) {
    if (e.key.length === given.length && timingSafeEqual(e.key, given)) found = e;
  }
  return found;
}
