// Server-Sent Events over fetch, so the Bearer key can be sent (EventSource cannot send headers).
// Reconnects by itself with growing pauses and resumes after the last event id; nothing waits on
// it: callers render what they have and show the stream's state beside it.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ApiError, authHeaders, reportUnauthorized } from './api.js';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'ended';

export interface StreamHandlers {
  onEvent(e: EventSourceMessage): void;
  /** Connected (again): whatever was missed while away should be read again now. */
  onOpen?(): void;
  onState?(state: StreamState): void;
  /** The stream cannot be opened (e.g. 404): it is not tried again. */
  onError?(err: ApiError): void;
  /** Asked when the server closes the stream: true if it is over (no reconnect). */
  isDone?(): boolean;
}

const FIRST_PAUSE_MS = 500;
const LONGEST_PAUSE_MS = 10_000;

/** Follow `path` until the returned function is called. */
export function follow(path: string, on: StreamHandlers): () => void {
  const controller = new AbortController();
  void run(path, on, controller.signal);
  return () => controller.abort();
}

async function run(path: string, on: StreamHandlers, signal: AbortSignal): Promise<void> {
  let lastEventId: string | undefined;
  let pause = FIRST_PAUSE_MS;
  const set = (s: StreamState) => on.onState?.(s);
  set('connecting');
  while (!signal.aborted) {
    try {
      const res = await fetch(path, {
        headers: {
          Accept: 'text/event-stream',
          ...authHeaders(),
          ...(lastEventId !== undefined ? { 'Last-Event-ID': lastEventId } : {}),
        },
        cache: 'no-store',
        signal,
      });
      if (res.status === 401) {
        reportUnauthorized();
        return set('ended');
      }
      if (res.status === 404 || res.status === 400) {
        on.onError?.(new ApiError(res.status, 'not_found', 'This stream does not exist (or is not yours).'));
        return set('ended');
      }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      pause = FIRST_PAUSE_MS;
      set('live');
      on.onOpen?.();
      const parser = createParser({
        onEvent(e) {
          if (e.id !== undefined) lastEventId = e.id;
          on.onEvent(e);
        },
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
      if (on.isDone?.()) return set('ended');
    } catch {
      if (signal.aborted) return;
    }
    set('reconnecting');
    await pauseFor(pause, signal);
    pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
  }
}

function pauseFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
