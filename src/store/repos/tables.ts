// The repositories of the tables every transaction may touch, built on one Kysely handle (the
// pool, for the Store; one transaction, for a StoreTx). Runs and their events are not here: their
// writes are the StoreTx's own (insertRun, commitRun) and their reads outside one are the Store's.
// Each is made on first use: a transaction touches a few of them, and one is made per transaction.
import type { Kysely } from 'kysely';
import type { Database } from '../db.js';
import { AuditLog } from './audit.js';
import { DecisionLinks } from './decision-links.js';
import { Idempotency } from './idempotency.js';
import { Interrupts } from './interrupts.js';
import { Notifications } from './notifications.js';
import { PeerWaits } from './peer-waits.js';
import { PushConfigs } from './push-configs.js';
import { PushOutbox } from './push-outbox.js';
import type { Dialect } from './repo.js';
import type { SqliteDirect } from '../statements.js';
import { Secrets } from './secrets.js';
import { WebhookDeliveries } from './webhook-deliveries.js';
import { Webhooks } from './webhooks.js';
import { TaskRecords } from './task-records.js';

/** What every repository is built on (Repo's constructor arguments). */
type RepoArgs = [db: Kysely<Database>, dialect: Dialect, now: () => Date, direct?: SqliteDirect];

export class Tables {
  /** The arguments every repository of this handle is built with. */
  protected readonly repoArgs: RepoArgs;
  #interrupts?: Interrupts;
  #idempotency?: Idempotency;
  #tasks?: TaskRecords;
  #pushConfigs?: PushConfigs;
  #outbox?: PushOutbox;
  #secrets?: Secrets;
  #peerWaits?: PeerWaits;
  #audit?: AuditLog;
  #notifications?: Notifications;
  #decisionLinks?: DecisionLinks;
  #webhooks?: Webhooks;
  #webhookDeliveries?: WebhookDeliveries;

  /** `direct`: SQLite's connection for fixed statements, bound like `db` (statements.ts). */
  constructor(db: Kysely<Database>, dialect: Dialect, now: () => Date, direct?: SqliteDirect) {
    this.repoArgs = [db, dialect, now, direct];
  }

  get interrupts(): Interrupts {
    this.#interrupts ??= new Interrupts(...this.repoArgs);
    return this.#interrupts;
  }

  get idempotency(): Idempotency {
    this.#idempotency ??= new Idempotency(...this.repoArgs);
    return this.#idempotency;
  }

  get tasks(): TaskRecords {
    this.#tasks ??= new TaskRecords(...this.repoArgs);
    return this.#tasks;
  }

  get pushConfigs(): PushConfigs {
    this.#pushConfigs ??= new PushConfigs(...this.repoArgs);
    return this.#pushConfigs;
  }

  get outbox(): PushOutbox {
    this.#outbox ??= new PushOutbox(...this.repoArgs);
    return this.#outbox;
  }

  get secrets(): Secrets {
    this.#secrets ??= new Secrets(...this.repoArgs);
    return this.#secrets;
  }

  get peerWaits(): PeerWaits {
    this.#peerWaits ??= new PeerWaits(...this.repoArgs);
    return this.#peerWaits;
  }

  /** The audit log: reads and `verify`. A transaction records an act with `StoreTx.recordAudit`. */
  get audit(): AuditLog {
    this.#audit ??= new AuditLog(...this.repoArgs);
    return this.#audit;
  }

  get notifications(): Notifications {
    this.#notifications ??= new Notifications(...this.repoArgs);
    return this.#notifications;
  }

  get decisionLinks(): DecisionLinks {
    this.#decisionLinks ??= new DecisionLinks(...this.repoArgs);
    return this.#decisionLinks;
  }

  get webhooks(): Webhooks {
    this.#webhooks ??= new Webhooks(...this.repoArgs);
    return this.#webhooks;
  }

  get webhookDeliveries(): WebhookDeliveries {
    this.#webhookDeliveries ??= new WebhookDeliveries(...this.repoArgs);
    return this.#webhookDeliveries;
  }
}
