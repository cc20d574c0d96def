// Following a run's event log: the one stream engine behind the REST SSE stream, message/stream
// and tasks/resubscribe. It subscribes to the change bus FIRST and reads the log SECOND, so an
// event committed between the two is never lost (docs/protocol/openwop.md#event-stream); it reads every event
// from the store by cursor, so a follower can start after any sequence, on any instance, after
// any restart, and never sees an event twice.
//
//   for await (const e of followRun(store, bus, runId, { after: lastEventId, signal })) send(e);
import type { ChangeBus } from '../bus/bus.js';
import { FINAL_EVENT_TYPES, isTerminal, type RunEvent, type RunRecord } from '../store/model.js';
import type { Store } from '../store/store.js';

export interface FollowOptions {
  /** Deliver events with sequence > after (-1: from the start). */
  after?: number;
  /** Stop following (client gone, server closing). */
  signal?: AbortSignal;
  /** Page size of each read from the log. */
  pageSize?: number;
}

const hasEnded = (run: RunRecord | undefined): boolean => !run || isTerminal(run.status);

export async function* followRun(
  store: Store,
  bus: ChangeBus,
  runId: string,
  opts: FollowOptions = {},
): AsyncGenerator<RunEvent> {
  const page = opts.pageSize ?? 500;
  let last = opts.after ?? -1;
  let dirty = true;
  let wake: (() => void) | undefined;
  const unsubscribe = bus.subscribeRun(runId, (n) => {
    if (n.lastSeq > last) {
      dirty = true;
      wake?.();
    }
  });
  const onAbort = () => wake?.();
  opts.signal?.addEventListener('abort', onAbort);
  let ended = false;
  try {
    while (!opts.signal?.aborted) {
      dirty = false;
      const batch = await store.events.list(runId, last, page);
      for (const e of batch) {
        last = e.sequence;
        yield e;
        if (FINAL_EVENT_TYPES.has(e.type)) return;
      }
      if (batch.length === page || dirty) continue;
      // Caught up on a run that has already ended (its final event was at or before `after`).
      // The run may have ended between the read above and this one: read the log once more
      // before concluding, or its last events would be lost.
      if (ended) return;
      // Only the verdict is kept: a run record held across the wait below would be held for the
      // stream's whole life (inputs and outputs can be megabytes; a host has a thousand streams).
      if (hasEnded(await store.runs.get(runId))) {
        ended = true;
        continue;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (dirty || opts.signal?.aborted) resolve();
      });
      wake = undefined;
    }
  } finally {
    unsubscribe();
    opts.signal?.removeEventListener('abort', onAbort);
  }
}
