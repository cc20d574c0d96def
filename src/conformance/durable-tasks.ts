// Leg 3, durable tasks/get (gated on a2a.durableTasks): drive a real run to an approval pause
// through the host-sample seam, then read it back twice — the persisted A2ATaskState from the
// read seam (a live input-required, not a stale working; runId === taskId; interruptKind
// approval; schema-valid), and the A2A Task from JSON-RPC tasks/get at the card's url
// (status.state input-required, metadata.openwop.interrupt.kind approval).
import { type LegRun, type SuiteContext, ev, isObject, pick, requireJsonObject } from './context.js';
import { schemaEvidence } from './schemas.js';
import { dialectOf, gate, requireRpcUrl, seamAbsent, skipSeamAbsent } from './gates.js';

export const START_SEAM = '/v1/host/sample/a2a/tasks/start';
export const READ_SEAM = '/v1/host/sample/a2a/tasks/';

export async function durableTasksLeg(ctx: SuiteContext, leg: LegRun): Promise<void> {
  gate(ctx, leg, 'durableTasks');
  const rpcUrl = requireRpcUrl(ctx, leg);
  const d = dialectOf(ctx);
  const m = d.methods;

  const start = await ctx.http.request('POST', ctx.url(START_SEAM), {
    body: { scenario: 'paused-at-approval' },
    auth: true,
  });
  if (seamAbsent(start)) skipSeamAbsent(leg, start, 'the start seam is not mounted');
  leg.require(
    start.status >= 200 && start.status < 300,
    'the start seam answers 2xx',
    ev(start, { expected: '2xx (200 or 201) with {taskId}', actual: start.status }),
  );
  const taskId = pick(start.json, 'taskId');
  leg.require(
    typeof taskId === 'string' && taskId !== '',
    'the start seam returns a taskId',
    ev(start, { field: 'taskId', expected: 'a non-empty string (the backing runId)', actual: taskId }),
  );

  try {
    // The persisted record, read straight away (the seam must not return before the pause).
    const read = await ctx.http.request('GET', ctx.url(READ_SEAM + encodeURIComponent(taskId)), { auth: true });
    if (seamAbsent(read)) skipSeamAbsent(leg, read, 'the read seam is not mounted');
    const rec = requireJsonObject(
      leg,
      read,
      { answered: 'the read seam answers 200', isJson: 'the read seam returns a JSON object' },
      'an A2ATaskState object',
    );
    const envelope =
      rec.state === undefined && isObject(rec.status)
        ? ' (this looks like an A2A Task envelope: the seam must return the A2ATaskState record with a top-level state)'
        : '';
    leg.expect(
      rec.state === 'input-required',
      "record.state is 'input-required' (live, not a stale 'working')",
      ev(read, {
        field: 'state',
        expected: 'input-required',
        actual: rec.state,
        note:
          rec.state === 'working'
            ? `stale state: the run is paused at approval but the persisted record still says 'working'${envelope}`
            : envelope || undefined,
      }),
    );
    leg.expect(
      rec.runId === taskId,
      'record.runId === taskId',
      ev(read, { field: 'runId', expected: taskId, actual: rec.runId }),
    );
    leg.expect(
      rec.taskId === taskId,
      'record.taskId is the started task',
      ev(read, { field: 'taskId', expected: taskId, actual: rec.taskId }),
    );
    leg.expect(
      rec.interruptKind === 'approval',
      "record.interruptKind is 'approval'",
      ev(read, { field: 'interruptKind', expected: 'approval', actual: rec.interruptKind }),
    );
    if (ctx.schemas) {
      const validate = ctx.schemas.taskState;
      const ok = validate(rec) as boolean;
      leg.expect(ok, 'the record validates against a2a-task-state.schema.json', () =>
        ev(read, schemaEvidence(validate.errors, rec, 'record')),
      );
    } else {
      leg.expect(false, 'the record validates against a2a-task-state.schema.json', {
        note: `schemas unavailable: ${ctx.schemasError}`,
      });
    }

    // The normative surface: JSON-RPC tasks/get (1.0: GetTask) at the card's url.
    const got = await ctx.http.rpc(rpcUrl, m.get, { id: taskId }, { auth: true, headers: d.headers });
    leg.require(
      got.status === 200,
      `JSON-RPC ${m.get} answers HTTP 200`,
      ev(got, { expected: 200, actual: got.status }),
    );
    const error = pick(got.json, 'error');
    leg.require(
      error === undefined && isObject(pick(got.json, 'result')),
      `JSON-RPC ${m.get} returns a result`,
      ev(got, { field: 'error', expected: 'no error, a Task result', actual: error ?? pick(got.json, 'result') }),
    );
    // 1.0 answers are read in the 0.3 shape (TASK_STATE_INPUT_REQUIRED is input-required).
    const result = d.result(pick(got.json, 'result'));
    const state = pick(result, 'status.state');
    leg.expect(
      state === 'input-required',
      `${m.get} result.status.state is 'input-required'`,
      ev(got, { field: 'result.status.state', expected: 'input-required', actual: state }),
    );
    const id = pick(result, 'id');
    leg.expect(
      id === taskId,
      `${m.get} result.id is the task id`,
      ev(got, { field: 'result.id', expected: taskId, actual: id }),
    );
    const kind = pick(result, 'metadata.openwop.interrupt.kind');
    leg.expect(
      kind === 'approval',
      `${m.get} result.metadata.openwop.interrupt.kind is 'approval'`,
      ev(got, { field: 'result.metadata.openwop.interrupt.kind', expected: 'approval', actual: kind }),
    );
  } finally {
    // Leave nothing paused behind: cancel the probe's task (best effort, not a check).
    try {
      const c = await ctx.http.rpc(
        rpcUrl,
        m.cancel,
        { id: taskId },
        { auth: true, timeoutMs: 5_000, headers: d.headers },
      );
      const err = pick(c.json, 'error.message');
      leg.note(`cleanup: ${m.cancel} ${taskId} → HTTP ${c.status}${err ? ` (${String(err)})` : ''}`);
    } catch (e) {
      leg.note(`cleanup: ${m.cancel} ${taskId} failed: ${(e as Error).message}`);
    }
  }
}
