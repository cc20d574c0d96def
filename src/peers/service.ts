// The PeerService the a2a.invoke node is lent (NodeServices.peers): what the node needs from its
// host — a way to reach a peer, the table of waits, the knobs of waiting — and the one built from
// the host's configuration: the peer client, the waits table, the callback URL and the backoff.
import type { TaskState } from '../a2a/model.js';
import type { PeerWaitInput, PeerWaitRecord } from '../store/repos/peer-waits.js';
import type { Store } from '../store/store.js';
import type { PeerClient, PeerTarget, RunContext } from './client.js';

/** Where peers push changes of the tasks this host's runs wait on (served by src/http/routes/peer-callbacks.ts). */
export const CALLBACK_PATH = '/v1/a2a/callbacks';
import type { PeerStreams } from './streams.js';

/** What of the host's configuration the peer service reads (src/config.ts's Config has it). */
export interface PeerServiceSettings {
  publicUrl?: string;
  host: string;
  port: number;
  agents: { pollMinMs: number; pollMaxMs: number };
}

export type WaitMode = 'push' | 'stream' | 'poll';

export interface PeerService {
  /** Read the peer's card and pick the interface (src/peers/client.ts). */
  resolve(target: PeerTarget, run: RunContext): Promise<PeerClient>;
  /** The run's waits (src/store/repos/peer-waits.ts): single statements, never in a transaction. */
  waits: {
    upsert(w: PeerWaitInput): Promise<PeerWaitRecord>;
    finish(waitId: string): Promise<void>;
    /** The run gave up on the peer task (timeout): the cancel pass sends tasks/cancel. */
    requestCancel(runId: string): Promise<number>;
  };
  /** The push callback URL of a wait, when this host can receive pushes (an https public URL). */
  callbackUrl(waitId: string): string | undefined;
  /** Polling backoff: from `pollMinMs`, doubling, at most `pollMaxMs` (jittered). */
  pollMinMs: number;
  pollMaxMs: number;
  /** This host's agent id, sent as metadata.openwop.callerAgentId. */
  callerAgentId: string;
  /**
   * The node sleeps on a wait in stream mode, having read the peer task at `seen`: the host holds a
   * subscription for it until news (src/peers/streams.ts).
   */
  onStreamWait?(wait: PeerWaitRecord, seen: TaskState): void;
}

export function peerService(
  config: PeerServiceSettings,
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
export const callerAgentId = (config: Pick<PeerServiceSettings, 'publicUrl' | 'host' | 'port'>): string =>
  `${config.publicUrl ?? `http://${config.host}:${config.port}`}/.well-known/agent-card.json`;
