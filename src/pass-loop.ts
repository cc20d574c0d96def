// The loop behind both workers (runs, push deliveries): a pass looks for work and says when to
// look again. Passes never overlap: a kick during a pass runs one more right after it, and a
// timer is the backstop for work that comes due with nobody kicking.
//
//   const loop = new PassLoop(async () => { await claimAndStart(); return msUntilNextDue; }, onError);
//   loop.start();  …  loop.kick();  …  loop.stop();

export class PassLoop {
  private timer: NodeJS.Timeout | undefined;
  private passing = false;
  private again = false;
  /** Only `stop` ends it: a kick before `start` runs a pass too (a commit may wake a worker
   * whose host is not listening yet; its work is real). */
  private stopped = false;

  /** `pass` returns the delay (ms) before the next pass; `onError` logs and returns that delay. */
  constructor(
    private readonly pass: () => Promise<number>,
    private readonly onError: (err: unknown) => number,
  ) {}

  start(): void {
    this.kick();
  }

  /** Ask for a pass soon. */
  kick(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = true;
    void this.pass()
      .catch((err) => this.onError(err))
      .then((delayMs) => this.schedule(delayMs))
      .finally(() => {
        this.passing = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), Math.max(10, ms));
    this.timer.unref();
  }
}
