// Keeping what a page shows current: reads that say why they failed, and the tenant's change
// stream (GET /v1/runs/changes).
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api.js';
import { follow, type StreamState } from './stream.js';

export interface RunChange {
  runId: string;
  status: string;
  lastSeq: number;
}

/**
 * `load` now, and once more after it if asked again meanwhile: a burst of change notices costs at
 * most two reads, and the last read always starts after the last notice.
 */
export function coalesce(load: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  const go = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await load();
        } while (again);
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  return go;
}

/**
 * Follow the tenant's run changes. `resync` is called after every reconnect and when the host says
 * changes may have been missed (the stream is not durable: the list must be read again).
 */
export function useRunChanges(onChange: (c: RunChange) => void, resync: () => void): StreamState {
  const [state, setState] = useState<StreamState>('connecting');
  // The latest callbacks, whatever render made them; the stream itself lives as long as the page.
  const handlers = useRef({ onChange, resync });
  handlers.current = { onChange, resync };
  useEffect(() => {
    let opened = false;
    return follow('/v1/runs/changes', {
      onState: setState,
      onOpen() {
        // The page read the list when it mounted; after a reconnect it reads it again.
        if (opened) handlers.current.resync();
        opened = true;
      },
      onEvent(e) {
        if (e.event === 'resync') handlers.current.resync();
        else if (e.event === 'run') handlers.current.onChange(JSON.parse(e.data) as RunChange);
      },
    });
  }, []);
  return state;
}

export interface Loaded<T> {
  value: T | undefined;
  /** Why the last read failed (the last good value stays shown). */
  error: string | undefined;
  reload: () => Promise<void>;
  /** Change the shown value in place (e.g. with a row an action returned). */
  update: (change: (value: T | undefined) => T | undefined) => void;
}

/** `read()` when the component mounts and whenever `deps` change. */
export function useLoaded<T>(read: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [value, setValue] = useState<T | undefined>();
  const [error, setError] = useState<string | undefined>();
  const reload = async () => {
    try {
      setValue(await read());
      setError(undefined);
    } catch (err) {
      setError(errorText(err));
    }
  };
  useEffect(() => {
    void reload();
  }, deps);
  return { value, error, reload, update: setValue };
}
