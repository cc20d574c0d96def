// Fresh databases for tests that open, close and reopen the same one (migration tests): a new
// SQLite file or PostgreSQL schema per call, all removed when the test file ends; and the text of
// a statement with its parameters written in, for EXPLAIN.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { OpenStoreOptions } from '../../src/store/connect.js';
import { pgTestSchemas, pgTestUrl } from './pg.js';

export interface DatabasePlaces {
  /** HANDOFF_TEST_PG_URL, if set (PostgreSQL tests skip without it). */
  pgUrl: string | undefined;
  /** Where a new database lives: every store opened with the options opens the same one. */
  place(dialect: 'sqlite' | 'postgres'): Promise<OpenStoreOptions>;
}

/** Call at the top of a test file; `prefix` names its temp dirs and schemas. */
export function databasePlaces(prefix: string): DatabasePlaces {
  const pgUrl = pgTestUrl();
  const schemas = pgUrl ? pgTestSchemas(pgUrl, prefix) : undefined;
  const dirs: string[] = [];
  after(async () => {
    await schemas?.dropAll();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  return {
    pgUrl,
    async place(dialect) {
      if (dialect === 'postgres') return { databaseUrl: pgUrl, pgSchema: schemas?.fresh() };
      const dir = await mkdtemp(join(tmpdir(), `handoff-${prefix}-`));
      dirs.push(dir);
      return { sqliteFile: join(dir, 'handoff.db') };
    },
  };
}

/** A statement's text with its parameters written in as literals (EXPLAIN takes no parameters). */
export function inline(text: string, params: readonly unknown[]): string {
  let i = 0;
  return text.replace(/\?/g, () => {
    const p = params[i++];
    return typeof p === 'number' ? String(p) : `'${String(p).replace(/'/g, "''")}'`;
  });
}
