// The engine's public operations: start a run, cancel it, resolve its interrupt. Each one is a
// single store transaction (docs/architecture.md, "the one rule"); the worker (runner.ts) does the rest.
import { createHash } from 'node:crypto';
import { ConflictError } from '../store/errors.js';
import type { InterruptRecord, NewEvent, RunEvent, RunRecord } from '../store/model.js';
import { isSuspended, isTerminal } from '../store/model.js';
import type { NewRun, Store, StoreTx } from '../store/store.js';
import { EngineError } from './errors.js';
import { newRunId } from './ids.js';
import { startsChildren } from './nodes/child-runs/index.js';
import type { ChildRunSpec } from './nodes/child-runs/service.js';
import type { ChildSummary } from '../store/repos/runs.js';
import { decide, type Decision } from './interrupts.js';
import { requestCancel } from './cancel.js';
import { type Clock, iso, systemClock } from './clock.js';
import { definitionOf, type WorkflowSource } from './workflow/source.js';
import { driveInline, type StepContext } from './step.js';
import { commitResolution } from './resolution.js';
import { lineAt, stamped } from './branches.js';
import type { WorkflowDefinition } from './workflow/definition.js';
import { spread } from './spread.js';
import { checkArtifact, decisionEntry, type Redact, type Surface } from './audit.js';
import { currentTraceContext } from '../telemetry/tracing.js';

export interface Caller {
  tenantId: string;
  principalId: string;
  /** The surface the client says it is (`Handoff-Surface: console|cli`); it wins over the route's. */
  surface?: Surface;
  /** An admin key (HANDOFF_API_KEYS `admin`): reads the audit log of every tenant. */
  admin?: boolean;
  /** The approver groups the credential says the caller is in (a gate's `approverGroupRefs`). */
  groups?: readonly string[];
  /** The approver roles the credential says the caller holds (a gate's `approverRoleRefs`). */
  roles?: readonly string[];
}

/** How a person's decision came in, and what it was bound to. */
export interface ResolveOptions {
  /** Where the decision came in (audit log); the caller's own `surface` wins. Default `rest`. */
  surface?: Surface;
  /** The `artifactHash` the decider saw: another one now is `artifact_changed`, nothing changes. */
  expectedArtifactHash?: string;
  /** Events logged before the decision's own. */
  events?: NewEvent[];
  /** Runs in the resolving transaction once the decision is valid, before anything commits. */
  onAccepted?: (tx: StoreTx, run: RunRecord) => Promise<void>;
}

export interface StartRunRequest {
  workflowId: string;
  inputs: Record<string, unknown>;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** Caller-supplied Idempotency-Key with the canonical body it came with. */
  idempotency?: { key: string; body: unknown };
  /** Events to start the log with (e.g. the A2A message that asked for the run). */
  events?: NewEvent[];
  /** Runs in the creating transaction right after the insert, before any step: records that
   * must exist when the first transitions commit (e.g. an inline push config). */
  onCreated?: (tx: StoreTx, run: RunRecord) => Promise<void>;
}

export interface StartRunResult {
  run: RunRecord;
  /** True when an earlier request with the same idempotency key created the run. */
  replayed: boolean;
  /** The run's whole event log as committed, when this call created it and ran it inline. */
  events?: RunEvent[];
  /** Its open interrupt, when this call created it and it waits at a gate. */
  open?: InterruptRecord;
}

export interface ResolveResult {
  run: RunRecord;
  interrupt: InterruptRecord;
  outcome: 'resolved' | 'vote-recorded' | 'ask-recorded';
}

/** What `resolveRead` reads: the run, the open interrupt to resolve and the caller's decision. */
export interface ReadDecision {
  run: RunRecord;
  interrupt: InterruptRecord;
  resumeValue: unknown;
  events: NewEvent[];
  /** The `artifactHash` the decider saw (a reply's `expectedArtifactHash`). */
  expectedArtifactHash?: string;
  /** Where the decision came in; `a2a` by default. */
  surface?: Surface;
}

const RETRIES = 5;

