// Runs the five RFC 0100 legs in order against one host and builds the report. A leg ends as
// PASS (every check held), FAIL (a check failed, or it threw), or SKIP (its capability flag or
// seam is missing, or the run was inconclusive) — and under --strict a SKIP is a FAIL.
//
//   const report = await runConformance({ baseUrl: 'http://127.0.0.1:8080', apiKey, strict: true });
//   report.ok; report.exitCode; report.legs[4].status;
import { type Discovery, LegAbort, LegRun, LegSkip, type SuiteContext } from './context.js';
import { discoveryLeg } from './discovery.js';
import { durableTasksLeg } from './durable-tasks.js';
import { HostHttp, RequestError, describeError } from './http.js';
import { pushSsrfLeg } from './push-ssrf.js';
import { resubscribeLeg } from './resubscribe.js';
import { loadSchemas, type Schemas } from './schemas.js';
import { taskStateShapeLeg } from './task-state-shape.js';
import type { ConformanceOptions, ConformanceReport, LegId, LegResult } from './types.js';

interface LegDef {
  id: LegId;
  title: string;
  run: (ctx: SuiteContext, leg: LegRun) => Promise<void>;
}

export const LEGS: readonly LegDef[] = [
  { id: 'discovery', title: 'discovery shape', run: discoveryLeg },
  { id: 'task-state-shape', title: 'A2ATaskState shape (server-free)', run: taskStateShapeLeg },
  { id: 'durable-tasks-get', title: 'durable tasks/get (a2a.durableTasks)', run: durableTasksLeg },
  { id: 'push-ssrf', title: 'push SSRF, two-sided (a2a.pushNotifications)', run: pushSsrfLeg },
  { id: 'resubscribe', title: 'tasks/resubscribe (a2a.streaming)', run: resubscribeLeg },
];

/** "http://h:1/x/" → "http://h:1/x"; throws on anything but an absolute http(s) URL. */
export function normalizeBaseUrl(input: string): string {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    throw new Error(`not a URL: ${JSON.stringify(input)} (expected e.g. http://127.0.0.1:8080)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`not an http(s) URL: ${input}`);
  if (u.search || u.hash) throw new Error(`the base URL must not carry a query or fragment: ${input}`);
  return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
}

export async function runConformance(opts: ConformanceOptions): Promise<ConformanceReport> {
  const started = Date.now();
  const baseUrl = normalizeBaseUrl(opts.baseUrl);
  const strict = opts.strict === true;
  let schemas: Schemas | undefined;
  let schemasError: string | undefined;
  try {
    schemas = loadSchemas();
  } catch (err) {
    schemasError = (err as Error).message;
  }
  const discovery: Discovery = {};
  const ctx: SuiteContext = {
    baseUrl,
    strict,
    http: new HostHttp({ timeoutMs: opts.requestTimeoutMs ?? 20_000, ...(opts.apiKey ? { apiKey: opts.apiKey } : {}) }),
    discovery,
    streamTimeoutMs: opts.streamTimeoutMs ?? 60_000,
    url: (path) => `${baseUrl}${path}`,
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    ...(opts.a2aVersion ? { a2aVersion: opts.a2aVersion } : {}),
    ...(schemas ? { schemas } : {}),
    ...(schemasError ? { schemasError } : {}),
  };

  const legs: LegResult[] = [];
  for (const [i, def] of LEGS.entries()) {
    legs.push(await runLeg(ctx, def, i + 1));
    if (def.id === 'discovery' && !discovery.block) {
      const failed = legs[0]?.checks.find((c) => !c.ok);
      discovery.error = `discovery failed${failed ? ` (${failed.name})` : ''}`;
    }
  }

  const summary = {
    total: legs.length,
    pass: legs.filter((l) => l.status === 'pass').length,
    fail: legs.filter((l) => l.status === 'fail').length,
    skip: legs.filter((l) => l.status === 'skip').length,
  };
  const ok = summary.fail === 0;
  return {
    tool: 'handoff conformance',
    suite: 'RFC 0100 durable A2A tasks',
    baseUrl,
    strict,
    apiKey: opts.apiKey !== undefined && opts.apiKey !== '',
    ...(discovery.dialect ? { a2aVersion: discovery.dialect.version } : {}),
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    summary,
    ok,
    exitCode: ok ? 0 : 1,
    legs,
  };
}

async function runLeg(ctx: SuiteContext, def: LegDef, number: number): Promise<LegResult> {
  const t0 = Date.now();
  const leg = new LegRun();
  const result = (status: LegResult['status'], extra: Partial<LegResult> = {}): LegResult => ({
    number,
    id: def.id,
    title: def.title,
    status,
    ...extra,
    checks: leg.checks,
    notes: leg.notes,
    durationMs: Date.now() - t0,
  });
  try {
    await def.run(ctx, leg);
    return result(leg.failed ? 'fail' : 'pass');
  } catch (err) {
    if (err instanceof LegSkip) {
      // A check that already failed outranks the skip.
      if (leg.failed) return result('fail', { reason: err.reason, skipKind: err.kind });
      return ctx.strict
        ? result('fail', { reason: `--strict: ${err.reason}`, skipKind: err.kind })
        : result('skip', { reason: err.reason, skipKind: err.kind });
    }
    if (err instanceof LegAbort) return result('fail');
    if (err instanceof RequestError) {
      leg.checks.push({
        name: 'the host answers',
        ok: false,
        evidence: { request: err.request, actual: 'no HTTP answer', note: describeError(err.cause) },
      });
      return result('fail');
    }
    leg.checks.push({
      name: 'the leg runs to its end',
      ok: false,
      evidence: { note: `unexpected error: ${(err as Error).stack ?? String(err)}` },
    });
    return result('fail');
  }
}
