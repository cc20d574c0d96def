// Checks every request passes before any work (docs/security.md): the Host it names, the Origin a
// browser sends with a write, and identifiers the database cannot hold. Callback-style hooks: they
// run on every request and need no promise.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { hasNul } from '../json-guard.js';
import { HttpError } from './errors.js';

type Done = (err?: Error) => void;

/** Probed by load balancers at an instance's own address; they echo nothing and read nothing private. */
const HOST_EXEMPT = /^\/(healthz|metrics)(\?|$)/;

/**
 * A Host header as RFC 9110 allows it: a name, an IPv4 address or a bracketed IPv6 address, then
 * an optional port. Fastify's `hostname` is only the text before the first `:` (or up to `]`), so
 * `127.0.0.1:1@attacker.example` looked like a loopback name while the card echoed all of it.
 */
const HOST_HEADER = /^(?:\[[0-9a-f:.]+\]|[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?)(?::(\d{1,5}))?$/i;

/** The Host header is one host[:port] and nothing else (no userinfo, path, query or bad port). */
function isHostHeader(host: string): boolean {
  const m = HOST_HEADER.exec(host);
  return m !== null && (m[1] === undefined || Number(m[1]) <= 65_535);
}

const malformedHost = () =>
  new HttpError(421, 'misdirected_request', 'the Host header is not a host name or address with an optional port');

/**
 * DNS rebinding: a page on attacker.example whose name is made to resolve to 127.0.0.1 reaches a
 * keyless local host as its own origin. Its requests still say `Host: attacker.example`, so only
 * the names this host is known by are served: loopback names, the public URL's host, the bind
 * address, and HANDOFF_ALLOWED_HOSTS (`*` turns the name check off). Any other Host is 421, and so
 * is one that is not a valid host[:port] at all, on every route and whatever the list says.
 */
export function hostHook(config: Config) {
  if (config.allowedHosts.includes('*')) {
    return (req: FastifyRequest, _reply: FastifyReply, done: Done) =>
      done(isHostHeader(req.host) ? undefined : malformedHost());
  }
  const names = new Set(['localhost', '[::1]', ...config.allowedHosts]);
  if (config.publicUrl) names.add(new URL(config.publicUrl).hostname.toLowerCase());
  if (config.host !== '0.0.0.0' && config.host !== '::') names.add(bracketed(config.host.toLowerCase()));
  return (req: FastifyRequest, _reply: FastifyReply, done: Done): void => {
    if (!isHostHeader(req.host)) {
      done(malformedHost());
      return;
    }
    const name = req.hostname.toLowerCase();
    if (names.has(name) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) || HOST_EXEMPT.test(req.url)) {
      done();
      return;
    }
    done(
      new HttpError(
        421,
        'misdirected_request',
        `this host does not serve the name '${name.slice(0, 100)}'; add it to HANDOFF_ALLOWED_HOSTS or set --public-url`,
      ),
    );
  };
}

const bracketed = (host: string): string => (host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cross-site request forgery: a browser sends `Origin` with every cross-origin write, and a page
 * may POST to a keyless loopback host without a preflight. A write whose Origin is neither this
 * host's own (as the request names it, or the public URL's) nor in HANDOFF_CORS_ORIGINS is 403.
 * Clients that are not browsers send no Origin and are not affected.
 */
export function originHook(config: Config) {
  const allowed = new Set(config.corsOrigins);
  if (config.publicUrl) allowed.add(new URL(config.publicUrl).origin);
  const any = allowed.has('*');
  return (req: FastifyRequest, _reply: FastifyReply, done: Done): void => {
    const origin = req.headers.origin;
    if (origin === undefined || any || SAFE_METHODS.has(req.method)) {
      done();
      return;
    }
    if (allowed.has(origin) || origin === `${req.protocol}://${req.host}`) {
      done();
      return;
    }
    done(
      new HttpError(
        403,
        'forbidden',
        `writes from the web origin '${origin.slice(0, 200)}' are not allowed; list it in HANDOFF_CORS_ORIGINS`,
      ),
    );
  };
}

/**
 * Identifiers in the path and query reach database queries. U+0000 is one no id can contain and
 * PostgreSQL text cannot hold: a path id with it is answered as unknown (404), a query value with
 * it is invalid (400), before any query is made. Bodies are checked when parsed (app.ts).
 */
export function nulIdHook(req: FastifyRequest, _reply: FastifyReply, done: Done): void {
  const params = req.params as Record<string, unknown> | undefined;
  for (const [name, v] of Object.entries(params ?? {})) {
    if (typeof v === 'string' && hasNul(v)) {
      done(
        new HttpError(404, 'not_found', `${entityOf(req.routeOptions.url ?? '', name)} ${JSON.stringify(v)} not found`),
      );
      return;
    }
  }
  const query = req.query as Record<string, unknown> | undefined;
  for (const [name, v] of Object.entries(query ?? {})) {
    if (hasNul(name) || [v].flat().some((x) => typeof x === 'string' && hasNul(x))) {
      done(new HttpError(400, 'validation_error', `querystring/${name}: must not contain the character U+0000`));
      return;
    }
  }
  done();
}

/** What a path parameter names, for the 404 message ("run … not found"). */
function entityOf(route: string, param: string): string {
  if (param === 'nodeId') return 'interrupt at node';
  if (route.startsWith('/v1/runs/')) return 'run';
  if (route.startsWith('/v1/a2a/deliveries/')) return 'delivery';
  if (route.startsWith('/v1/workflows/')) return 'workflow';
  return 'task';
}
