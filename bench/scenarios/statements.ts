// What one flow costs the database, counted by Handoff itself: `handoff_store_statements_total{op}`
// (every statement the store runs, BEGIN and COMMIT included) read from /metrics before and after
// FLOWS flows of each kind, run one at a time so that no two share a group commit (commits per
// flow is then the flow's own transactions). Handoff only; SQLite on the harness's server, and
// PostgreSQL on a server this scenario starts (there every statement is one round trip; the bus's
// NOTIFY, sent on its own pool after the commit, is not a store statement and is counted apart).
//
//   echo            message/send (blocking echo → completed)
//   approval-send   message/send of the approval skill (→ input-required)
//   approval-reply  the reply {action: accept} into it (→ completed); the approval flow is both
//   get             tasks/get {historyLength: 10} of a completed echo task (on SQLite, the exact
//                   tasks/get cache answers it after the first read: no statement)
//   runs-create     POST /v1/runs {workflowId: 'approval'} (the run parks at its gate)
//
// On PostgreSQL, also the round trips per flow (`handoff_store_round_trips_total`): the store's
// driver pipelines a transaction's writes (src/store/pg-driver.ts), so several statements share one.
import { PG_URL, startHandoffPg } from '../lib/handoff-server.js';
import { handoffCells, handoffOrigin } from '../lib/handoff-only.js';
import { http } from '../lib/http.js';
import { scrapeMetrics } from '../lib/metrics-text.js';
import { registerScenario, type Figures, type ScenarioResult } from '../lib/registry.js';
import { fmtFixed, shortError, type Section } from '../lib/report.js';
import { getTask, sendDecision, sendNew, taskIdOf } from '../lib/rpc.js';
import { medians } from '../lib/stats.js';

const FLOWS = 50;
const OPS = ['select', 'insert', 'update', 'delete', 'begin', 'commit'] as const;
/** Not a statement kind: the exchanges with PostgreSQL the store waited for. */
const ROUND_TRIPS = 'round_trips';
const FLOW_KINDS = ['echo', 'approval-send', 'approval-reply', 'get', 'runs-create'] as const;
type FlowKind = (typeof FLOW_KINDS)[number];
/** Rows of the table: the flows, and the approval flow as the sum of its two requests. */
const ROWS = ['echo', 'approval-send', 'approval-reply', 'approval', 'get', 'runs-create'] as const;

let pgReason: string | undefined;

async function rpc(base: string, body: unknown): Promise<string> {
  const { status, text } = await http('POST', `${base}/v1/a2a`, { body });
  if (status !== 200 || !text.includes('"result"')) throw new Error(`${status}: ${text.slice(0, 200)}`);
  return text;
}

/** Tasks waiting at their gate, made by `approval-send` flows for the `approval-reply` flows. */
const waiting: string[] = [];

async function flow(base: string, kind: FlowKind, getId: string): Promise<void> {
  if (kind === 'echo') await rpc(base, sendNew('echo'));
  else if (kind === 'get') await rpc(base, getTask(getId));
  else if (kind === 'runs-create') {
    const body = { workflowId: 'approval', inputs: { prompt: 'x' } };
    const { status, text } = await http('POST', `${base}/v1/runs`, { body });
    if (status !== 201) throw new Error(`POST /v1/runs: ${status}: ${text.slice(0, 200)}`);
  } else if (kind === 'approval-send') {
    const id = taskIdOf(await rpc(base, sendNew('approval', 'Please approve this benchmark request.')));
    if (!id) throw new Error('approval send answered no task');
    waiting.push(id);
  } else {
    const done = await rpc(base, sendDecision(waiting.pop() as string, 'accept'));
    if (!done.includes('"state":"completed"')) throw new Error(`approval reply: ${done.slice(0, 200)}`);
  }
}

async function counts(base: string): Promise<Record<string, number>> {
  const m = await scrapeMetrics(base);
  const out: Record<string, number> = {};
  for (const op of OPS) out[op] = m.sum(new RegExp(`^handoff_store_statements_total\\{op="${op}"\\} `));
  out[ROUND_TRIPS] = m.sum(/^handoff_store_round_trips_total /);
  return out;
}