/**
 * A new run keeps the trace context active when it is made (the request's span, which continues
 * its caller's trace, or the parent's node span for a child run): its node executions, after a
 * restart or a decision a day later, are spans of that same trace (src/engine/step.ts).
 */
function withTraceContext(metadata: Record<string, unknown>): Record<string, unknown> {
  const trace = currentTraceContext();
  return trace ? spread(metadata, { traceContext: trace }) : metadata;
}

/** What a new run is made of besides its workflow and inputs. */
interface RunInit {
  runId: string;
  tags: string[];
  metadata: Record<string, unknown>;
  events: NewEvent[];
  parent?: { runId: string; nodeId: string };
}

/** A worker in this process that can take a run the moment it is created (no claim round trip). */
export interface LocalWorker {
  /** A lease to write with the new run, or undefined when the worker has no room. */
  reserve(): { owner: string; leaseMs: number } | undefined;
  adopt(run: RunRecord): void;
}

export interface EngineOptions {
  /** This process's worker: a new run is leased to it at creation and its inline prefix runs
   * in the creating transaction. Absent: runs wait for whichever worker claims them. */
  worker?: LocalWorker;
  clock?: Clock;
  /** Branches one run may have live at once (HANDOFF_MAX_BRANCHES). */
  maxBranches?: number;
  /** How many levels of child runs may stand below a run started by a caller (HANDOFF_MAX_CHILD_DEPTH). */
  maxChildDepth?: number;
  /** Scrubs credentials out of what the audit log records of a decision (the host's Redactor). */
  redact?: Redact;
}

export class Engine {
  private readonly worker: LocalWorker | undefined;
  private readonly clock: Clock;
  private readonly inline: StepContext;
  private readonly maxChildDepth: number;
  private readonly redact: Redact;

  constructor(
    readonly store: Store,
    readonly workflows: WorkflowSource,
    opts: EngineOptions = {},
  ) {
    this.worker = opts.worker;
    this.clock = opts.clock ?? systemClock;
    this.inline = { clock: this.clock, ...(opts.maxBranches !== undefined ? { maxBranches: opts.maxBranches } : {}) };
    this.maxChildDepth = opts.maxChildDepth ?? 5;
    this.redact = opts.redact ?? ((v) => v);
  }

  /** Read a run as the caller may see it: another tenant's run is indistinguishable from none. */
  async getRun(caller: Caller, runId: string): Promise<RunRecord> {
    const run = await this.store.runs.get(runId);
    if (!run || run.tenantId !== caller.tenantId) throw notFound(runId);
    return run;
  }

  async startRun(caller: Caller, req: StartRunRequest): Promise<StartRunResult> {
    const { def, inputs } = this.checkedStart(req.workflowId, req.inputs);
    const result = await this.withRetry(() => this.insertRun(caller, def, inputs, req));
    if (!result.replayed && result.run.leaseOwner) this.worker?.adopt(result.run);
    return result;
  }

  private async insertRun(
    caller: Caller,
    def: WorkflowDefinition,
    inputs: Record<string, unknown>,
    req: StartRunRequest,
  ): Promise<StartRunResult> {
    const scope = 'POST /v1/runs';
    const bodyHash = req.idempotency ? hashBody(req.idempotency.body) : '';
    return this.store.transaction(async (tx) => {
      if (req.idempotency) {
        const prior = await tx.idempotency.get(caller.tenantId, scope, req.idempotency.key);
        if (prior) return this.replay(prior.bodyHash, bodyHash, (prior.response as { runId: string }).runId, tx);
      }
      const init = { runId: newRunId(), tags: req.tags ?? [], metadata: req.metadata ?? {}, events: req.events ?? [] };
      const { run, settled } = await this.createRun(tx, caller, def, inputs, init, req.onCreated);
      if (req.idempotency) {
        await tx.idempotency.put({
          tenantId: caller.tenantId,
          scope,
          key: req.idempotency.key,
          bodyHash,
          statusCode: 201,
          response: { runId: run.runId },
        });
      }
      const events = tx.deferredEvents(run.runId);
      // Known without a query: the run is new, its interrupts are the ones this transaction opened.
      const open = isSuspended(settled.status) ? await tx.interrupts.getOpen(run.runId) : undefined;
      const result: StartRunResult = { run: settled, replayed: false };
      if (events) result.events = events;
      if (open) result.open = open;
      return result;
    });
  }

