// What a node that reaches outside the host records is scrubbed of every credential the host holds
// before it is committed: a server or peer may echo a secret or an agent token in an answer, an
// error or a question, and from the commit on it would be in the event log, the run, its A2A Task
// and every list. One place, for every such node (src/engine/step.ts calls it), with the host's
// one redactor (src/secrets/redact.ts). Inline nodes are not scrubbed: they reach nothing and
// never see a secret (the loader refuses `{{ secrets.NAME }}` outside call nodes' headers and query).
import type { Redactor } from '../secrets/redact.js';
import type { NodeResult } from './nodes/types.js';

/**
 * `result` with every credential scrubbed from what it records: output, vars, events, detail,
 * error, interrupt data. The node's own `state` comes back to it as it was (it may need the peer's
 * task id to call again), except the view recorded with it (`waitingOn`, nodes/view.ts), which
 * the run's snapshot shows.
 */
export function scrubbed(result: NodeResult, redactor: Redactor): NodeResult {
  if (!('state' in result) || result.state === undefined) return redactor.deep(result);
  const { state, ...recorded } = result;
  const shown = state.waitingOn === undefined ? state : { ...state, waitingOn: redactor.deep(state.waitingOn) };
  return { ...redactor.deep(recorded), state: shown };
}
