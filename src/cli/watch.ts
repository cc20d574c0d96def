// `handoff watch <url> <taskId>`: follow a task live over tasks/resubscribe (1.0: SubscribeToTask;
// SSE) until it ends.
//
// Resumption: every SSE `id:` seen is remembered (Handoff: the run event sequence). When the
// connection drops, the server restarts or the stream ends early, the watch reconnects with
// `Last-Event-ID: <last id>` (backoff 250 ms doubling to 5 s, for up to --reconnect-for seconds,
// default 60, counted from the last sign of life) and the server replays only what came after it.
// An event whose id is not past the last one is dropped, so no event is ever shown twice.
//
// Agents without resumable streams: a stream that ends without ids or a terminal state, an agent
// whose card says `streaming: false`, or one that refuses tasks/resubscribe (-32601/-32004) is
// followed by polling tasks/get instead.
//
// Output: human lines (state changes, artifacts; a spinner while waiting, on a TTY only), or with
// --json one JSON object per line: {"id": <SSE id or null>, "result": <Task | status-update |
// artifact-update>, or over 1.0 the StreamResponse or Task as sent>}. A status update into
// input-required names only the interrupt's kind: humans then see the Task read once (tasks/get),
// with every open interrupt (node, kind, title; several while parallel branches wait) and the
// command to answer each. Reconnection notes go to stderr. Exit code from the final state: 0 completed,
// 1 failed/canceled/rejected or an error, 3 when the agent ends the stream at input-required.
import type { Command } from 'commander';
import type { Artifact, Task } from '../a2a/v0_3/types.js';
import { UsageError } from './client/card.js';
import { clientCommand, type ClientOptions, connect, type Connected, run } from './client/command.js';
import { HttpStatusError, NetworkError } from './client/http.js';
import { exitCodeForState, formatEventLine, isTerminal, openwopOf, Paint, waitingLines } from './client/output.js';
import { RpcError, type StreamItem } from './client/rpc.js';

interface WatchOptions extends ClientOptions {
  reconnectFor?: string;
}

const BACKOFF_START_MS = 250;
const BACKOFF_MAX_MS = 5_000;
const POLL_MS = 1_000;
/** Longest silence on a stream before it counts as dropped (Handoff sends keepalives every 15 s). */
const IDLE_TIMEOUT_MS = 45_000;

type Rec = Record<string, unknown>;
const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The task state an event reports, if any. */
function stateOf(result: unknown): string | undefined {
  if (!isObject(result)) return undefined;
  if (
    (result.kind === 'task' || result.kind === 'status-update') &&
    isObject(result.status) &&
    typeof result.status.state === 'string'
  ) {
    return result.status.state;
  }
  return undefined;
}

const numeric = (id: string): boolean => /^-?\d{1,15}$/.test(id);

/** True if `id` is not past `last` (numeric ids compare as numbers, others only by equality). */
export function isStale(id: string, last: string | undefined): boolean {
  if (last === undefined) return false;
  if (numeric(id) && numeric(last)) return Number(id) <= Number(last);
  return id === last;
}

/** A single-line spinner on stdout, only when stdout is a TTY and the output is for humans. */
class Spinner {
  private static readonly FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private text = '';
  private shown = false;
  private readonly since = Date.now();
  constructor(
    private readonly enabled: boolean,
    private readonly paint: Paint,
  ) {}
  set(text: string): void {
    if (!this.enabled) return;
    this.text = text;
    if (!this.timer) {
      this.timer = setInterval(() => this.draw(), 100);
      this.timer.unref();
    }
    this.draw();
  }
  private draw(): void {
    const secs = Math.round((Date.now() - this.since) / 1000);
    const f = Spinner.FRAMES[this.frame++ % Spinner.FRAMES.length] ?? '';
    process.stdout.write(`\r\x1b[2K${this.paint.dim(`${f} ${this.text} (${secs}s)`)}`);
    this.shown = true;
  }
  clear(): void {
    if (this.shown) process.stdout.write('\r\x1b[2K');
    this.shown = false;
  }
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
  }
}

/** Writes events (human or JSON lines) and notes; remembers what humans were already shown. */
class WatchOutput {
  private readonly paint = new Paint(process.stdout);
  private readonly errPaint = new Paint(process.stderr);
  readonly spinner: Spinner;
  private lastState: string | undefined;
  private readonly artifacts = new Map<string, string>();

  constructor(
    readonly json: boolean,
    private readonly agentUrl: string,
  ) {
    this.spinner = new Spinner(!json && process.stdout.isTTY === true, this.paint);
  }

  header(taskId: string, endpoint: string): void {
    if (!this.json) process.stdout.write(`${this.paint.dim(`watching ${taskId} at ${endpoint}`)}\n`);
  }

