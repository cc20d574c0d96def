// core.forEach and core.subWorkflow: start other workflows as child runs and wait for them durably.
//
// A child run is an ordinary run (and A2A task) of the parent's tenant and principal, whose
// snapshot names its parent (parentRunId, parentNodeId). Neither node is inline: the worker
// executes it outside any transaction (src/engine/step.ts), and each execution
//   1. reads the children it saw unfinished last time (their ids are in its node state);
//   2. starts the next items while fewer than `concurrency` are unfinished, through the engine's
//      own start path (ChildRunService, one transaction per batch). A child's id is derived from
//      `runId:nodeId:ordinal:index`, so an execution repeated after a crash finds the children the
//      first one started instead of starting them again;
//   3. completes once every child has ended (the results in item order), fails `child_failed` at
//      the first child that failed or was cancelled (unless `continueOnError`), or sleeps: a
//      child's end wakes the parent at once (src/engine/children.ts), the timer is only the floor.
import type { NewEvent } from '../../../store/model.js';
import { isTerminal } from '../../../store/model.js';
import { EngineError } from '../../errors.js';
import { childRunId } from '../../ids.js';
import type { WorkflowDefinition } from '../../workflow/definition.js';
import { renderTemplate } from '../../workflow/evaluate.js';
import { type EvalScope, type NodeContext, type NodeResult, type NodeType, SCHEMA_DIALECT } from '../types.js';
import type { ChildRunService, ChildRunSpec, ChildView } from './service.js';

/** The most items one core.forEach takes. */
export const MAX_ITEMS = 1_000;
/** The most children one core.forEach keeps unfinished at once. */
export const MAX_CONCURRENCY = 64;
const DEFAULT_CONCURRENCY = 4;

/** The node types that start child runs (the loader checks the workflows they name). */
export const CHILD_RUN_TYPES: ReadonlySet<string> = new Set(['core.forEach', 'core.subWorkflow']);

/** Whether runs of `def` may have children. */
export const startsChildren = (def: WorkflowDefinition | undefined): boolean =>
  def?.nodes.some((n) => CHILD_RUN_TYPES.has(n.typeId)) === true;

interface ForEachConfig {
  /** A template giving an array (or an array). */
  items: string | unknown[];
  workflowId: string;
  /** The child's inputs: templates that may use `item` and `index` besides the run's scope. */
  inputs?: Record<string, unknown> | string;
  concurrency?: number;
  continueOnError?: boolean;
}

interface SubWorkflowConfig {
  workflowId: string;
  inputs?: Record<string, unknown> | string;
  continueOnError?: boolean;
}

/** What an execution records for the next one (the run's cursor.nodeState). */
interface ChildrenState {
  /** Items whose child was started: always the first `started` ones. */
  started: number;
  /** The items whose child was unfinished when last read. */
  open: number[];
}

/** The children one execution of a node stands for. */
interface Fan {
  count: number;
  workflowId: string;
  concurrency: number;
  continueOnError: boolean;
  /** The inputs of item `index`'s child (rendered: templates see the run's scope, `item`, `index`). */
  inputsOf(index: number): Promise<unknown>;
}

const WORKFLOW_ID = { type: 'string', pattern: '^[a-z][a-z0-9_-]*$', maxLength: 128 };
const INPUTS = { type: ['object', 'string'], minLength: 1 };

export const forEach: NodeType<ForEachConfig> = {
  typeId: 'core.forEach',
  inline: false,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['items', 'workflowId'],
    properties: {
      items: { type: ['string', 'array'], minLength: 1 },
      workflowId: WORKFLOW_ID,
      inputs: INPUTS,
      concurrency: { type: 'integer', minimum: 1, maximum: MAX_CONCURRENCY },
      continueOnError: { type: 'boolean' },
    },
    additionalProperties: false,
  },
  async execute(ctx) {
    const items = await renderTemplate(ctx.config.items, ctx.scope);
    if (!Array.isArray(items)) {
      return failed('invalid_items', `config.items must give an array, got ${kindOf(items)}`);
    }
    if (items.length > MAX_ITEMS) {
      return failed(
        'too_many_items',
        `config.items gave ${items.length} items; core.forEach takes at most ${MAX_ITEMS}`,
        {
          count: items.length,
          max: MAX_ITEMS,
        },
      );
    }
    const fan: Fan = {
      count: items.length,
      workflowId: ctx.config.workflowId,
      concurrency: ctx.config.concurrency ?? DEFAULT_CONCURRENCY,
      continueOnError: ctx.config.continueOnError === true,
      inputsOf: (index) => renderTemplate(ctx.config.inputs ?? {}, itemScope(ctx.scope, items[index], index)),
    };
    const out = await drive(ctx, fan);
    return out.kind === 'done' ? { kind: 'completed', output: { results: out.results }, events: out.events } : out;
  },
};

export const subWorkflow: NodeType<SubWorkflowConfig> = {
  typeId: 'core.subWorkflow',
  inline: false,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['workflowId'],
    properties: { workflowId: WORKFLOW_ID, inputs: INPUTS, continueOnError: { type: 'boolean' } },
    additionalProperties: false,
  },
  async execute(ctx) {
    const fan: Fan = {
      count: 1,
      workflowId: ctx.config.workflowId,
      concurrency: 1,
      continueOnError: ctx.config.continueOnError === true,
      inputsOf: () => renderTemplate(ctx.config.inputs ?? {}, ctx.scope),
    };
    const out = await drive(ctx, fan);
    return out.kind === 'done' ? { kind: 'completed', output: out.results[0], events: out.events } : out;
  },
};