  /**
   * Insert a new run in `tx` and, with a local worker, run its instantaneous prefix in the same
   * transaction: `run` as inserted, `settled` as the inline steps leave it.
   */
  private async createRun(
    tx: StoreTx,
    caller: Caller,
    def: WorkflowDefinition,
    inputs: Record<string, unknown>,
    init: RunInit,
    onCreated?: StartRunRequest['onCreated'],
  ): Promise<{ run: RunRecord; settled: RunRecord }> {
    const now = this.isoNow();
    const lease = this.worker?.reserve();
    const fresh: NewRun = {
      runId: init.runId,
      tenantId: caller.tenantId,
      principalId: caller.principalId,
      workflowId: def.id,
      status: 'pending',
      inputs,
      state: { outputs: {}, vars: initialVars(def) },
      cursor: { nodeId: this.workflows.startNode(def).id, ordinals: {} },
      tags: init.tags,
      metadata: withTraceContext(init.metadata),
      createdAt: now,
    };
    // Assigned, not spread in: an object spread takes V8's slow path on this per-request record.
    if (lease) {
      fresh.leaseOwner = lease.owner;
      fresh.leaseExpiresAt = this.clock.now() + lease.leaseMs;
    }
    if (init.parent) {
      fresh.parentRunId = init.parent.runId;
      fresh.parentNodeId = init.parent.nodeId;
    }
    const { run } = await tx.insertRun(
      fresh,
      init.events,
      // Run inline below: write the row once, in the state the inline steps leave it in.
      { defer: lease !== undefined },
    );
    await onCreated?.(tx, run);
    // With a local worker, the run's instantaneous prefix executes in this same transaction:
    // a request that needs no waiting commits exactly once.
    const settled = lease ? await driveInline(tx, def, run, this.inline) : run;
    return { run, settled };
  }

  /**
   * Start the child runs of node `nodeId` of run `parentRunId` (core.forEach, core.subWorkflow) that
   * do not exist yet, in one transaction, as the parent's tenant and principal; a child that exists
   * (its id is derived from where it is started) is returned as it is. Refused (EngineError) when a
   * workflow or its inputs are not valid, when the parent has ended or is being cancelled (its
   * cascade would miss the child: the parent's row is locked meanwhile), or when a child would stand
   * more than `maxChildDepth` levels below its top run.
   */
  async startChildren(parentRunId: string, nodeId: string, specs: ChildRunSpec[]): Promise<RunRecord[]> {
    const prepared = specs.map((spec) => ({ spec, ...this.checkedStart(spec.workflowId, spec.inputs) }));
    const { runs, created } = await this.withRetry(() =>
      this.store.transaction(async (tx) => {
        const parent = await tx.getRun(parentRunId, { forUpdate: true });
        if (!parent) throw notFound(parentRunId);
        if (isTerminal(parent.status) || parent.status === 'cancelling') {
          throw new EngineError('parent_ended', `run ${parentRunId} is ${parent.status}: it starts no more child runs`);
        }
        const caller = { tenantId: parent.tenantId, principalId: parent.principalId };
        const out: RunRecord[] = [];
        const made: RunRecord[] = [];
        let depth: number | undefined;
        for (const { spec, def, inputs } of prepared) {
          const existing = await tx.getRun(spec.runId);
          if (existing) {
            if (existing.parentRunId !== parent.runId || existing.parentNodeId !== nodeId) {
              throw new EngineError('conflict', `run id ${spec.runId} belongs to another run`);
            }
            out.push(existing);
            continue;
          }
          depth ??= (await this.depthOf(tx, parent)) + 1;
          if (depth > this.maxChildDepth) {
            throw new EngineError(
              'child_depth_exceeded',
              `a child of run ${parentRunId} would stand ${depth} levels below its top run; ` +
                `HANDOFF_MAX_CHILD_DEPTH is ${this.maxChildDepth}`,
              { depth, maxDepth: this.maxChildDepth },
            );
          }
          const init = {
            runId: spec.runId,
            tags: [],
            metadata: {},
            events: [],
            parent: { runId: parent.runId, nodeId },
          };
          const { settled } = await this.createRun(tx, caller, def, inputs, init);
          out.push(settled);
          made.push(settled);
        }
        return { runs: out, created: made };
      }),
    );
    for (const run of created) if (run.leaseOwner) this.worker?.adopt(run);
    return runs;
  }

