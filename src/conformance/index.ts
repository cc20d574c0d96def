// The RFC 0100 durable-A2A conformance suite, runnable against any host over HTTP. It imports no
// Handoff internals: only the published schemas under the package's schemas/ directory.
//
//   import { runConformance, formatReport } from '../conformance/index.js';
//   const report = await runConformance({ baseUrl, apiKey, strict: true });
//   process.stdout.write(formatReport(report));   // or JSON.stringify(report)
export { formatReport } from './report.js';
export { LEGS, normalizeBaseUrl, runConformance } from './runner.js';
export { A2A_VERSIONS, type A2AVersion } from './dialect.js';
export { SseParser, type SseFrame } from './sse.js';
export type {
  Check,
  ConformanceOptions,
  ConformanceReport,
  Evidence,
  LegId,
  LegResult,
  LegStatus,
  SkipKind,
} from './types.js';