  note(text: string): void {
    this.spinner.clear();
    process.stderr.write(`${this.errPaint.dim(`handoff: ${text}`)}\n`);
  }

  /** `item.result` in its 0.3 form for humans; --json prints `wire`, what the agent sent. */
  event(item: StreamItem & { wire?: unknown }): void {
    this.spinner.clear();
    if (this.json) {
      const id = item.id === undefined ? null : numeric(item.id) ? Number(item.id) : item.id;
      process.stdout.write(`${JSON.stringify({ id, result: item.wire ?? item.result })}\n`);
      return;
    }
    const line = this.humanLine(item.result);
    if (line) process.stdout.write(`${line}\n`);
  }

  /** Humans: what the task, read whole, waits for (every open interrupt) and how to answer. */
  waitingFor(task: Task): void {
    const lines = waitingLines(task, this.paint, this.agentUrl);
    if (lines.length === 0) return;
    this.spinner.clear();
    process.stdout.write(`${lines.join('\n')}\n`);
  }

  waiting(state: string | undefined): void {
    this.spinner.set(state ? `waiting · ${state}` : 'waiting');
  }

  /** Humans see a state only when it changes and an artifact only when it is new or changed. */
  private humanLine(result: unknown): string | undefined {
    if (!isObject(result)) return undefined;
    if (result.kind === 'artifact-update') {
      return this.newArtifact(result.artifact as Artifact)
        ? formatEventLine(result, this.paint, this.agentUrl)
        : undefined;
    }
    const state = stateOf(result);
    if (result.kind === 'task') {
      const task = result as unknown as Task;
      const fresh = (task.artifacts ?? []).filter((a) => this.newArtifact(a));
      if (state === this.lastState && fresh.length === 0) return undefined;
      this.lastState = state;
      return formatEventLine({ ...task, artifacts: fresh }, this.paint, this.agentUrl);
    }
    if (result.kind === 'status-update') {
      // A repeated state is news only with a message (a node's progress: "Review (2 of 3)").
      if (state === this.lastState && !isObject(isObject(result.status) ? result.status.message : undefined))
        return undefined;
      this.lastState = state;
    }
    return formatEventLine(result, this.paint, this.agentUrl);
  }

  private newArtifact(a: Artifact | undefined): boolean {
    if (!a || typeof a.artifactId !== 'string') return true;
    const body = JSON.stringify(a.parts);
    if (this.artifacts.get(a.artifactId) === body) return false;
    this.artifacts.set(a.artifactId, body);
    return true;
  }
}

/** Failures worth reconnecting after: the network, a 5xx/408/429, an internal error mid-stream. */
function retryable(err: unknown): boolean {
  if (err instanceof NetworkError) return true;
  if (err instanceof HttpStatusError) return err.status >= 500 || err.status === 408 || err.status === 429;
  if (err instanceof RpcError) return err.code === -32603;
  return false;
}

const why = (err: unknown): string => (err instanceof NetworkError ? err.detail : (err as Error).message);

/** The agent cannot (or will not) stream this task: follow it by polling instead. */
const wantsPolling = (err: unknown): boolean => err instanceof RpcError && (err.code === -32601 || err.code === -32004);

class Watcher {
  private lastId: string | undefined;
  private lastState: string | undefined;
  private deadline = 0;
  private attempt = 0;

  constructor(
    private readonly c: Connected,
    private readonly taskId: string,
    private readonly out: WatchOutput,
    private readonly windowMs: number,
  ) {}

  private alive(): void {
    this.deadline = Date.now() + this.windowMs;
    this.attempt = 0;
  }

  /** Wait before the next attempt, or throw once the reconnect window is spent. */
  private async backoff(reason: string): Promise<void> {
    const left = this.deadline - Date.now();
    if (left <= 0) {
      throw new Error(
        `gave up on ${this.taskId} after ${Math.round(this.windowMs / 1000)} s without a connection (${reason}); last state ${this.lastState ?? 'unknown'}`,
      );
    }
    this.attempt++;
    const base = Math.min(BACKOFF_START_MS * 2 ** (this.attempt - 1), BACKOFF_MAX_MS);
    const delay = Math.min(left, Math.round(base * (0.8 + Math.random() * 0.4)));
    const after = this.lastId !== undefined ? ` after event ${this.lastId}` : '';
    this.out.note(`${reason}; reconnecting${after} in ${(delay / 1000).toFixed(1)} s (attempt ${this.attempt})`);
    this.out.spinner.set(`reconnecting (attempt ${this.attempt})`);
    await sleep(delay);
  }

