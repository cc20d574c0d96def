// The PeerService the a2a.invoke node is lent (src/engine/nodes/a2a-invoke/service.ts), built from
// the host's configuration: the peer client, the waits table, the callback URL and the backoff.
import type { Config } from '../config.js';
import type { PeerService } from '../engine/nodes/a2a-invoke/service.js';
import type { Store } from '../store/store.js';
import type { PeerClient, PeerTarget, RunContext } from './client.js';

/** Where peers push changes of the tasks this host's runs wait on (served by src/http/routes/peer-callbacks.ts). */
export const CALLBACK_PATH = '/v1/a2a/callbacks';
import type { PeerStreams } from './streams.js';

export function peerService(
  config: Config,
  peers: { resolve(target: PeerTarget, run: RunContext): Promise<PeerClient> },
  store: Store,
  streams?: PeerStreams,
): PeerService {
  // Pushes need a URL the peer can reach and that A2A peers will call: an https public URL.
  const base = config.publicUrl?.startsWith('https://') ? config.publicUrl : undefined;
  return {
    // Each wake resolves the peer again: its card comes from the cache of Peers (client.ts).
    resolve: (target, run) => peers.resolve(target, run),
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