/** Statements per flow of each kind, by op, on the Handoff at `base`. */
async function perFlow(base: string, prefix: string): Promise<Figures> {
  const echo = taskIdOf(await rpc(base, sendNew('echo'))) as string;
  const figures: Figures = {};
  waiting.length = 0;
  for (const kind of FLOW_KINDS) {
    // Warm-up (first-use statements, caches); an approval-send warms up twice (+1 for the reply's).
    if (kind === 'approval-send') await flow(base, kind, echo);
    await flow(base, kind, echo);
    const before = await counts(base);
    for (let i = 0; i < FLOWS; i++) await flow(base, kind, echo);
    const after = await counts(base);
    let all = 0;
    for (const op of OPS) {
      const n = ((after[op] ?? 0) - (before[op] ?? 0)) / FLOWS;
      figures[`${prefix}.${kind}.${op}`] = n;
      all += n;
    }
    figures[`${prefix}.${kind}.total`] = all;
    figures[`${prefix}.${kind}.${ROUND_TRIPS}`] = ((after[ROUND_TRIPS] ?? 0) - (before[ROUND_TRIPS] ?? 0)) / FLOWS;
  }
  for (const op of [...OPS, 'total', ROUND_TRIPS]) {
    figures[`${prefix}.approval.${op}`] =
      (figures[`${prefix}.approval-send.${op}`] ?? 0) + (figures[`${prefix}.approval-reply.${op}`] ?? 0);
  }
  return figures;
}

registerScenario({
  name: 'statements',
  description: `Statements and commits per flow, from Handoff's own counter (${FLOWS} sequential flows each).`,
  order: 45,
  async run(ctx) {
    const base = handoffOrigin(ctx, "Handoff's /metrics");
    const figures = await perFlow(base, 'sqlite');
    if (ctx.target.name !== 'handoff') return figures;
    try {
      const pg = await startHandoffPg();
      try {
        Object.assign(figures, await perFlow(pg.base, 'pg'));
      } finally {
        await pg.stop();
      }
      pgReason = undefined;
    } catch (err) {
      pgReason = `PostgreSQL at ${PG_URL}: ${shortError(err)}`;
    }
    return figures;
  },
  section: statementsSection,
});

function statementsSection(result: ScenarioResult): Section {
  const { cells, skipped } = handoffCells(result);
  const rows: string[][] = [];
  for (const cell of cells) {
    const m = medians(cell.runs);
    for (const db of ['sqlite', 'pg']) {
      for (const kind of ROWS) {
        const total = m[`${db}.${kind}.total`];
        if (total === undefined || !Number.isFinite(total)) continue;
        rows.push([
          `${cell.target} (${db === 'pg' ? 'PostgreSQL' : 'SQLite'})`,
          kind,
          `**${fmtFixed(total, 1)}**`,
          ...OPS.map((op) => fmtFixed(m[`${db}.${kind}.${op}`], 1)),
          db === 'pg' ? fmtFixed(m[`${db}.${kind}.${ROUND_TRIPS}`], 1) : '–',
        ]);
      }
    }
  }
  return {
    title: 'statements: statements and commits per flow',
    intro: `${result.description} Counted by \`handoff_store_statements_total{op}\` in /metrics.`,
    columns: ['server', 'flow', 'statements', ...OPS, 'PostgreSQL round trips'],
    rows,
    after:
      'One flow at a time, so each transaction commits alone: `commit` is the commits a flow needs; under ' +
      'load SQLite shares them (group commit: the transactions of one event-loop turn in one COMMIT, without savepoints). ' +
      'On PostgreSQL a transaction’s writes whose results are not read go out together with its next ' +
      'awaited statement (pipelined, src/store/pg-driver.ts): "round trips" counts the exchanges the ' +
      'store waited for (a build without that counter shows 0 there). The bus adds one `pg_notify` per ' +
      'run change, on its own pool, after the commit (batched per event-loop turn), not counted here.' +
      (skipped.length > 0 ? ` Not applicable: ${skipped.join(', ')}.` : '') +
      (pgReason ? ` PostgreSQL not measured: ${pgReason}.` : ''),
  };
}