  /** A workflow by id and a copy of `inputs` it accepts (its defaults filled in), or an EngineError. */
  private checkedStart(workflowId: string, given: Record<string, unknown>) {
    const def = this.workflows.get(workflowId);
    if (!def) {
      throw new EngineError('validation_error', `unknown workflow '${workflowId}'`, {
        available: this.workflows.ids(),
      });
    }
    // Validation may fill in defaults: the caller's object is never changed.
    const inputs = copyInputs(given);
    const errors = this.workflows.validateInputs(def.id, inputs);
    if (errors.length > 0)
      throw new EngineError('validation_error', `invalid inputs: ${errors.join('; ')}`, { errors });
    return { def, inputs };
  }

  /** How many runs stand above `run` (0 for a run a caller started). */
  private async depthOf(tx: StoreTx, run: RunRecord): Promise<number> {
    let depth = 0;
    for (let up = run.parentRunId; up !== undefined && depth <= this.maxChildDepth; depth++) {
      up = (await tx.getRun(up))?.parentRunId;
    }
    return depth;
  }

  private async replay(priorHash: string, hash: string, runId: string, tx: StoreTx): Promise<StartRunResult> {
    if (priorHash !== hash) {
      throw new EngineError('idempotency_key_mismatch', 'this Idempotency-Key was used with a different request body');
    }
    const run = await tx.getRun(runId);
    if (!run) throw notFound(runId); // purged by retention
    return { run, replayed: true };
  }

  /** The unfinished children of `run`, oldest first (none once it ended, or if its workflow starts none). */
  async childrenOf(run: RunRecord): Promise<ChildSummary[]> {
    if (isTerminal(run.status) || !startsChildren(this.workflows.get(run.workflowId))) return [];
    return this.store.runs.children(run.runId);
  }

  /**
   * Cancel a run in any non-terminal state. A run a worker is executing goes through `cancelling`.
   * The cancel is recorded in the audit log (`surface`: where it came in, `rest` by default).
   */
  async cancelRun(caller: Caller, runId: string, reason?: string, surface: Surface = 'rest'): Promise<RunRecord> {
    return this.withRetry(() =>
      this.store.transaction(async (tx) => {
        const run = await this.readForUpdate(tx, caller, runId);
        if (isTerminal(run.status)) {
          throw new EngineError('run_terminal', `run ${runId} is already ${run.status}`, { status: run.status });
        }
        tx.recordAudit({
          tenantId: caller.tenantId,
          principal: caller.principalId,
          surface: caller.surface ?? surface,
          act: 'cancel',
          runId,
          values: this.redact({ status: run.status, ...(reason ? { reason } : {}) }),
        });
        return requestCancel(tx, run, reason ? { reason } : {}, this.clock.now());
      }),
    );
  }

  /**
   * Resolve (or vote on, or ask about) the open interrupt of `nodeId`: refused with
   * `artifact_changed` when `opts.expectedArtifactHash` is not what the interrupt shows now;
   * recorded in the audit log, in the same transaction, with the surface it came in on.
   */
  async resolveInterrupt(
    caller: Caller,
    runId: string,
    nodeId: string,
    resumeValue: unknown,
    opts: ResolveOptions = {},
  ): Promise<ResolveResult> {
    const events = opts.events ?? [];
    return this.withRetry(() =>
      this.store.transaction(async (tx) => {
        const run = await this.readForUpdate(tx, caller, runId);
        const interrupt = await this.openInterrupt(tx, run, nodeId);
        const decision = decide(interrupt, caller, resumeValue, this.isoNow());
        checkArtifact(interrupt, opts.expectedArtifactHash);
        await opts.onAccepted?.(tx, run);
        const seen = opts.expectedArtifactHash;
        this.audited(tx, caller, opts.surface ?? 'rest', run, interrupt, resumeValue, decision, seen);
        return this.applyDecision(tx, run, interrupt, { ...decision, events: [...events, ...decision.events] });
      }),
    );
  }

