// Authentication: API keys map to (tenant, principal). Public routes skip it. Without configured
// keys every request is the local identity (the server then only binds to loopback).
import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type ApiKeyIdentity, LOCAL_IDENTITY } from '../config.js';
import type { Caller } from '../engine/engine.js';
import { HttpError } from './errors.js';
import { isBrowserAtRoot } from './routes/console.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

const PUBLIC = [
  /^\/\.well-known\//,
  /^\/healthz$/,
  /^\/metrics$/,
  /^\/v1\/openapi\.json$/,
  /^\/v1\/a2a\/agent\.json$/,
  // Pushes from peers this host's runs wait on: each checks its own per-call token.
  /^\/v1\/a2a\/callbacks\/[^/]+$/,
  // The console's page and assets: no data in them; the page signs in and calls the API.
  /^\/console(\/|$)/,
];

/** Routes that answer without an API key (`url` may carry a query string). */
export const isPublicPath = (url: string): boolean => {
  const path = url.split('?')[0] ?? '';
  return PUBLIC.some((re) => re.test(path));
};

/** An onRequest hook (callback style: it runs on every request and needs no promise). */
export function authHook(keys: Map<string, ApiKeyIdentity>) {
  const entries = [...keys.entries()].map(([k, id]) => ({ key: Buffer.from(k), id }));
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (entries.length === 0) {
      req.caller = LOCAL_IDENTITY;
      done();
      return;
    }
    const identity = lookup(entries, req.headers.authorization);
    if (identity) {
      req.caller = identity;
      done();
      return;
    }
    if (isPublicPath(req.url) || isBrowserAtRoot(req)) {
      done();
      return;
    }
    void reply.header('WWW-Authenticate', 'Bearer realm="handoff"');
    done(new HttpError(401, 'unauthenticated', 'a valid API key is required: Authorization: Bearer <key>'));
  };
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
