// `handoff audit verify [--data DIR | --database-url URL]`: check the audit log's hash chains
// (docs/operations.md#audit-log). Exit 0 printing how many entries hold; exit 1 naming the first
// entry whose hash or link fails (an entry edited or deleted), or when the database cannot be read.
import { existsSync } from 'node:fs';
import { Command, Option } from 'commander';
import { sqliteFile } from '../config.js';

interface VerifyOptions {
  data?: string;
  databaseUrl?: string;
  pgSchema?: string;
}

export function auditCommand(): Command {
  const verify = new Command('verify')
    .description('check every tenant’s audit chain: exit 0 with the entry count, 1 naming the first broken entry')
    .addOption(
      new Option('--data <dir>', 'the SQLite data directory (HANDOFF_DATA, default ./.handoff)').env('HANDOFF_DATA'),
    )
    .addOption(
      new Option('--database-url <url>', 'postgres://… (HANDOFF_DATABASE_URL)')
        .env('HANDOFF_DATABASE_URL')
        .conflicts('data'),
    )
    .addOption(new Option('--pg-schema <name>', 'PostgreSQL schema (HANDOFF_PG_SCHEMA)').env('HANDOFF_PG_SCHEMA'))
    .action(async (opts: VerifyOptions) => {
      process.exitCode = await verifyAudit(opts);
    });
  return new Command('audit').description('the tamper-evident audit log').addCommand(verify);
}

async function verifyAudit(opts: VerifyOptions): Promise<number> {
  const file = sqliteFile({ dataDir: opts.data ?? '.handoff' });
  if (opts.databaseUrl === undefined && !existsSync(file)) {
    process.stderr.write(`handoff: no database at ${file} (--data DIR, or --database-url URL)\n`);
    return 1;
  }
  // Loaded here so the client subcommands start without the store's dependencies.
  const { openStore } = await import('../store/connect.js');
  let store: Awaited<ReturnType<typeof openStore>> | undefined;
  try {
    store = await openStore(
      opts.databaseUrl !== undefined
        ? { databaseUrl: opts.databaseUrl, ...(opts.pgSchema ? { pgSchema: opts.pgSchema } : {}), pgPoolSize: 1 }
        : { sqliteFile: file },
    );
    const verdict = await store.audit.verify();
    if (verdict.ok) {
      process.stdout.write(
        `audit log verified: ${verdict.entries} entries in ${verdict.tenants} tenant chain${verdict.tenants === 1 ? '' : 's'}\n`,
      );
      return 0;
    }
    process.stdout.write(
      `audit log BROKEN at tenant ${JSON.stringify(verdict.tenantId)} entry ${verdict.seq}: ${verdict.reason} ` +
        `(${verdict.entries} entries verified before it)\n`,
    );
    return 1;
  } catch (err) {
    process.stderr.write(`handoff: cannot read the audit log: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await store?.close().catch(() => {});
  }
}
