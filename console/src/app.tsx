// The console's frame: sign-in when the host has API keys, the navigation, and the page of the path.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, apiKey, errorText, onUnauthorized, setApiKey } from './api.js';
import { Inbox } from './inbox.js';
import { finishProviderSignIn, type ProviderSignIn, providerSignIn, startProviderSignIn } from './oidc.js';
import { Operations } from './operations.js';
import { Link, routeOf, usePath } from './router.js';
import { StartRun } from './start.js';
import { TaskPage } from './task.js';
import { ErrorNote } from './ui.js';

type Auth =
  | { kind: 'checking' }
  | { kind: 'signed-out'; message?: string }
  | { kind: 'signed-in'; keyed: boolean }
  | { kind: 'unreachable'; message: string };

type Tried = Exclude<Auth, { kind: 'checking' }>;

/** Does the host answer an authenticated read with this key ('' = none)? */
async function tryKey(key: string): Promise<Tried> {
  try {
    await api('/v1/runs?limit=1', { key });
    return { kind: 'signed-in', keyed: key !== '' };
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return { kind: 'signed-out' };
    return { kind: 'unreachable', message: errorText(err) };
  }
}

export function App() {
  const path = usePath();
  const [auth, setAuth] = useState<Auth>({ kind: 'checking' });
  const [provider, setProvider] = useState<ProviderSignIn | undefined>();

  const check = async () => {
    const p = await providerSignIn();
    setProvider(p);
    // Back from the provider with a code: the token it is exchanged for signs this tab in.
    if (p && (await finishProviderSignIn(p))) {
      setAuth({ kind: 'signed-in', keyed: true });
      return;
    }
    const saved = apiKey();
    const result = await tryKey(saved ?? '');
    if (result.kind === 'signed-out' && saved) {
      setApiKey(undefined);
      setAuth({ kind: 'signed-out', message: 'The key of this session is no longer accepted. Sign in again.' });
    } else setAuth(result);
  };

  useEffect(() => {
    onUnauthorized(() => {
      setApiKey(undefined);
      setAuth({ kind: 'signed-out', message: 'This host no longer accepts your API key. Sign in again.' });
    });
    void check();
  }, []);

  const signOut = () => {
    setApiKey(undefined);
    setAuth({ kind: 'signed-out', message: 'Signed out.' });
  };

  const route = routeOf(path);
  const signedIn = auth.kind === 'signed-in';
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link class="brand" href="/console">
          Handoff
        </Link>
        {signedIn && (
          <nav aria-label="Console">
            <ul>
              <li>
                <Link href="/console" aria-current={route.page === 'inbox' ? 'page' : undefined}>
                  Inbox
                </Link>
              </li>
              <li>
                <Link href="/console/operations" aria-current={route.page === 'operations' ? 'page' : undefined}>
                  Operations
                </Link>
              </li>
              <li>
                <Link href="/console/start" aria-current={route.page === 'start' ? 'page' : undefined}>
                  Start a run
                </Link>
              </li>
            </ul>
          </nav>
        )}
        {signedIn && auth.keyed && (
          <button type="button" class="quiet" onClick={signOut}>
            Sign out
          </button>
        )}
      </header>
      <main id="main">
        <FocusOnNavigation path={path} />
        {auth.kind === 'checking' && <p>Connecting to the host…</p>}
        {auth.kind === 'unreachable' && (
          <section>
            <h1 tabIndex={-1}>Cannot reach the host</h1>
            <ErrorNote>{auth.message}</ErrorNote>
            <button type="button" onClick={() => void check()}>
              Try again
            </button>
          </section>
        )}
        {auth.kind === 'signed-out' && (
          <SignIn
            message={auth.message}
            provider={provider}
            onSignedIn={(keyed) => setAuth({ kind: 'signed-in', keyed })}
          />
        )}
        {signedIn && route.page === 'inbox' && <Inbox />}
        {signedIn && route.page === 'operations' && <Operations />}
        {signedIn && route.page === 'run' && <TaskPage key={route.runId} runId={route.runId} />}
        {signedIn && route.page === 'start' && <StartRun workflowId={route.workflowId} />}
        {signedIn && route.page === 'unknown' && (
          <section>
            <h1 tabIndex={-1}>No such page</h1>
            <p>
              There is no console page at <code>{route.path}</code>. Go to the <Link href="/console">inbox</Link>.
            </p>
          </section>
        )}
      </main>
    </>
  );
}

/** After an in-page navigation, move focus to the new page's heading (where a reader expects to be). */
function FocusOnNavigation({ path }: { path: string }) {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [path]);
  return null;
}

function SignIn({
  message,
  provider,
  onSignedIn,
}: {
  message: string | undefined;
  provider: ProviderSignIn | undefined;
  onSignedIn: (keyed: boolean) => void;
}) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    document.title = 'Sign in · Handoff';
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    const given = key.trim();
    if (given === '') {
      setError('Enter an API key.');
      return;
    }
    setBusy(true);
    const result = await tryKey(given);
    setBusy(false);
    if (result.kind === 'signed-in') {
      setApiKey(given);
      onSignedIn(true);
    } else if (result.kind === 'signed-out') setError('This host did not accept that key. Check it and try again.');
    else setError(result.message);
  };

  return (
    <section class="sign-in">
      <h1 tabIndex={-1}>Sign in</h1>
      <p>This host requires an API key. It is kept only for this browser tab and sent with each request.</p>
      {message && !error && <p role="status">{message}</p>}
      {provider && (
        <p>
          <button type="button" onClick={() => void startProviderSignIn(provider)}>
            Sign in with your organization
          </button>{' '}
          <span class="quiet">({new URL(provider.issuer).host})</span>
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? 'api-key-error' : undefined}
        />
        {error && (
          <p id="api-key-error" class="note note-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </section>
  );
}
