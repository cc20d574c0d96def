// What the host lends to node types that reach outside the run: built once from the Config by
// host.ts, handed through Runner → StepContext → NodeContext. Every field is optional, so an
// engine built without one (a test, a tool) still runs every node that does not need it; a node
// that needs a missing service fails with a clear error instead of calling out unguarded.
import type { Dispatcher } from 'undici';
import type { TokenSource } from '../../calls/client-credentials.js';
import type { LlmProvider } from '../../calls/llm-providers.js';
import type { EgressPolicy } from '../../egress/address.js';
import type { Redactor } from '../../secrets/redact.js';
import type { SecretStore } from '../../secrets/store.js';
import type { PeerService } from './a2a-invoke/service.js';
import type { ChildRunService } from './child-runs/service.js';
import type { InterruptTokens } from '../interrupt-tokens.js';

/** Outbound calls (http.request, llm.chat): the egress guard, secrets and model endpoints. */
export interface CallServices {
  /** A guarded dispatcher built with `policy` (createGuardedDispatcher): it re-checks every dial. */
  dispatcher: Dispatcher;
  /** The outbound-call policy (HANDOFF_EGRESS_ALLOW_CIDRS / _HOSTS); every URL and hop is checked. */
  policy: EgressPolicy;
  /** Values for `{{ secrets.NAME }}`, and the redaction applied to everything a call records. */
  secrets: SecretStore;
  /** Named Chat Completions endpoints (HANDOFF_LLM_PROVIDERS). */
  llmProviders: ReadonlyMap<string, LlmProvider>;
  /** Access tokens for http.request `auth` (client credentials), in memory only. */
  tokens?: TokenSource;
}

export interface NodeServices {
  calls?: CallServices;
  /** Other A2A agents (the a2a.invoke node). */
  peers?: PeerService;
  /**
   * The host's one redactor (every secret value and credential, in every spelling): the engine
   * scrubs with it what each node that reaches outside records (src/engine/scrub.ts).
   */
  redactor?: Redactor;
  /** Child runs (core.forEach, core.subWorkflow). */
  children?: ChildRunService;
  /** Signs the callback tokens of external-event interrupts (core.externalEvent). */
  interruptTokens?: InterruptTokens;
}
