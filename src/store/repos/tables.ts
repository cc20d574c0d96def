// The repositories of the tables every transaction may touch, built on one Kysely handle (the
// pool, for the Store; one transaction, for a StoreTx). Runs and their events are not here: their
// writes are the StoreTx's own (insertRun, commitRun) and their reads outside one are the Store's.
//
// Each is built on first use: a transaction touches a few of them (an A2A reply: the task
// records, the interrupts, the push configs, which StoreTx builds as its own), and building the
// others for every transaction was a measurable share of a request's CPU.
import type { Kysely } from 'kysely';
import type { Database } from '../db.js';
import { Idempotency } from './idempotency.js';
import { Interrupts } from './interrupts.js';
import { PeerWaits } from './peer-waits.js';
import { PushConfigs } from './push-configs.js';
import { PushOutbox } from './push-outbox.js';
import type { Dialect } from './repo.js';
import type { SqliteDirect } from '../statements.js';
import { Secrets } from './secrets.js';
import { TaskRecords } from './task-records.js';

type RepoArgs = [db: Kysely<Database>, dialect: Dialect, now: () => Date, direct?: SqliteDirect];

export class Tables {
  // Getters on the prototype (below); a subclass may set its own (StoreTx does).
  declare readonly interrupts: Interrupts;
  declare readonly idempotency: Idempotency;
  declare readonly tasks: TaskRecords;
  declare readonly pushConfigs: PushConfigs;
  declare readonly outbox: PushOutbox;
  declare readonly secrets: Secrets;
  declare readonly peerWaits: PeerWaits;
  /** What each repository is built with. */
  protected readonly repoArgs: RepoArgs;

  /** `direct`: SQLite's connection for fixed statements, bound like `db` (statements.ts). */
  constructor(db: Kysely<Database>, dialect: Dialect, now: () => Date, direct?: SqliteDirect) {
    this.repoArgs = [db, dialect, now, direct];
  }
}

/** `Tables#name`: built with the instance's arguments on first read, then kept as its own property. */
function lazy<K extends keyof Tables>(name: K, make: (...args: RepoArgs) => Tables[K]): void {
  Object.defineProperty(Tables.prototype, name, {
    configurable: true,
    get(this: Tables) {
      const repo = make(...this.repoArgs);
      Object.defineProperty(this, name, { value: repo, enumerable: true });
      return repo;
    },
  });
}

lazy('interrupts', (...a) => new Interrupts(...a));
lazy('idempotency', (...a) => new Idempotency(...a));
lazy('tasks', (...a) => new TaskRecords(...a));
lazy('pushConfigs', (...a) => new PushConfigs(...a));
lazy('outbox', (...a) => new PushOutbox(...a));
lazy('secrets', (...a) => new Secrets(...a));
lazy('peerWaits', (...a) => new PeerWaits(...a));
