// `handoff conformance <baseUrl>`: run the RFC 0100 durable-A2A legs against any host and print
// a report (PASS / FAIL with evidence / SKIP with the reason), or the JSON report with --json.
// Exit 0 when no leg failed, 1 otherwise (also for an unusable base URL).
import { Command } from 'commander';
import { A2A_VERSIONS, type A2AVersion, formatReport, normalizeBaseUrl, runConformance } from '../conformance/index.js';

interface ConformanceCliOptions {
  apiKey?: string;
  strict?: boolean;
  json?: boolean;
  a2aVersion?: string;
}

export function conformanceCommand(): Command {
  return new Command('conformance')
    .description(
      'run the RFC 0100 durable-A2A conformance legs against a host (discovery, A2ATaskState shape, durable tasks/get, push SSRF, resubscribe)',
    )
    .argument('<baseUrl>', 'the host to test, e.g. http://127.0.0.1:8080')
    .option('--api-key <key>', 'sent as Authorization: Bearer on the seams, JSON-RPC and the event log')
    .option('--strict', 'a leg whose capability flag or seam is missing FAILS instead of skipping')
    .option('--json', 'print the report as JSON')
    .option(
      '--a2a-version <version>',
      `A2A version of the JSON-RPC legs (${A2A_VERSIONS.join(' or ')}; default: 1.0 when the card offers it, else 0.3)`,
    )
    .action(async (baseUrl: string, opts: ConformanceCliOptions, cmd: Command) => {
      try {
        normalizeBaseUrl(baseUrl);
      } catch (err) {
        cmd.error(`handoff conformance: ${(err as Error).message}`, { exitCode: 1 });
      }
      const version = opts.a2aVersion;
      if (version !== undefined && !(A2A_VERSIONS as readonly string[]).includes(version)) {
        cmd.error(`handoff conformance: --a2a-version must be one of ${A2A_VERSIONS.join(', ')}, got '${version}'`, {
          exitCode: 1,
        });
      }
      const report = await runConformance({
        baseUrl,
        strict: opts.strict === true,
        ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
        ...(version ? { a2aVersion: version as A2AVersion } : {}),
      });
      const text = opts.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report);
      await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
      process.exitCode = report.exitCode;
      // Every connection is closed by now; should anything still hold the loop, do not hang.
      setTimeout(() => process.exit(report.exitCode), 2_000).unref();
    });
}
