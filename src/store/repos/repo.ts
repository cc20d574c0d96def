// What every repository is built on: a Kysely handle (the store's pool, or one transaction) and
// the dialect and clock of its store. A repository built on a transaction writes inside it.
import type { Kysely } from 'kysely';
import type { Database } from '../db.js';

export type Dialect = 'sqlite' | 'postgres';

export abstract class Repo {
  constructor(
    protected readonly db: Kysely<Database>,
    protected readonly dialect: Dialect,
    protected readonly now: () => Date,
  ) {}
}
