// Authentication: API keys map to (tenant, principal). Public routes (`config: { public: true }`) skip
// it. Without configured keys every request is the local identity (the server only binds to loopback).
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ApiKeyIdentity, LOCAL_IDENTITY } from '../config.js';
import type { Caller } from '../engine/engine.js';
import { HttpError } from './errors.js';
import { isBrowserAtRoot } from './routes/console.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
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

/** An onRequest hook (callback style: it runs on every request and needs no promise). */
export function authHook(keys: Map<string, ApiKeyIdentity>, isPublic: (req: FastifyRequest) => boolean) {
  const entries = [...keys.entries()].map(([k, id]) => ({ key: Buffer.from(k), id }));
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (entries.length === 0) {
      req.caller = withSurface(LOCAL_IDENTITY, req);
      done();
      return;
    }
    const identity = lookup(entries, req.headers.authorization);
    if (identity) {
      req.caller = withSurface(identity, req);
      done();
      return;
    }
    if (isPublic(req) || isBrowserAtRoot(req)) {
      done();
      return;
    }
    void reply.header('WWW-Authenticate', 'Bearer realm="handoff"');
    done(new HttpError(401, 'unauthenticated', 'a valid API key is required: Authorization: Bearer <key>'));
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

function lookup(
  entries: Array<{ key: Buffer; id: ApiKeyIdentity }>,
  header: string | undefined,
): ApiKeyIdentity | undefined {
  const m = header?.match(/^Bearer\s+(\S+)\s*$/i);
  if (!m?.[1]) return undefined;
  const given = Buffer.from(m[1]);
  // Compare against every key in constant time so timing reveals nothing about near misses.
  let found: ApiKeyIdentity | undefined;
  for (const e of entries) {
    if (e.key.length === given.length && timingSafeEqual(e.key, given)) found = e.id;
  }
  return found;
}
