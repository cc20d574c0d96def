// What a notification says, for every channel: the gate's title, the run's workflow and inputs,
// the draft (or the questions), the deadline and the decision links. Pure: the worker reads the
// run and the interrupt, and this turns them into text, HTML, a webhook body or a Slack message.
import type { InterruptRecord, RunRecord } from '../store/model.js';
import type { NotificationRecord } from '../store/repos/notifications.js';

export interface Message {
  reason: NotificationRecord['reason'];
  kind: InterruptRecord['kind'];
  title: string;
  workflow: { id: string; name: string };
  runId: string;
  nodeId: string;
  interruptId: string;
  inputs: Record<string, unknown>;
  /** The draft to approve (approval gates). */
  artifact?: unknown;
  /** What is asked (clarification gates). */
  questions?: Array<{ id: string; question: string }>;
  actions: string[];
  expiresAt?: string;
  links: {
    /** The decide page (no API key): `<public>/console/decide/{token}`. */
    decide?: string;
    /** The same link's API form: `GET|POST <public>/v1/interrupts/{token}`. */
    api?: string;
    /** The run in the console (needs an API key). */
    run: string;
  };
}

/** Bytes of inputs or draft a message shows at most; the decide page shows the whole draft. */
const SHOWN_MAX = 16 * 1024;

export function messageOf(
  n: NotificationRecord,
  run: RunRecord,
  interrupt: InterruptRecord,
  workflowName: string,
  baseUrl: string,
  token: string | undefined,
): Message {
  const d = interrupt.data;
  const title =
    typeof d.title === 'string' && d.title ? d.title : interrupt.kind === 'approval' ? 'Approval' : 'Questions';
  return {
    reason: n.reason,
    kind: interrupt.kind,
    title,
    workflow: { id: run.workflowId, name: workflowName },
    runId: run.runId,
    nodeId: interrupt.nodeId,
    interruptId: interrupt.interruptId,
    inputs: run.inputs,
    ...(interrupt.kind === 'approval' ? { artifact: d.artifact ?? null } : {}),
    ...(Array.isArray(d.questions) ? { questions: d.questions as Message['questions'] } : {}),
    actions: interrupt.kind === 'approval' ? ((d.actions as string[] | undefined) ?? []) : ['answer'],
    ...(typeof d.expiresAt === 'string' ? { expiresAt: d.expiresAt } : {}),
    links: {
      ...(token ? { decide: `${baseUrl}/console/decide/${token}`, api: `${baseUrl}/v1/interrupts/${token}` } : {}),
      run: `${baseUrl}/console/runs/${encodeURIComponent(run.runId)}`,
    },
  };
}

/** One line: what waits for whom. */
export function summaryOf(m: Message): string {
  const what = m.kind === 'approval' ? 'waits for your approval' : 'has questions for you';
  const lead = m.reason === 'reminder' ? 'Reminder: ' : m.reason === 'escalated' ? 'Escalated to you: ' : '';
  const due = m.expiresAt ? ` (deadline ${m.expiresAt})` : '';
  return `${lead}${m.title} — run ${m.runId} of ${m.workflow.name} ${what}${due}`;
}

const shown = (v: unknown): string => {
  const text = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  return text.length > SHOWN_MAX ? `${text.slice(0, SHOWN_MAX)}\n… (shortened; the decide page shows all)` : text;
};

/** The plain-text part of an e-mail. */
export function textOf(m: Message): string {
  const lines = [summaryOf(m), '', `Workflow: ${m.workflow.name} (${m.workflow.id})`, `Run: ${m.runId}`];
  if (m.expiresAt) lines.push(`Deadline: ${m.expiresAt}`);
  lines.push('', 'Inputs:', shown(m.inputs), '');
  if (m.kind === 'approval') lines.push('Draft:', shown(m.artifact), '', `Actions: ${m.actions.join(', ')}`);
  else for (const q of m.questions ?? []) lines.push(`- ${q.question}`);
  lines.push('');
  if (m.links.decide) {
    lines.push(`Decide: ${m.links.decide}`, `API: GET or POST ${m.links.api} with {"resumeValue": {…}}`);
  }
  lines.push(`Run in the console: ${m.links.run}`);
  return `${lines.join('\n')}\n`;
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** The HTML part of an e-mail. */
export function htmlOf(m: Message): string {
  const pre = (v: unknown) => `<pre style="white-space:pre-wrap">${escapeHtml(shown(v))}</pre>`;
  const link = (href: string, text: string) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;
  const body = [
    `<h2>${escapeHtml(m.title)}</h2>`,
    `<p>${escapeHtml(summaryOf(m))}</p>`,
    `<p>Workflow: ${escapeHtml(m.workflow.name)} (${escapeHtml(m.workflow.id)})<br>Run: ${escapeHtml(m.runId)}`,
    m.expiresAt ? `<br>Deadline: ${escapeHtml(m.expiresAt)}</p>` : '</p>',
    '<h3>Inputs</h3>',
    pre(m.inputs),
    m.kind === 'approval'
      ? `<h3>Draft</h3>${pre(m.artifact)}`
      : `<h3>Questions</h3><ul>${(m.questions ?? []).map((q) => `<li>${escapeHtml(q.question)}</li>`).join('')}</ul>`,
    m.links.decide ? `<p>${link(m.links.decide, 'Decide')} (${escapeHtml(m.actions.join(', '))})</p>` : '',
    `<p>${link(m.links.run, 'The run in the console')}</p>`,
  ];
  return `<!doctype html><html><body>${body.join('\n')}</body></html>`;
}

/** A webhook's JSON body (Standard Webhooks: type, timestamp, data). */
export function webhookBodyOf(m: Message, at: Date): string {
  return JSON.stringify({ type: `interrupt.${m.reason}`, timestamp: at.toISOString(), data: m });
}

/** A Slack incoming-webhook message: the title, the summary and the decision links. */
export function slackBodyOf(m: Message): string {
  const links = [...(m.links.decide ? [`<${m.links.decide}|Decide>`] : []), `<${m.links.run}|Open the run>`].join(
    '  ·  ',
  );
  return JSON.stringify({
    text: summaryOf(m),
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: m.title.slice(0, 150) } },
      { type: 'section', text: { type: 'mrkdwn', text: summaryOf(m).slice(0, 3000) } },
      { type: 'section', text: { type: 'mrkdwn', text: links } },
    ],
  });
}
