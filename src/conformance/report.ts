// The human-readable report: one block per leg — PASS / FAIL / SKIP, every check with ✓ or ✗,
// and under a failed check its evidence (request, status, field, expected, actual, note,
// response excerpt). The JSON report is the ConformanceReport object itself.
import type { Check, ConformanceReport, Evidence, LegResult } from './types.js';

const LABEL: Record<LegResult['status'], string> = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP' };
const EVIDENCE_KEYS: (keyof Evidence)[] = ['request', 'status', 'field', 'expected', 'actual', 'note', 'response'];

export function formatReport(r: ConformanceReport): string {
  const out: string[] = [];
  out.push(`handoff conformance — ${r.suite}`);
  const version = r.a2aVersion ? `  A2A ${r.a2aVersion}` : '';
  out.push(`host ${r.baseUrl}${version}${r.strict ? '  (--strict)' : ''}${r.apiKey ? '  (API key sent)' : ''}`);
  out.push('');
  for (const leg of r.legs) out.push(...formatLeg(leg), '');
  const { pass, fail, skip, total } = r.summary;
  out.push(
    `${pass} passed, ${fail} failed, ${skip} skipped of ${total} legs in ${(r.durationMs / 1000).toFixed(1)} s → ${r.ok ? 'OK' : 'NOT CONFORMANT'} (exit ${r.exitCode})`,
  );
  return `${out.join('\n')}\n`;
}

function formatLeg(leg: LegResult): string[] {
  const lines: string[] = [];
  const head = `${LABEL[leg.status]}  ${leg.number}. ${leg.title}`;
  lines.push(leg.reason ? `${head} — ${leg.reason}` : head);
  for (const c of leg.checks) lines.push(...formatCheck(c));
  for (const n of leg.notes) lines.push(`      · ${n}`);
  return lines;
}

function formatCheck(c: Check): string[] {
  const lines = [`      ${c.ok ? '✓' : '✗'} ${c.name}`];
  if (c.ok || !c.evidence) return lines;
  for (const key of EVIDENCE_KEYS) {
    if (!(key in c.evidence)) continue;
    const v = c.evidence[key];
    const text = key === 'expected' || key === 'actual' ? show(v) : String(v);
    lines.push(`          ${`${key}:`.padEnd(10)}${text}`);
  }
  return lines;
}

/** Strings quoted, the rest as JSON, long values cut. */
function show(v: unknown): string {
  if (v === '(absent)') return '(absent)';
  const s = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return s.length > 300 ? `${s.slice(0, 300)}…` : s;
}