/** An item's child's result in the node's output. */
interface ChildResult {
  runId: string;
  status: string;
  output: unknown;
  error?: ChildView['error'];
}

type Driven = NodeResult | { kind: 'done'; results: ChildResult[]; events: NewEvent[] };

/** One execution: read the unfinished children, start what fits, then complete, fail or sleep. */
async function drive(ctx: NodeContext<ForEachConfig | SubWorkflowConfig>, fan: Fan): Promise<Driven> {
  const children = ctx.services?.children;
  if (!children) {
    return failed('no_child_services', 'this host lends no child-run service (child runs start only in a worker)');
  }
  const prior = ctx.state as ChildrenState | undefined;
  let started = prior?.started ?? 0;
  const open = [...(prior?.open ?? [])];
  const events: NewEvent[] = [];
  const idOf = (index: number) => childRunId(`${ctx.idempotencyKey}:${index}`);
  /** Note that item `index`'s child ended; a failure that fails the node. */
  const ended = (index: number, child: ChildView): NodeResult | undefined => {
    events.push({
      type: 'child.ended',
      nodeId: ctx.node.id,
      payload: { index, runId: child.runId, status: child.status },
    });
    return child.status === 'completed' || fan.continueOnError ? undefined : childFailed(index, child, events);
  };

  if (open.length > 0) {
    const now = await children.read(open.map(idOf));
    for (const index of [...open]) {
      const child = now.get(idOf(index)) ?? missing(idOf(index));
      if (!isTerminal(child.status)) continue;
      open.splice(open.indexOf(index), 1);
      const failure = ended(index, child);
      if (failure) return failure;
    }
  }

  while (started < fan.count && open.length < fan.concurrency) {
    const batch = range(started, Math.min(fan.count, started + fan.concurrency - open.length));
    const specs: ChildRunSpec[] = [];
    for (const index of batch) {
      const inputs = await fan.inputsOf(index);
      if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
        return failed(
          'invalid_child_inputs',
          `config.inputs must give an object, got ${kindOf(inputs)} for item ${index}`,
        );
      }
      specs.push({ runId: idOf(index), workflowId: fan.workflowId, inputs: inputs as Record<string, unknown> });
    }
    const views = await startOrRefuse(children, { runId: ctx.runId, nodeId: ctx.node.id }, specs);
    if (!Array.isArray(views)) return views;
    for (const [k, child] of views.entries()) {
      const index = batch[k] as number;
      events.push({
        type: 'child.started',
        nodeId: ctx.node.id,
        payload: { index, runId: child.runId, workflowId: fan.workflowId },
      });
      if (!isTerminal(child.status)) open.push(index);
      else {
        const failure = ended(index, child);
        if (failure) return failure;
      }
    }
    started += batch.length;
  }

  if (started < fan.count || open.length > 0) {
    const state: ChildrenState = { started, open };
    return { kind: 'sleep', wakeAt: ctx.now + children.pollMs, state: { ...state }, events };
  }
  const all = await children.read(range(0, fan.count).map(idOf));
  const results = range(0, fan.count).map((index) => resultOf(all.get(idOf(index)) ?? missing(idOf(index))));
  return { kind: 'done', results, events };
}

/** Start a batch; the engine's refusals become the node's failure. */
async function startOrRefuse(
  children: ChildRunService,
  parent: { runId: string; nodeId: string },
  specs: ChildRunSpec[],
): Promise<ChildView[] | NodeResult> {
  try {
    return await children.start(parent, specs);
  } catch (err) {
    if (!(err instanceof EngineError) || err.code === 'conflict') throw err;
    const code = err.code === 'validation_error' ? 'invalid_child_inputs' : err.code;
    return failed(code, `starting a child run of workflow '${specs[0]?.workflowId}': ${err.message}`, err.details);
  }
}

function childFailed(index: number, child: ChildView, events: NewEvent[]): NodeResult {
  const why = child.error ? `: ${child.error.code}: ${child.error.message}` : '';
  return {
    kind: 'failed',
    error: {
      code: 'child_failed',
      message: `child run ${child.runId} (item ${index}) ended ${child.status}${why}`,
      details: { index, runId: child.runId, status: child.status, ...(child.error ? { error: child.error } : {}) },
    },
    events,
  };
}

function resultOf(child: ChildView): ChildResult {
  const r: ChildResult = { runId: child.runId, status: child.status, output: child.output ?? null };
  if (child.error) r.error = child.error;
  return r;
}

/** A child that should exist and does not (purged by hand): reported as failed. */
const missing = (runId: string): ChildView => ({
  runId,
  status: 'failed',
  output: null,
  error: { code: 'child_missing', message: `child run ${runId} no longer exists` },
});

const failed = (code: string, message: string, details?: Record<string, unknown>): NodeResult => ({
  kind: 'failed',
  error: details ? { code, message, details } : { code, message },
});

/** The scope a forEach child's inputs are rendered in: the run's, with the item and its index. */
const itemScope = (scope: EvalScope, item: unknown, index: number): EvalScope =>
  ({ ...scope, item, index }) as EvalScope;

const range = (from: number, to: number): number[] =>
  Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  return Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}
