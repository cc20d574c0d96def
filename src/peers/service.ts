// The PeerService the a2a.invoke node is lent (src/engine/nodes/a2a-invoke/service.ts), built from
// the host's configuration: the peer client, the waits table, the callback URL and the backoff.
import type { Config } from '../config.js';
import type { PeerService } from '../engine/nodes/a2a-invoke/service.js';
import type { Store } from '../store/store.js';
import type { PeerClient, PeerTarget, RunContext } from './client.js';

/** Where peers push changes of the tasks this host's runs wait on (served by src/http/routes/peer-callbacks.ts). */
export const CALLBACK_PATH = '/v1/a2a/callbacks';
import type { PeerStreams } from './streams.js';

/** How long a resolved peer (its card read, its interface picked) is reused by one run. */
const CLIENT_TTL_MS = 60_000;
const CLIENT_CACHE_MAX = 1_000;

export function peerService(
  config: Config,
  peers: { resolve(target: PeerTarget, run: RunContext): Promise<PeerClient> },
  store: Store,
  streams?: PeerStreams,
): PeerService {
  // Pushes need a URL the peer can reach and that A2A peers will call: an https public URL.
  const base = config.publicUrl?.startsWith('https://') ? config.publicUrl : undefined;
  const cache = new Map<string, { client: PeerClient; until: number }>();
  // Each wake of a waiting run would otherwise read the peer's card again before tasks/get.
  const resolve = async (target: PeerTarget, run: RunContext): Promise<PeerClient> => {
    const key = `${run.runId}\n${JSON.stringify(target)}`;
    const held = cache.get(key);
    if (held && held.until > Date.now()) return held.client;
    const client = await peers.resolve(target, run);
    if (cache.size >= CLIENT_CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(key, { client, until: Date.now() + CLIENT_TTL_MS });
    return client;
  };
  return {
    resolve,
    waits: {
      upsert: (w) => store.peerWaits.upsert(w),
      finish: (id) => store.peerWaits.finish(id),
      requestCancel: (runId) => store.peerWaits.requestCancel(runId),
    },
    callbackUrl: (waitId) => (base ? `${base}${CALLBACK_PATH}/${encodeURIComponent(waitId)}` : undefined),
    pollMinMs: config.agents.pollMinMs,
    pollMaxMs: config.agents.pollMaxMs,
    callerAgentId: callerAgentId(config),
    ...(streams ? { onStreamWait: (w, seen) => streams.hold(w, seen) } : {}),
  };
}

/** This host's agent card URL, sent to peers as metadata.openwop.callerAgentId. */
export const callerAgentId = (config: Config): string =>
  `${config.publicUrl ?? `http://${config.host}:${config.port}`}/.well-known/agent-card.json`;
