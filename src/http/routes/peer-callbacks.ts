// POST /v1/a2a/callbacks/{waitId}: where a peer pushes the changes of a task this host's run waits
// on (the a2a.invoke node registered it with a per-call random token). The token is checked in
// constant time against the stored hash; the body is trusted for nothing — the push only brings
// the run's next read forward, and the node reads the peer task itself (tasks/get).
import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { CALLBACK_PATH } from '../../peers/service.js';
import type { Store } from '../../store/store.js';
import { HttpError } from '../errors.js';
import { BAD_MEDIA_TYPE, empty, failure, TOO_LARGE, typed } from '../schemas.js';

export interface PeerCallbackDeps {
  store: Store;
  /** A run was woken: this instance's worker should claim it now. */
  kick: () => void;
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

export function peerCallbackRoutes(app: FastifyInstance, deps: PeerCallbackDeps): void {
  const schema = {
    operationId: 'peerCallback',
    tags: ['a2a'],
    summary: 'Push from a peer agent a run waits on (a2a.invoke)',
    description:
      'Authenticated by the per-call token given when the push config was registered (`X-A2A-Notification-Token` ' +
      'or `Authorization: Bearer`), not by an API key. The body is not read: the push only wakes the waiting run, ' +
      'which reads the peer task itself.',
    params: Type.Object({ waitId: Type.String() }),
    body: Type.Unknown(),
    response: {
      204: empty('The waiting run was woken (or had nothing to wake).'),
      400: failure('The body is not JSON (`bad_request`).'),
      401: failure('The token is missing or does not match (`unauthenticated`).'),
      404: failure('No such callback (`not_found`).'),
      413: TOO_LARGE,
      415: BAD_MEDIA_TYPE,
    },
  };
  typed(app).post(`${CALLBACK_PATH}/:waitId`, { config: { public: true }, schema }, async (req, reply) => {
    const wait = await deps.store.peerWaits.get(req.params.waitId);
    // Unknown and tokenless waits look alike: the id alone opens nothing.
    if (!wait?.tokenHash) throw new HttpError(404, 'not_found', 'no such callback');
    const token = tokenOf(req.headers);
    if (token === undefined || !timingSafeEqual(sha256(token), Buffer.from(wait.tokenHash, 'hex'))) {
      throw new HttpError(401, 'unauthenticated', 'the callback token does not match');
    }
    if (wait.state === 'waiting' && (await deps.store.runs.wake(wait.runId))) deps.kick();
    return reply.code(204).send();
  });
}
