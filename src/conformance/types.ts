// The shapes of a conformance run: what each leg reports and what the whole report holds.
// Shared by the legs, the runner and the report printer; no Handoff internals.

import type { A2AVersion } from './dialect.js';

export type LegStatus = 'pass' | 'fail' | 'skip';

/** Why a leg did not run to a verdict. Under --strict every kind becomes a FAIL (§6.2). */
export type SkipKind =
  /** The capability flag that gates the leg is not advertised in the root `a2a` block. */
  | 'not-advertised'
  /** The host-sample seam answered 404 or 403: not mounted. */
  | 'seam-absent'
  /** The host answered, but the run could not witness what the leg is about (e.g. no long task). */
  | 'inconclusive';

/** What a failed check saw: enough to reproduce it without re-running the suite. */
export interface Evidence {
  /** "POST http://127.0.0.1:8080/v1/… {body}" (the API key is never printed). */
  request?: string;
  /** The HTTP status the host answered. */
  status?: number;
  /** The offending field, as a dotted path ("a2a.agentCardUrl", "result.status.state"). */
  field?: string;
  expected?: unknown;
  actual?: unknown;
  /** An excerpt of the response body. */
  response?: string;
  note?: string;
}

export interface Check {
  name: string;
  ok: boolean;
  evidence?: Evidence;
}

export interface LegResult {
  /** 1-based position in the suite. */
  number: number;
  id: LegId;
  title: string;
  status: LegStatus;
  /** Why the leg skipped (or, under --strict, why a would-be skip failed). */
  reason?: string;
  skipKind?: SkipKind;
  checks: Check[];
  /** Informational lines (cleanup, sub-checks that did not apply). */
  notes: string[];
  durationMs: number;
}

export type LegId = 'discovery' | 'task-state-shape' | 'durable-tasks-get' | 'push-ssrf' | 'resubscribe';

export interface ConformanceReport {
  tool: 'handoff conformance';
  suite: 'RFC 0100 durable A2A tasks';
  baseUrl: string;
  strict: boolean;
  /** Whether an API key was sent (never the key). */
  apiKey: boolean;
  /** The A2A version spoken at the JSON-RPC endpoint (absent when discovery found none). */
  a2aVersion?: A2AVersion;
  startedAt: string;
  durationMs: number;
  summary: { total: number; pass: number; fail: number; skip: number };
  /** No leg failed. */
  ok: boolean;
  /** What the command exits with: 0 when ok, 1 otherwise. */
  exitCode: 0 | 1;
  legs: LegResult[];
}

export interface ConformanceOptions {
  /** The host's base URL (origin plus any path prefix); trailing slashes are ignored. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer` on the seams, JSON-RPC and the event log (not on discovery or the card). */
  apiKey?: string;
  /** Gated legs FAIL instead of skipping when their flag or seam is missing. */
  strict?: boolean;
  /** Bound of one HTTP request (default 20 s, as the OpenWOP driver). */
  requestTimeoutMs?: number;
  /** Bound of the whole resubscribe leg (default 60 s). */
  streamTimeoutMs?: number;
  /** The A2A version to speak at the JSON-RPC endpoint; default: 1.0 when the card offers it, else 0.3. */
  a2aVersion?: A2AVersion;
}
