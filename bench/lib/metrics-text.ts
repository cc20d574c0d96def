// Handoff's /metrics as the scenarios read it. Every sample carries instance="<id>" (see
// docs/operations.md), which the scenarios' patterns (written per metric and label) leave out:
//
//   const metrics = await scrapeMetrics(base);
//   metrics.value(/^handoff_push_attempts_total\{outcome="delivered"\} (\S+)$/m)   // NaN if absent
import { http } from './http.js';

/** The same exposition text with the `instance` label removed from every sample. */
function withoutInstanceLabel(text: string): string {
  return text.replace(/\{([^}]*)\}/g, (_all, labels: string) => {
    const kept = labels.split(/,(?=[a-zA-Z_][a-zA-Z0-9_]*=")/).filter((l) => l !== '' && !l.startsWith('instance='));
    return kept.length === 0 ? '' : `{${kept.join(',')}}`;
  });
}

export interface Metrics {
  /** The number captured by the pattern's first group, NaN if no sample matches. */
  value(pattern: RegExp): number;
  /** The sum of the values of every sample line the pattern matches (0 if none). */
  sum(pattern: RegExp): number;
}

/** One scrape of `${base}/metrics` (its own connection, so it adds no pooled socket). */
export async function scrapeMetrics(base: string): Promise<Metrics> {
  const text = withoutInstanceLabel((await http('GET', `${base}/metrics`)).text);
  return {
    value: (pattern) => {
      const m = text.match(pattern);
      return m ? Number(m[1]) : NaN;
    },
    sum: (pattern) =>
      text
        .split('\n')
        .filter((l) => pattern.test(l))
        .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0),
  };
}
