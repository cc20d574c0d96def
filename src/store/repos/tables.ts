// The repositories of the tables every transaction may touch, built on one Kysely handle (the
// pool, for the Store; one transaction, for a StoreTx). Runs and their events are not here: their
// writes are the StoreTx's own (insertRun, commitRun) and their reads outside one are the Store's.
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

export class Tables {
  readonly interrupts: Interrupts;
  readonly idempotency: Idempotency;
  readonly tasks: TaskRecords;
  readonly pushConfigs: PushConfigs;
  readonly outbox: PushOutbox;
  readonly secrets: Secrets;
  readonly peerWaits: PeerWaits;

  /** `direct`: SQLite's connection for fixed statements, bound like `db` (statements.ts). */
  constructor(db: Kysely<Database>, dialect: Dialect, now: () => Date, direct?: SqliteDirect) {
    this.interrupts = new Interrupts(db, dialect, now, direct);
    this.idempotency = new Idempotency(db, dialect, now, direct);
    this.tasks = new TaskRecords(db, dialect, now, direct);
    this.pushConfigs = new PushConfigs(db, dialect, now, direct);
    this.outbox = new PushOutbox(db, dialect, now, direct);
    this.secrets = new Secrets(db, dialect, now, direct);
    this.peerWaits = new PeerWaits(db, dialect, now, direct);
  }
}
