// Handoff's /metrics text as the scenarios read it: every sample carries instance="<id>" (see
// docs/operations.md), which the scenarios' patterns (written per metric and label) leave out.
//
//   const text = withoutInstanceLabel(await (await fetch(`${base}/metrics`)).text());
//   text.match(/^handoff_push_attempts_total\{outcome="delivered"\} (\S+)$/m)

/** The same exposition text with the `instance` label removed from every sample. */
export function withoutInstanceLabel(text: string): string {
  return text.replace(/\{([^}]*)\}/g, (_all, labels: string) => {
    const kept = labels.split(/,(?=[a-zA-Z_][a-zA-Z0-9_]*=")/).filter((l) => l !== '' && !l.startsWith('instance='));
    return kept.length === 0 ? '' : `{${kept.join(',')}}`;
  });
}
