// `handoff serve`: run the host until SIGTERM/SIGINT, then drain gracefully.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Command } from 'commander';
import { type Config, ConfigError, loadConfig, type RawOptions } from '../config.js';
import type { Host } from '../host.js';

export function serveCommand(): Command {
  return new Command('serve')
    .description('run the Handoff host (SQLite under --data, or PostgreSQL with --database-url)')
    .option('--port <port>', 'TCP port (HANDOFF_PORT, default 8080)')
    .option('--host <host>', 'bind address (HANDOFF_HOST, default 127.0.0.1)')
    .option('--data <dir>', 'data directory for the SQLite file (HANDOFF_DATA, default ./.handoff)')
    .option('--database-url <url>', 'postgres://… to use PostgreSQL (HANDOFF_DATABASE_URL)')
    .option('--workflows <dir...>', 'extra workflow directories (HANDOFF_WORKFLOWS, colon-separated)')
    .option('--retention-days <days>', 'purge terminal runs after this many days (HANDOFF_RETENTION_DAYS, default 30)')
    .option('--public-url <url>', 'external base URL used in the agent card (HANDOFF_PUBLIC_URL)')
    .option(
      '--default-skill <id>',
      'workflow used when an A2A message names no skill (HANDOFF_DEFAULT_SKILL, default echo)',
    )
    .option('--log-level <level>', 'pino log level (HANDOFF_LOG_LEVEL, default info)')
    .option('--tls-cert <pem>', 'serve HTTPS with this PEM certificate (HANDOFF_TLS_CERT; needs --tls-key)')
    .option('--tls-key <pem>', 'the PEM private key of --tls-cert (HANDOFF_TLS_KEY)')
    .option(
      '--pid-file <file>',
      "write this process's id to <file> once listening, removed after a drain (HANDOFF_PID_FILE): `kill $(cat <file>)`",
    )
    .option(
      '--strict-workflows',
      'refuse to start when a workflow file does not load (HANDOFF_STRICT_WORKFLOWS=1); default: start without it, listed',
    )
    .action(async ({ pidFile: pidFlag, ...opts }: RawOptions & { pidFile?: string }) => {
      const pidFile = pidFlag ?? process.env.HANDOFF_PID_FILE;
      let config: Config;
      try {
        config = loadConfig(opts);
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`handoff: ${err.message}\n`);
          process.exit(2);
        }
        throw err;
      }
      // Loaded here so client subcommands start without the server's dependencies.
      const { createHost } = await import('../host.js');
      let host: Host | undefined;
      let address: string;
      try {
        host = await createHost(config);
        address = await host.listen();
      } catch (err) {
        // A start-up failure (unusable data dir, database unreachable, invalid workflow) is one
        // clear line and exit 1, not a stack trace.
        process.stderr.write(`handoff: cannot start: ${(err as Error).message}\n`);
        await host?.close().catch(() => {});
        process.exit(1);
      }
      const started = host;
      if (pidFile) writePidFile(pidFile);
      started.logger.info(
        { address, console: `${address}/console`, database: started.store.dialect, workflows: started.workflows.ids() },
        'handoff listening',
      );
      let closing = false;
      const shutdown = async (signal: string) => {
        if (closing) return;
        closing = true;
        // Drain (docs/operations.md): no new requests or claims, open streams closed (clients
        // resume by event id on another instance), the step in flight commits, leases handed back.
        started.logger.info({ signal }, 'draining');
        try {
          await started.close();
        } catch (err) {
          // Whatever was not handed back is retaken by other instances when its lease expires
          // (HANDOFF_LEASE_MS, HANDOFF_PUSH_LEASE_MS).
          started.logger.error({ err }, 'drain failed');
          process.exit(1);
        }
        started.logger.info('drained');
        if (pidFile) rmSync(pidFile, { force: true });
        process.exit(0);
      };
      process.on('SIGTERM', () => void shutdown('SIGTERM'));
      process.on('SIGINT', () => void shutdown('SIGINT'));
    });
}

/**
 * The server's own process id, for a shell that started it through `npm start` (whose `$!` is
 * npm's, and killing npm leaves the server holding the database). Written once listening, so the
 * file's presence also says the host is up; replaced atomically, so a reader never sees half of
 * it. A crash leaves it behind; the next start overwrites it.
 */
function writePidFile(file: string): void {
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${process.pid}\n`);
  renameSync(`${path}.tmp`, path);
}
