// Retention: terminal runs and everything of theirs are purged after the retention window; a
// purged run is unknown from then on. Idempotency records are kept at least 24 h (§3.6).
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export class Retention {
  private timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly store: Store,
    private readonly days: number,
    private readonly logger: Logger,
    private readonly everyMs = 60 * 60 * 1000,
  ) {}

  start(): void {
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), this.everyMs);
    this.timer.unref();
  }

  async sweep(now = Date.now()): Promise<number> {
    try {
      const purged = await this.store.purgeTerminalBefore(new Date(now - this.days * DAY_MS));
      await this.store.idempotency.purgeBefore(new Date(now - Math.max(this.days * DAY_MS, DAY_MS)));
      if (purged > 0) this.logger.info({ purged }, 'retention: purged terminal runs');
      return purged;
    } catch (err) {
      this.logger.error({ err }, 'retention sweep failed');
      return 0;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
