// Operations: the notifications of gates that could not be sent (dead letters), each retryable.
// GET /v1/notifications?state=dead, POST /v1/notifications/{id}/retry.
import { useState } from 'preact/hooks';
import { api, errorText } from './api.js';
import { useLoaded } from './live.js';
import { Link, runPath } from './router.js';
import { Ago } from './time.js';
import { ErrorNote, Notice, Table } from './ui.js';

interface Notification {
  notificationId: string;
  runId: string;
  nodeId: string;
  reason: string;
  channel: string;
  target: string;
  state: string;
  attempts: number;
  lastError?: string;
  createdAt: string;
}

export function DeadNotifications() {
  const [note, setNote] = useState<string | undefined>();
  const [failed, setFailed] = useState<string | undefined>();
  const dead = useLoaded(
    async () => (await api<{ notifications: Notification[] }>('/v1/notifications?state=dead&limit=100')).notifications,
    [],
  );
  const retry = async (n: Notification) => {
    try {
      await api(`/v1/notifications/${encodeURIComponent(n.notificationId)}/retry`, { method: 'POST', body: {} });
      dead.update((l) => l?.filter((x) => x.notificationId !== n.notificationId));
      setNote(`The ${n.channel} notification to ${n.target} is queued again.`);
      setFailed(undefined);
    } catch (err) {
      setNote(undefined);
      setFailed(`Could not retry notification ${n.notificationId}. ${errorText(err)}`);
      void dead.reload();
    }
  };
  const list = dead.value;
  return (
    <section id="notifications" aria-labelledby="notifications-title">
      <h2 id="notifications-title">Notifications not sent</h2>
      <button type="button" onClick={() => void dead.reload()}>
        Refresh
      </button>
      {note && <Notice tone="ok">{note}</Notice>}
      {failed && <ErrorNote>{failed}</ErrorNote>}
      {dead.error && <ErrorNote>Could not list the notifications. {dead.error}</ErrorNote>}
      {list?.length === 0 && <p class="empty">Every notification was sent.</p>}
      {list && list.length > 0 && (
        <Table
          class="notifications"
          caption="Dead-lettered notifications, newest first"
          columns={['To', 'Run', 'Why', 'Attempts', 'Last error', 'When']}
          actions
        >
          {list.map((n) => (
            <tr key={n.notificationId} data-notification-id={n.notificationId}>
              <td>
                {n.channel}: <code>{n.target}</code>
              </td>
              <td>
                <Link href={runPath(n.runId)}>
                  <code>{n.runId}</code>
                </Link>
              </td>
              <td>{n.reason}</td>
              <td>{n.attempts}</td>
              <td>{n.lastError ?? ''}</td>
              <td>
                <Ago iso={n.createdAt} />
              </td>
              <td>
                <button
                  type="button"
                  onClick={() => void retry(n)}
                  aria-label={`Retry the notification to ${n.target}`}
                >
                  Retry
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
