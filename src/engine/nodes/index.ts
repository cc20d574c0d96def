// The node types this host executes, by typeId. Adding a node type: its file, and a line here.
import { a2aInvoke } from './a2a-invoke/index.js';
import { forEach, subWorkflow } from './child-runs/index.js';
import { delay } from './delay.js';
import { externalEvent } from './external-event.js';
import { fail } from './fail.js';
import { approvalGate, clarificationGate } from './gates.js';
import { httpRequest } from './http-request.js';
import { llmChatNode } from './llm-chat.js';
import { noop } from './noop.js';
import { join, parallel } from './parallel.js';
import { transform } from './transform.js';
import type { NodeType } from './types.js';

// Each type checks its own config, so the map erases the config type parameter.
const ALL: NodeType<any>[] = [
  transform,
  noop,
  delay,
  approvalGate,
  clarificationGate,
  fail,
  externalEvent,
  httpRequest,
  llmChatNode,
  a2aInvoke,
  parallel,
  join,
  forEach,
  subWorkflow,
];

export const NODE_TYPES: ReadonlyMap<string, NodeType<any>> = new Map(ALL.map((t) => [t.typeId, t]));