  /** Record a person's decision on `open` in the audit log, with the transaction that applies it. */
  private audited(
    tx: StoreTx,
    caller: Caller,
    surface: Surface,
    run: RunRecord,
    open: InterruptRecord,
    resumeValue: unknown,
    decision: Decision,
    expectedArtifactHash: string | undefined,
  ): void {
    const actor = { tenantId: caller.tenantId, principalId: caller.principalId, surface: caller.surface ?? surface };
    const value = resumeValue as Record<string, unknown>; // decide() refused anything but an object
    tx.recordAudit(decisionEntry(actor, run.runId, open, value, decision, this.redact, expectedArtifactHash));
  }

  /**
   * Resolve an interrupt that `read` finds in the resolving transaction itself, so a caller that
   * needs more than the run (its task record, its open interrupt) reads it all in one statement;
   * `read` refuses by throwing. `settle` runs in the transaction once the decision is applied,
   * before anything commits, and its value is returned with the result, as are the events the
   * transaction appended to the run (`appended`, in sequence order, up to the result's run).
   */
  async resolveRead<T>(
    caller: Caller,
    read: (tx: StoreTx) => Promise<ReadDecision>,
    onAccepted?: (tx: StoreTx, run: RunRecord) => Promise<void>,
    settle?: (tx: StoreTx, result: ResolveResult) => T,
  ): Promise<ResolveResult & { settled?: T; appended: RunEvent[] }> {
    return this.withRetry(() =>
      this.store.transaction(async (tx) => {
        const { run, interrupt, resumeValue, events, expectedArtifactHash, surface } = await read(tx);
        if (run.tenantId !== caller.tenantId) throw notFound(run.runId);
        const decision = decide(interrupt, caller, resumeValue, this.isoNow());
        checkArtifact(interrupt, expectedArtifactHash);
        await onAccepted?.(tx, run);
        this.audited(tx, caller, surface ?? 'a2a', run, interrupt, resumeValue, decision, expectedArtifactHash);
        const result = await this.applyDecision(
          tx,
          run,
          interrupt,
          spread(decision, { events: [...events, ...decision.events] }),
        );
        const appended = tx.changes.filter((c) => c.run.runId === run.runId).flatMap((c) => c.events);
        return spread(result, settle ? { appended, settled: settle(tx, result) } : { appended });
      }),
    );
  }

  private async openInterrupt(tx: StoreTx, run: RunRecord, nodeId: string): Promise<InterruptRecord> {
    const open = await tx.interrupts.getOpen(run.runId, nodeId);
    if (open) return open;
    const latest = await tx.interrupts.getLatest(run.runId, nodeId);
    if (latest?.status === 'resolved') {
      throw new EngineError('interrupt_already_resolved', `the interrupt at node '${nodeId}' was already resolved`);
    }
    if (latest?.status === 'cancelled' && run.status !== 'cancelled' && run.status !== 'cancelling') {
      // Closed while its run went on: a join was satisfied without this branch, or a sibling failed.
      throw new EngineError(
        'interrupt_withdrawn',
        `the branch at node '${nodeId}' was withdrawn (its join was satisfied, or the run ended without it)`,
      );
    }
    if (latest?.status === 'cancelled' && run.parentRunId !== undefined && isTerminal(run.status)) {
      // OpenWOP's cascade-cancel profile: a child's interrupt its parent's end invalidated is gone (410).
      throw new EngineError('interrupt_gone', `the interrupt at node '${nodeId}' ended with its parent run`);
    }
    if (latest?.status === 'cancelled' || run.status === 'cancelled' || run.status === 'cancelling') {
      throw new EngineError('interrupt_cancelled', `the interrupt at node '${nodeId}' was cancelled with its run`);
    }
    throw new EngineError('interrupt_not_found', `run ${run.runId} has no open interrupt at node '${nodeId}'`);
  }

