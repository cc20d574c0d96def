// Two real Handoff processes for the a2a.invoke tests: B is the agent called, A the caller with
// `reviewer=<B>` in its registry. Test workflows `call_<mode>_<onInputRequired>` on A take the
// agent, skill and prompt from their inputs.
//
//   const wf = writeCallWorkflows();                       // a directory for HANDOFF_WORKFLOWS
//   const b = await startServer({ dataDir: tmp('b') });
//   const a = await startServer({ dataDir: tmp('a'), env: callerEnv(wf, { reviewer: b.url }) });
//   const run = await startRun(a.url, 'call_poll_wait', { agent: 'reviewer', skill: 'approval', prompt: 'hi' });
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { getJson, postJson } from './server-process.js';
import { until } from './until.js';

export const tmp = (label: string): string => mkdtempSync(join(tmpdir(), `handoff-invoke-${label}-`));

const MODES = ['auto', 'poll', 'push', 'stream'] as const;
const ON_INPUT = ['wait', 'clarify', 'fail'] as const;

/** One workflow per (wait mode, onInputRequired): a single a2a.invoke node whose output is the run's artifact. */
export function writeCallWorkflows(timeoutMs = 600_000): string {
  const dir = tmp('wf');
  for (const mode of MODES) {
    for (const onInput of ON_INPUT) {
      const id = `call_${mode}_${onInput}`;
      writeFileSync(
        join(dir, `${id}.json`),
        JSON.stringify({
          id,
          name: id,
          version: '1.0.0',
          inputSchema: {
            type: 'object',
            properties: { agent: { type: 'string' }, skill: { type: 'string' }, prompt: { type: 'string' } },
          },
          nodes: [
            {
              id: 'call',
              typeId: 'a2a.invoke',
              name: 'Call',
              position: { x: 0, y: 0 },
              outputRole: 'artifact',
              config: {
                agent: '{{ inputs.agent }}',
                skill: '{{ inputs.skill }}',
                text: '{{ inputs.prompt }}',
                wait: mode,
                timeoutMs,
                onInputRequired: onInput,
              },
              inputs: {},
            },
          ],
          edges: [],
          triggers: [{ id: 'manual', type: 'manual', enabled: true }],
          variables: [],
          metadata: {},
          settings: {},
        }),
      );
    }
  }
  return dir;
}

/** A's environment: its registry, the test workflows, fast polling. */
export function callerEnv(workflowDir: string, agents: Record<string, string>, extra: Record<string, string> = {}) {
  return {
    HANDOFF_AGENTS: Object.entries(agents)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    HANDOFF_WORKFLOWS: workflowDir,
    HANDOFF_AGENT_POLL_MIN_MS: '50',
    HANDOFF_AGENT_POLL_MAX_MS: '250',
    HANDOFF_AGENT_TIMEOUT_MS: '3000',
    ...extra,
  };
}

export async function startRun(base: string, workflowId: string, inputs: Record<string, unknown>): Promise<string> {
  const res = await postJson(`${base}/v1/runs`, { workflowId, inputs });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.runId as string;
}

export async function getRun(base: string, runId: string): Promise<any> {
  const res = await getJson(`${base}/v1/runs/${runId}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

export async function events(base: string, runId: string): Promise<any[]> {
  const res = await getJson(`${base}/v1/runs/${runId}/events/poll?timeout=0`);
  return (res.body.events ?? []) as any[];
}

/** Wait until the run's status is one of `statuses`; returns its snapshot. */
export function untilStatus(base: string, runId: string, statuses: string[], deadlineMs = 60_000): Promise<any> {
  let last: any;
  return until(
    `run ${runId} on ${base} to be ${statuses.join('|')}`,
    async () => {
      try {
        last = await getRun(base, runId);
      } catch {
        return false; // the host is restarting
      }
      return statuses.includes(last.status) && last;
    },
    { deadlineMs, intervalMs: 50, detail: () => JSON.stringify(last)?.slice(0, 1500) },
  );
}

/** Wait until A's run waits on a peer task in `state`; returns the peer task id. */
export async function untilWaitingOn(base: string, runId: string, state: string): Promise<string> {
  const snap = await until(
    `run ${runId} to wait on a peer task in ${state}`,
    async () => {
      const s = await getRun(base, runId);
      return s.waitingOn?.state === state && s;
    },
    { deadlineMs: 60_000, intervalMs: 50 },
  );
  return snap.waitingOn.peerTaskId as string;
}
