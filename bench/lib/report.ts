// RESULTS.md writer. The document is: header, then sections (each a titled markdown table), then
// the hand-written notes block, which is carried over verbatim from the previous RESULTS.md so
// that commentary written by people survives every re-run.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Figures } from './registry.js';
import { spread } from './stats.js';

export interface Section {
  title: string;
  /** Paragraph under the title (what the scenario does). */
  intro?: string;
  /** No columns = a text-only section. */
  columns: string[];
  rows: string[][];
  /** Paragraph under the table (legend, caveats). */
  after?: string;
}

const NOTES_BEGIN = '<!-- notes:begin -->';
const NOTES_END = '<!-- notes:end -->';

const DEFAULT_NOTES = `${NOTES_BEGIN}
## Notes

_Hand-written; \`bench/run.ts\` keeps everything between the notes markers when it rewrites this file._
${NOTES_END}`;

const NA = '–';
const finite = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n);

export const fmtInt = (n: number | undefined): string => (finite(n) ? Math.round(n).toLocaleString('en-US') : NA);
export const fmtFixed = (n: number | undefined, digits: number): string =>
  finite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : NA;
export const fmtMs = (n: number | undefined): string => fmtFixed(n, 2);
export const fmtRatio = (n: number | undefined): string => fmtFixed(n, 3);
export const fmtTimes = (n: number | undefined): string => (finite(n) ? `${fmtFixed(n, 2)}×` : NA);

/** "**median** (min–max)" of a rate over runs, or – if no run has it. */
export function rateCell(runs: readonly Figures[], key: string): string {
  const s = spread(runs, key);
  return Number.isFinite(s.median) ? `**${fmtInt(s.median)}** (${fmtInt(s.min)}–${fmtInt(s.max)})` : NA;
}

/** One figure of every run, in run order: "12, 15, 11". */
export const perRun = (
  runs: readonly Figures[],
  key: string,
  fmt: (n: number | undefined) => string = fmtInt,
): string => runs.map((r) => fmt(r[key])).join(', ');

/** The first line of an error's message, cut to `max` characters (for logs and table cells). */
export const shortError = (err: unknown, max = 160): string =>
  (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, max);

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A markdown table; also for tables inside a section's text. */
export function mdTable(columns: string[], rows: string[][]): string {
  return [
    `| ${columns.map(cell).join(' | ')} |`,
    `|${columns.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** One section: `## title`, optional intro, the table, optional text after. */
function renderSection(section: Section): string {
  const out = [`## ${section.title}`, ''];
  if (section.intro) out.push(section.intro, '');
  if (section.columns.length > 0) out.push(mdTable(section.columns, section.rows), '');
  if (section.after) out.push(section.after);
  return out.join('\n').trimEnd();
}

/** The notes block of an existing RESULTS.md (markers included), or a fresh empty one. */
function previousNotes(path: string): string {
  if (!existsSync(path)) return DEFAULT_NOTES;
  const text = readFileSync(path, 'utf8');
  const begin = text.indexOf(NOTES_BEGIN);
  const end = text.indexOf(NOTES_END, begin);
  return begin >= 0 && end > begin ? text.slice(begin, end + NOTES_END.length) : DEFAULT_NOTES;
}

/** Run-level sections every run writes anew; never carried over from an earlier file. */
const RUN_LEVEL = new Set(['Per-run figures (req/s, in run order)', 'How these figures are measured', 'Notes']);

/**
 * Sections of the previous RESULTS.md that this run did not write, so a run of some scenarios
 * (`--scenarios push`) updates those and keeps the others' figures (each carries its own date).
 */
function previousSections(path: string, written: Set<string>): string[] {
  if (!existsSync(path)) return [];
  let text = readFileSync(path, 'utf8');
  const begin = text.indexOf(NOTES_BEGIN);
  if (begin >= 0) text = text.slice(0, begin);
  const parts = text.split(/^(?=## )/m).slice(1);
  return parts
    .map((part) => ({ title: (part.split('\n')[0] ?? '').replace(/^## /, '').trim(), text: part.trimEnd() }))
    .filter((p) => !written.has(p.title) && !RUN_LEVEL.has(p.title))
    .map((p) => p.text);
}

export function writeReport(path: string, header: string, sections: Section[]): void {
  const notes = previousNotes(path); // read before overwriting
  const kept = previousSections(path, new Set(sections.map((x) => x.title)));
  const body = [header, ...sections.map(renderSection), ...kept, notes].join('\n\n');
  writeFileSync(path, body + '\n');
}
