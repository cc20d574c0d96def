// Scenarios that need Handoff's own surface (the run API, the `steps` workflow, the push worker):
// they run on the Handoff targets only (`handoff`, `handoff-full`) and list the others as not
// applicable in their sections.
import type { CellResult, ScenarioContext, ScenarioResult } from './registry.js';

const MARK = 'handoff-only';

/** The target's origin if it is Handoff (JSON-RPC at /v1/a2a); otherwise the run fails as not applicable. */
export function handoffOrigin(ctx: ScenarioContext, needs: string): string {
  const url = new URL(ctx.running.url);
  if (url.pathname !== '/v1/a2a') {
    throw new Error(`${MARK} scenario (needs ${needs}); ${ctx.target.name} is not measured`);
  }
  return url.origin;
}

/** The cells to show (every target it applied to), and the targets it did not apply to as `name`. */
export function handoffCells(result: ScenarioResult): { cells: CellResult[]; skipped: string[] } {
  const notApplicable = (c: CellResult): boolean => c.runs.length === 0 && (c.reason ?? '').includes(MARK);
  return {
    cells: result.cells.filter((c) => !notApplicable(c)),
    skipped: result.cells.filter(notApplicable).map((c) => `\`${c.target}\``),
  };
}