  async watch(): Promise<number> {
    this.alive();
    if (this.c.agent.card.capabilities?.streaming === false) {
      this.out.note(`the agent does not stream (capabilities.streaming false): polling ${this.c.a2a.m.get}`);
      return this.poll();
    }
    for (;;) {
      let events = 0;
      let withIds = 0;
      let reason: string;
      try {
        const stream = await this.c.a2a.subscribe(this.taskId, {
          ...(this.lastId !== undefined ? { lastEventId: this.lastId } : {}),
          idleTimeoutMs: IDLE_TIMEOUT_MS,
        });
        if (this.attempt > 0)
          this.out.note(`reconnected${this.lastId !== undefined ? `, resuming after event ${this.lastId}` : ''}`);
        this.alive();
        this.out.waiting(this.lastState);
        for await (const item of stream) {
          events++;
          this.alive();
          if (item.id !== undefined) {
            withIds++;
            if (isStale(item.id, this.lastId)) continue;
            this.lastId = item.id;
          }
          this.out.event(item);
          const state = stateOf(item.result);
          if (state !== undefined) this.lastState = state;
          if (state === 'input-required') await this.showWaiting(item.result);
          if (isTerminal(state)) return exitCodeForState(state);
          // The agent says this stream is over (v0.3 agents end it at input-required).
          if (isObject(item.result) && item.result.kind === 'status-update' && item.result.final === true)
            return exitCodeForState(state);
          this.out.waiting(this.lastState);
        }
        // Ended cleanly without a terminal state. Without ids there is nothing to resume from.
        if (events > 0 && withIds === 0) {
          this.out.note(
            `the agent ended the stream and offers no event ids to resume from: polling ${this.c.a2a.m.get}`,
          );
          return this.poll();
        }
        // A clean end short of a terminal state (a server draining): check before resuming, in
        // case the end was all there was left to see.
        const now = await this.c.a2a.getTask(this.taskId);
        if (isTerminal(now.view.status?.state)) {
          this.out.event({ result: now.view, wire: now.wire });
          return exitCodeForState(now.view.status.state);
        }
        reason = 'the stream ended before the task did';
      } catch (err) {
        if (wantsPolling(err)) {
          this.out.note(
            `${this.c.a2a.m.subscribe} refused (${(err as RpcError).code} ${(err as Error).message}): polling ${this.c.a2a.m.get}`,
          );
          return this.poll();
        }
        if (!retryable(err)) throw err;
        reason = `connection lost (${why(err)})`;
      }
      await this.backoff(reason);
    }
  }

  /**
   * A Handoff status update into input-required names only the interrupt's kind: read the Task
   * once to show every open interrupt. Best effort: the watch goes on without it if the read fails.
   */
  private async showWaiting(result: unknown): Promise<void> {
    if (this.out.json || !isObject(result) || result.kind !== 'status-update') return;
    if (!openwopOf(result as { metadata?: Rec })) return;
    try {
      this.out.waitingFor((await this.c.a2a.getTask(this.taskId)).view);
    } catch (err) {
      this.out.note(`could not read the task's open interrupts: ${why(err)}`);
    }
  }

  /** Follow the task with tasks/get, showing each change, until it ends. */
  private async poll(): Promise<number> {
    for (;;) {
      try {
        const { view: task, wire } = await this.c.a2a.getTask(this.taskId);
        if (this.attempt > 0) this.out.note('reconnected');
        this.alive();
        const state = task.status?.state;
        if (state !== this.lastState || isTerminal(state)) this.out.event({ result: task, wire });
        this.lastState = state;
        if (isTerminal(state)) return exitCodeForState(state);
        this.out.waiting(state);
        await sleep(POLL_MS);
      } catch (err) {
        if (!retryable(err)) throw err;
        await this.backoff(`connection lost (${why(err)})`);
      }
    }
  }
}

export function watchCommand(): Command {
  return clientCommand(
    'watch',
    'follow a task live until it ends; reconnects and resumes after a drop or a server restart',
  )
    .argument('<url>', 'agent base URL')
    .argument('<taskId>', 'task id')
    .option('--reconnect-for <seconds>', 'keep trying to reconnect this long after the last sign of life (default 60)')
    .action(
      run(async (url: string, taskId: string, opts: WatchOptions) => {
        let windowMs = 60_000;
        if (opts.reconnectFor !== undefined) {
          const s = Number(opts.reconnectFor);
          if (!Number.isFinite(s) || s < 0)
            throw new UsageError(`--reconnect-for must be a number of seconds, got '${opts.reconnectFor}'`);
          windowMs = s * 1000;
        }
        const c = await connect(url, opts);
        const out = new WatchOutput(opts.json === true, url);
        const onSigint = () => {
          out.spinner.stop();
          process.exit(130);
        };
        process.once('SIGINT', onSigint);
        out.header(taskId, `${c.agent.endpoint} (A2A ${c.a2a.version})`);
        try {
          return await new Watcher(c, taskId, out, windowMs).watch();
        } finally {
          out.spinner.stop();
          process.off('SIGINT', onSigint);
        }
      }),
    );
}
