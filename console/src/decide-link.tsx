// The page a notification's decision link opens: /console/decide/{token}. It needs no API key —
// the signed one-time token is the credential — so it stands outside the signed-in console. It
// shows the gate (GET /v1/interrupts/{token}, which changes nothing: mail scanners fetch links)
// with the console's own decision forms, one per action; only pressing one decides (a POST).
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, errorText } from './api.js';
import { ApprovalPanel, ClarificationPanel } from './decide.js';
import { Ago } from './time.js';
import type { OpenInterrupt, Question } from './types.js';
import { ErrorNote, Fact, Notice } from './ui.js';

/** GET /v1/interrupts/{token}. */
interface LinkView {
  runId: string;
  nodeId: string;
  interruptId: string;
  kind: 'approval' | 'clarification';
  title: string;
  recipient: string;
  artifact?: unknown;
  questions?: Question[];
  actions: string[];
  /** What the page shows, hashed: the decision is bound to it (409 artifact_changed if it changed). */
  artifactHash?: string;
  expiresAt: string;
  deadline?: string;
  workflowId: string;
}

type Shown =
  | { kind: 'loading' }
  | { kind: 'open'; link: LinkView }
  | { kind: 'decided'; what: string }
  | { kind: 'refused'; message: string };

/** Why a link cannot decide, in words (the host's 404, 409 and 410). */
function refusal(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 404) return 'This decision link is not valid. Check that the whole link was opened.';
    if (err.status === 409 && err.code === 'artifact_changed') {
      return 'The draft changed since this page was opened. Reload the page to see the new one.';
    }
    if (err.status === 409) return 'This decision link was used already, or the decision was made by someone else.';
    if (err.status === 410) return 'This decision link has expired.';
    if (err.status === 429) return 'Too many attempts with this link. Wait a minute and try again.';
  }
  return errorText(err);
}

/** The link's gate as the console's decision forms take it. */
const asInterrupt = (l: LinkView): OpenInterrupt => ({
  kind: l.kind,
  nodeId: l.nodeId,
  interruptId: l.interruptId,
  ...(l.deadline ? { expiresAt: l.deadline } : {}),
  payload: {
    title: l.title,
    actions: l.actions,
    approversList: [l.recipient],
    ...(l.kind === 'approval' ? { artifact: l.artifact } : { questions: l.questions ?? [] }),
  },
  votes: [],
  exchanges: [],
});

export function DecideLinkPage({ token }: { token: string }) {
  const [shown, setShown] = useState<Shown>({ kind: 'loading' });
  const [pending, setPending] = useState(false);
  const [failed, setFailed] = useState<string | undefined>();
  const path = `/v1/interrupts/${encodeURIComponent(token)}`;

  useEffect(() => {
    document.title = 'Your decision · Handoff';
    api<LinkView>(path).then(
      (link) => setShown({ kind: 'open', link }),
      (err) => setShown({ kind: 'refused', message: refusal(err) }),
    );
  }, [token]);

  const decide = async (resumeValue: Record<string, unknown>, what: string) => {
    setPending(true);
    setFailed(undefined);
    try {
      // Bound to what was shown: a draft changed meanwhile (a refine raced this) is refused, not approved.
      const hash = shown.kind === 'open' ? shown.link.artifactHash : undefined;
      await api(path, { method: 'POST', body: { resumeValue, ...(hash ? { expectedArtifactHash: hash } : {}) } });
      setShown({ kind: 'decided', what });
    } catch (err) {
      if (err instanceof ApiError && [404, 409, 410].includes(err.status))
        setShown({ kind: 'refused', message: refusal(err) });
      else setFailed(errorText(err));
    } finally {
      setPending(false);
    }
  };

  return (
    <>
      <header class="top">
        <span class="brand">Handoff</span>
      </header>
      <main id="main">
        {shown.kind === 'loading' && <p>Loading the decision…</p>}
        {shown.kind === 'refused' && (
          <section>
            <h1 tabIndex={-1}>This link cannot decide</h1>
            <ErrorNote>{shown.message}</ErrorNote>
          </section>
        )}
        {shown.kind === 'decided' && (
          <section>
            <h1 tabIndex={-1}>Thank you</h1>
            <Notice tone="ok">{shown.what}. The run goes on; this link cannot be used again.</Notice>
          </section>
        )}
        {shown.kind === 'open' && (
          <section aria-labelledby="link-title">
            <h1 id="link-title" tabIndex={-1}>
              {shown.link.title}
            </h1>
            <dl class="facts">
              <Fact term="Workflow">
                <code>{shown.link.workflowId}</code>
              </Fact>
              <Fact term="Run">
                <code>{shown.link.runId}</code>
              </Fact>
              <Fact term="You decide as">{shown.link.recipient}</Fact>
              <Fact term="Link expires">
                <Ago iso={shown.link.expiresAt} />
              </Fact>
            </dl>
            {failed && <ErrorNote>{failed}</ErrorNote>}
            {shown.link.kind === 'approval' ? (
              <ApprovalPanel interrupt={asInterrupt(shown.link)} pending={pending} onDecide={decide} />
            ) : (
              <ClarificationPanel interrupt={asInterrupt(shown.link)} pending={pending} onDecide={decide} />
            )}
          </section>
        )}
      </main>
    </>
  );
}
