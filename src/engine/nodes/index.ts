// The node types this host executes, by typeId.
import { delay } from './delay.js';
import { fail } from './fail.js';
import { approvalGate, clarificationGate } from './gates.js';
import { transform } from './transform.js';
import type { NodeExecutor } from './types.js';

export const EXECUTORS: ReadonlyMap<string, NodeExecutor> = new Map(
  [transform, delay, approvalGate, clarificationGate, fail].map((e) => [e.typeId, e]),
);
