// Throw-away PostgreSQL schemas for tests that share one server.
//
//   const url = pgTestUrl();                  // HANDOFF_TEST_PG_URL, or undefined → skip PG tests
//   const schemas = pgTestSchemas(url);
//   const store = await openStore({ databaseUrl: url, pgSchema: schemas.fresh() });
//   ... after(): close every store first, then
//   await schemas.dropAll();                  // DROP SCHEMA … CASCADE for each name handed out
//
// `fresh()` only makes a unique name (`t_<random>`); `openStore` creates the schema itself.
// `pgTestDatabases(url)` does the same with whole databases (see its comment for why).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { until } from './until.js';

/** The PostgreSQL server tests may use, or undefined when PG tests are to be skipped. */
export function pgTestUrl(): string | undefined {
  const url = process.env.HANDOFF_TEST_PG_URL;
  return url && url.trim() !== '' ? url.trim() : undefined;
}

/** Run `fn` with a short-lived client of the server at `url`. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A schema name unique to this call: lower-case, `[a-z_][a-z0-9_]*`, e.g. `t_3f9c0a1b2d4e`. */
export function uniqueSchemaName(prefix = 't'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

export interface PgTestSchemas {
  readonly url: string;
  /** A new unique schema name, remembered for `dropAll`. */
  fresh(): string;
  /** Drop every schema handed out by `fresh` (CASCADE). Close the stores using them first. */
  dropAll(): Promise<void>;
}

export function pgTestSchemas(url: string, prefix = 't'): PgTestSchemas {
  const names: string[] = [];
  return {
    url,
    fresh() {
      const name = uniqueSchemaName(prefix);
      names.push(name);
      return name;
    },
    async dropAll() {
      for (const name of names.splice(0)) await dropSchema(url, name);
    },
  };
}

export interface PgTestDatabases {
  /** Create a new empty database `t_<random>` on the server and return its URL. */
  fresh(): Promise<string>;
  /** Drop every database made by `fresh` (`WITH (FORCE)`). Close the stores using them first. */
  dropAll(): Promise<void>;
}

/**
 * Whole throw-away databases, for tests that must not share a database with anyone: while
 * Kysely's Migrator looks for its own tables in every schema of a database (see the store
 * contract test), two Handoff schemas in one database disturb each other's migrations.
 */
export function pgTestDatabases(url: string, prefix = 't'): PgTestDatabases {
  const names: string[] = [];
  return {
    async fresh() {
      const name = uniqueSchemaName(prefix);
      await withClient(url, (c) => c.query(`create database ${name}`));
      names.push(name);
      const u = new URL(url);
      u.pathname = `/${name}`;
      return u.toString();
    },
    async dropAll() {
      const drops = names.splice(0).map(async (name) => {
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`refusing to drop database ${name}`);
        await withClient(url, async (c) => {
          await untilDisconnected(c, name);
          await c.query(`drop database if exists ${name} with (force)`);
        });
      });
      await Promise.all(drops);
    },
  };
}

/**
 * Wait (a few seconds at most) until nobody is connected to database `name`. A closed store's
 * pool may still be ending its connections (pg's `pool.end()` resolves before its sockets close),
 * and a forced drop that ends one of them makes pg raise an error nobody listens to: an uncaught
 * exception in the test process. What is still connected after the wait is a leak: FORCE ends it.
 */
async function untilDisconnected(client: pg.Client, name: string): Promise<void> {
  const connected = async () =>
    (await client.query('select count(*)::int as n from pg_stat_activity where datname = $1', [name])).rows[0].n;
  await until(`every connection to ${name} to close`, async () => (await connected()) === 0, {
    deadlineMs: 5_000,
  }).catch(() => undefined);
}

/** Drop one schema (CASCADE) of the database at `url`. */
export async function dropSchema(url: string, name: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`refusing to drop schema ${name}`);
  await withClient(url, (client) => client.query(`drop schema if exists ${name} cascade`));
}
