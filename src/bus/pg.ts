// The cross-instance bus on PostgreSQL: after-commit NOTIFY, and LISTEN on one dedicated
// connection per instance. Notices are only wake-ups, so losing some is harmless as long as
// readers look again: after every (re)connect the bus tells every local subscriber to re-read
// (a catch-up notice), because notifications sent while disconnected are gone.
import pg from 'pg';
import type { Logger } from 'pino';
import type { ChangeBus, RunNotice } from './bus.js';
import { InProcessBus } from './in-process.js';

export interface PgBusOptions {
  databaseUrl: string;
  instanceId: string;
  logger: Logger;
  /** Pool used for NOTIFY (the store's pool is not reachable from here; a small one is made). */
  notifyPoolSize?: number;
  reconnectMs?: number;
  /** NOTIFY is database-wide: hosts on different schemas of one database use different channels. */
  schema?: string;
}

/** Most notices one NOTIFY statement carries. */
const NOTIFY_BATCH = 500;

export class PgBus implements ChangeBus {
  private readonly local = new InProcessBus();
  private readonly pool: pg.Pool;
  private listener: pg.Client | undefined;
  /** A LISTEN connection being opened: close() waits for it, so none outlives the bus. */
  private connecting: Promise<void> | undefined;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly channel: string;
  /** Notices published and not yet sent (see `sendNotices`). */
  private readonly outgoing: string[] = [];
  private sendScheduled = false;

  constructor(private readonly opts: PgBusOptions) {
    if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(opts.schema))
      throw new Error(`invalid schema name: ${opts.schema}`);
    this.channel = opts.schema ? `handoff_runs_${opts.schema}` : 'handoff_runs';
    this.pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.notifyPoolSize ?? 2 });
    this.pool.on('error', (err) => opts.logger.warn({ err }, 'bus notify pool error'));
  }

  /** Connect the listener; resolves once LISTEN is active (or rejects on the first failure). */
  async start(): Promise<void> {
    await this.connect();
  }

  publish(notices: RunNotice[]): void {
    this.local.publish(notices);
    // Tiny payloads (NOTIFY's limit is ~8000 bytes); readers fetch the rest from the store.
    for (const n of notices)
      this.outgoing.push([this.opts.instanceId, n.runId, n.tenantId, n.status, n.lastSeq].join('|'));
    if (this.outgoing.length > 0 && !this.sendScheduled) {
      this.sendScheduled = true;
      // The commits that end in this turn of the event loop share one round trip.
      setImmediate(() => this.sendNotices());
    }
  }

  /** One statement for the notices published since the last one (in order; at most NOTIFY_BATCH each). */
  private sendNotices(): void {
    this.sendScheduled = false;
    while (this.outgoing.length > 0) {
      const payloads = this.outgoing.splice(0, NOTIFY_BATCH);
      this.pool
        .query('select pg_notify($1, p) from unnest($2::text[]) as p', [this.channel, payloads])
        .catch((err) => this.opts.logger.warn({ err }, 'NOTIFY failed'));
    }
  }

  subscribeRun(runId: string, fn: (n: RunNotice) => void): () => void {
    return this.local.subscribeRun(runId, fn);
  }

  subscribeAll(fn: (n: RunNotice) => void): () => void {
    return this.local.subscribeAll(fn);
  }

  private connect(): Promise<void> {
    const attempt = this.openListener();
    this.connecting = attempt;
    const settled = (): void => {
      if (this.connecting === attempt) this.connecting = undefined;
    };
    attempt.then(settled, settled);
    return attempt;
  }

  private async openListener(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.databaseUrl });
    client.on('notification', (msg) => this.onNotification(msg.payload));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`listen ${this.channel}`);
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    // Closed while connecting: this connection would keep the process alive, unused.
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.listener = client;
    this.catchUp();
  }

  private onNotification(payload: string | undefined): void {
    const [origin, runId, tenantId, status, lastSeq] = (payload ?? '').split('|');
    // Our own commits were delivered locally already.
    if (!runId || !tenantId || !status || origin === this.opts.instanceId) return;
    this.local.publish([
      { runId, tenantId, status: status as RunNotice['status'], lastSeq: Number(lastSeq), remote: true },
    ]);
  }

  /** Every local subscriber looks at the store again: whatever was missed is read now. */
  private catchUp(): void {
    this.local.broadcastCatchUp();
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    if (this.closed) return;
    this.opts.logger.warn({ err }, 'bus LISTEN connection lost; reconnecting');
    client.end().catch(() => {});
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      this.connect().catch((err) => {
        this.opts.logger.warn({ err }, 'bus reconnect failed');
        this.scheduleReconnect();
      });
    }, this.opts.reconnectMs ?? 500);
    this.reconnectTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.sendNotices(); // what was published goes out before the pool ends, as it always did

    clearTimeout(this.reconnectTimer);
    await this.connecting?.catch(() => {});
    await this.listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
    await this.local.close();
  }
}