  private async applyDecision(
    tx: StoreTx,
    run: RunRecord,
    before: InterruptRecord,
    d: Decision,
  ): Promise<ResolveResult> {
    if (!(await tx.interrupts.update(d.interrupt, 'open', before))) {
      throw new EngineError(
        'interrupt_already_resolved',
        `the interrupt at node '${before.nodeId}' was already resolved`,
      );
    }
    if (d.kind !== 'resolve') {
      // A question or a vote at a branch's gate names the branch, as the gate's other events do.
      const line = lineAt(run.cursor, d.interrupt.nodeId);
      const { run: after } = await tx.commitRun(run, {}, line ? stamped(d.events, line) : d.events);
      return { run: after, interrupt: d.interrupt, outcome: d.kind === 'vote' ? 'vote-recorded' : 'ask-recorded' };
    }
    const def = definitionOf(this.workflows, run);
    const now = this.isoNow();
    const change = await commitResolution(tx, def, run, d, now);
    // The gate's successors run in the same transaction while they are instantaneous.
    const after = this.worker ? await driveInline(tx, def, change.run, this.inline) : change.run;
    return { run: after, interrupt: d.interrupt, outcome: 'resolved' };
  }

  private async readForUpdate(tx: StoreTx, caller: Caller, runId: string): Promise<RunRecord> {
    const run = await tx.getRun(runId, { forUpdate: true });
    if (!run || run.tenantId !== caller.tenantId) throw notFound(runId);
    return run;
  }

  private isoNow(): string {
    return iso(this.clock);
  }

  /** Optimistic-concurrency conflicts are retried on a fresh read; the loser of a real race
   * then sees the winner's state and reports the precise error (e.g. already resolved). */
  private async withRetry<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!(isConflict(err) && attempt < RETRIES)) throw isConflict(err) ? conflict() : err;
        // A short, growing, jittered pause lets the competing writer finish first.
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
    }
  }
}

function initialVars(def: WorkflowDefinition): Record<string, unknown> {
  const vars: Record<string, unknown> = {};
  for (const v of def.variables) if (v.defaultValue !== undefined) vars[v.name] = v.defaultValue;
  return vars;
}

/**
 * A deep copy of a run's inputs, as `structuredClone` makes it, fast for what inputs are (JSON:
 * plain objects, arrays, scalars, each object once); anything else (a Date, a Map, a shared or
 * circular reference, a `__proto__` key) is left to `structuredClone` itself, which costs over a
 * microsecond even for `{ prompt }`.
 */
export function copyInputs(inputs: Record<string, unknown>): Record<string, unknown> {
  const copy = copyJson(inputs, new Set(), 0);
  return copy === NOT_JSON ? structuredClone(inputs) : (copy as Record<string, unknown>);
}

const NOT_JSON = Symbol('not JSON');
const MAX_COPY_DEPTH = 64;

function copyJson(v: unknown, seen: Set<object>, depth: number): unknown {
  if (typeof v !== 'object' || v === null) return typeof v === 'function' || typeof v === 'symbol' ? NOT_JSON : v;
  if (depth > MAX_COPY_DEPTH || seen.has(v)) return NOT_JSON;
  seen.add(v);
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype || Object.keys(v).length !== v.length) return NOT_JSON;
    const out: unknown[] = [];
    for (const item of v) {
      const c = copyJson(item, seen, depth + 1);
      if (c === NOT_JSON) return NOT_JSON;
      out.push(c);
    }
    return out;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return NOT_JSON;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const c = k === '__proto__' ? NOT_JSON : copyJson((v as Record<string, unknown>)[k], seen, depth + 1);
    if (c === NOT_JSON) return NOT_JSON;
    out[k] = c;
  }
  return out;
}

/** Canonical JSON (sorted keys) so the same body always hashes the same. */
export function hashBody(body: unknown): string {
  return createHash('sha256').update(canonical(body)).digest('hex');
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

const notFound = (runId: string) => new EngineError('not_found', `run ${runId} not found`);
const conflict = () => new EngineError('conflict', 'the run kept changing; try again');

function isConflict(err: unknown): boolean {
  if (err instanceof ConflictError) return true;
  // A concurrent insert of the same idempotency key or event sequence: a unique violation.
  const code = (err as { code?: string })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}
