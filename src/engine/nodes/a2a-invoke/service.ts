// What the a2a.invoke node needs from its host (NodeServices.peers): a way to reach a peer, the
// table of waits, and the knobs of waiting. The host builds it (src/host.ts); tests may too.
import type { PeerClient, PeerTarget, RunContext } from '../../../peers/client.js';
import type { TaskState } from '../../../a2a/model.js';
import type { PeerWaitInput, PeerWaitRecord } from '../../../store/repos/peer-waits.js';

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
