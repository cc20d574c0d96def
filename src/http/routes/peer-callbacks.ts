// POST /v1/a2a/callbacks/{waitId}: where a peer pushes the changes of a task this host's run waits
// on (the a2a.invoke node registered it with a per-call random token). The wait id and the token
// (constant time, against the stored hash) are checked as the request arrives, before any of its
// body is read; the body is then never read at all — the push only brings the run's next read
// forward, and the node reads the peer task itself (tasks/get). Wakes are coalesced per wait
// (src/peers/wakes.ts): a flood of valid pushes, or one token replayed, reads the peer at most
// once per HANDOFF_AGENT_WAKE_MIN_MS.
import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { PeerWakes } from '../../peers/wakes.js';
import { CALLBACK_PATH } from '../../peers/service.js';
import type { PeerWaitRecord } from '../../store/repos/peer-waits.js';
import { HttpError } from '../errors.js';
import { JSON_MEDIA_TYPES } from '../json-body.js';
import { BAD_MEDIA_TYPE, empty, failure, typed } from '../schemas.js';

export interface PeerCallbackDeps {
  /** The wait a callback names (its token hash, its state). */
  waitOf(waitId: string): Promise<PeerWaitRecord | undefined>;
  wakes: Pick<PeerWakes, 'request'>;
}

/** A 0.3 peer sends the token as X-A2A-Notification-Token, a 1.0 peer as `Authorization: Bearer`. */
function tokenOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const own = headers['x-a2a-notification-token'];
  if (typeof own === 'string' && own !== '') return own;
  const auth = headers.authorization;
  const m = typeof auth === 'string' ? auth.match(/^Bearer\s+(\S+)\s*$/i) : null;
  return m?.[1];
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

/** The wait each authenticated request is for (set before its body would be parsed). */
const authenticated = new WeakMap<FastifyRequest, PeerWaitRecord>();

export function peerCallbackRoutes(app: FastifyInstance, deps: PeerCallbackDeps): void {
  const schema = {
    operationId: 'peerCallback',
    tags: ['a2a'],
    summary: 'Push from a peer agent a run waits on (a2a.invoke)',
    description:
      'Authenticated by the per-call token given when the push config was registered (`X-A2A-Notification-Token` ' +
      'or `Authorization: Bearer`), not by an API key; the wait id and the token are checked before the body is ' +
      'read, and the body is never read: the push only wakes the waiting run, which reads the peer task itself. ' +
      'Wakes are coalesced: the run reads the peer at most once per `HANDOFF_AGENT_WAKE_MIN_MS`.',
    params: Type.Object({ waitId: Type.String() }),
    response: {
      204: empty('The waiting run was woken (or the wake coalesced, or there was nothing to wake).'),
      401: failure('The token is missing or does not match (`unauthenticated`).'),
      404: failure('No such callback (`not_found`).'),
      415: BAD_MEDIA_TYPE,
    },
  };
  // Checked as the request arrives: nothing of the body is read for a request that fails it.
  const authenticate = async (req: FastifyRequest<{ Params: { waitId: string } }>) => {
    const wait = await deps.waitOf(req.params.waitId);
    // Unknown and tokenless waits look alike: the id alone opens nothing.
    if (!wait?.tokenHash) throw new HttpError(404, 'not_found', 'no such callback');
    const token = tokenOf(req.headers);
    if (token === undefined || !timingSafeEqual(sha256(token), Buffer.from(wait.tokenHash, 'hex'))) {
      throw new HttpError(401, 'unauthenticated', 'the callback token does not match');
    }
    authenticated.set(req, wait);
  };
  // A scope of its own: here a JSON body is accepted unread (the server discards it after the
  // answer), and any other media type is 415 as everywhere.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(JSON_MEDIA_TYPES, (_req, _payload, done) => done(null, undefined));
    typed(scope).post(
      `${CALLBACK_PATH}/:waitId`,
      { config: { public: true }, schema, onRequest: authenticate },
      async (req, reply) => {
        const wait = authenticated.get(req) as PeerWaitRecord;
        if (wait.state === 'waiting') await deps.wakes.request(wait, 'push');
        return reply.code(204).send();
      },
    );
  });
}
