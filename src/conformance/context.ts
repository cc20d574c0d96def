// What a leg works with: the run's shared context (options, HTTP client, schemas, what discovery
// found) and a LegRun that records checks. `expect` records and carries on; `require` records and
// ends the leg when it fails; `skip` ends the leg as a SKIP (a FAIL under --strict, decided by the
// runner).
//
//   leg.expect(rec.state === 'input-required', "state is 'input-required'", { request, status, field: 'state', expected: 'input-required', actual: rec.state });
//   leg.require(res.status === 200, 'the card answers 200', ev(res, { expected: 200, actual: res.status }));
//   leg.skip('seam-absent', 'POST …/tasks/start answered 404');
import type { HostHttp, HttpAnswer } from './http.js';
import type { Schemas } from './schemas.js';
import type { A2AVersion, Dialect } from './dialect.js';
import type { Check, Evidence, SkipKind } from './types.js';

/** What the discovery leg learned; the gated legs read their flags and the RPC URL from here. */
export interface Discovery {
  /** Why the discovery document could not be read, if it could not. */
  error?: string;
  doc?: Record<string, unknown>;
  /** The root `a2a` block (RFC 0073: the root only, never `capabilities.a2a`). */
  block?: Record<string, unknown>;
  card?: Record<string, unknown>;
  /** Where JSON-RPC is served, from the card. */
  rpcUrl?: string;
  /** The A2A version spoken there: the one asked for, else 1.0 when the card offers it, else 0.3. */
  dialect?: Dialect;
  /** Why there is no rpcUrl, if there is none. */
  rpcUrlError?: string;
}

export interface SuiteContext {
  baseUrl: string;
  apiKey?: string;
  strict: boolean;
  http: HostHttp;
  schemas?: Schemas;
  schemasError?: string;
  discovery: Discovery;
  streamTimeoutMs: number;
  /** `--a2a-version`: absent means what the card offers, 1.0 first. */
  a2aVersion?: A2AVersion;
  /** `${baseUrl}${path}` */
  url(path: string): string;
}

/** Thrown to end a leg early: the failing check is already recorded. */
export class LegAbort extends Error {}

/** Thrown to end a leg as skipped. */
export class LegSkip extends Error {
  constructor(
    readonly kind: SkipKind,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export class LegRun {
  readonly checks: Check[] = [];
  readonly notes: string[] = [];

  pass(name: string): void {
    this.checks.push({ name, ok: true });
  }

  /** Record a check; true when it held. */
  expect(ok: boolean, name: string, evidence: Evidence | (() => Evidence)): boolean {
    if (ok) this.checks.push({ name, ok: true });
    else this.checks.push({ name, ok: false, evidence: clean(typeof evidence === 'function' ? evidence() : evidence) });
    return ok;
  }

  /** Record a check; a failure ends the leg. */
  require(ok: boolean, name: string, evidence: Evidence | (() => Evidence)): asserts ok {
    if (!this.expect(ok, name, evidence)) throw new LegAbort(name);
  }

  /** A failure with no condition to test (an impossible-to-continue state). */
  fail(name: string, evidence: Evidence): never {
    this.checks.push({ name, ok: false, evidence: clean(evidence) });
    throw new LegAbort(name);
  }

  skip(kind: SkipKind, reason: string): never {
    throw new LegSkip(kind, reason);
  }

  note(line: string): void {
    this.notes.push(line);
  }

  get failed(): boolean {
    return this.checks.some((c) => !c.ok);
  }
}

/** Drop unset keys; an `actual` that was given but is undefined is shown as "(absent)". */
function clean(e: Evidence): Evidence {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (v !== undefined) out[k] = v;
    else if (k === 'actual') out[k] = ABSENT;
  }
  return out as Evidence;
}

export const ABSENT = '(absent)';

/** Require that `res` answered 200 (check `answered`) with a JSON object (check `isJson`); return it. */
export function requireJsonObject(
  leg: LegRun,
  res: HttpAnswer,
  checks: { answered: string; isJson: string },
  expected = 'a JSON object',
): Record<string, unknown> {
  leg.require(res.status === 200, checks.answered, ev(res, { expected: 200, actual: res.status }));
  const json = res.json;
  leg.require(isObject(json), checks.isJson, ev(res, { expected, actual: json ?? excerpt(res.text) }));
  return json;
}

// ---------------------------------------------------------------- helpers for the legs

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The value at a dotted path ("result.status.state"), or undefined. */
export function pick(v: unknown, path: string): unknown {
  let cur = v;
  for (const key of path.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

const EXCERPT = 300;

/** A body excerpt for evidence. */
export function excerpt(text: string): string | undefined {
  if (text === '') return undefined;
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > EXCERPT ? `${flat.slice(0, EXCERPT)}…` : flat;
}

/** Evidence from an HTTP answer plus whatever the check adds. */
export function ev(res: HttpAnswer, extra: Evidence = {}): Evidence {
  const out: Evidence = { request: res.request, status: res.status, response: excerpt(res.text), ...extra };
  if (res.status === 401 && out.note === undefined) out.note = 'not authenticated: pass --api-key';
  return out;
}

/** True for an absolute http(s) URL. */
export function isAbsoluteHttpUrl(v: unknown): v is string {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host !== '';
  } catch {
    return false;
  }
}

/** A2A terminal task states (0.3 lowercase). */
export const TERMINAL_STATES: ReadonlySet<string> = new Set(['completed', 'failed', 'canceled', 'rejected']);
