// Workflows for the call-node tests, written to a temp directory: `call` (one http.request whose
// request comes from the run's inputs, with a secret in a header, branching on the status),
// `chat` (one llm.chat whose endpoint, key and prompt come from inputs and a secret), and `leak` /
// `leak_chat` (a secret in a query parameter, a header and a model key, for the redaction tests).
//
//   const dir = writeCallWorkflows();            // then startTestHost({ workflows: [dir], env: … })
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const node = (
  id: string,
  typeId: string,
  config: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) => ({
  id,
  typeId,
  name: id,
  position: { x: 0, y: 0 },
  config,
  inputs: {},
  ...extra,
});

/**
 * A workflow of `nodes` and edges `[from, to, expression?]` (ids e0, e1, …; an expression makes the
 * edge conditional), with the definition's other fields empty.
 */
export const workflowOf = (id: string, nodes: object[], edges: Array<[string, string, string?]>) => ({
  id,
  name: id,
  version: '1',
  nodes,
  edges: edges.map(([from, to, expression], i) => ({
    id: `e${i}`,
    sourceNodeId: from,
    targetNodeId: to,
    ...(expression ? { condition: { type: 'expression', expression } } : {}),
  })),
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});

const workflow = (id: string, inputSchema: object, nodes: object[], edges: object[]) => ({
  id,
  name: id,
  version: '1',
  inputSchema,
  nodes,
  edges,
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});

/**
 * The secrets the workflows send: API_TOKEN (`call`, `chat`) and ODD (`leak`, `leak_chat`), whose
 * characters change under percent-, form-, JSON- and base64-encoding: `~ + / = " \` and spaces.
 */
export const SECRET_ENV = {
  HANDOFF_SECRET_API_TOKEN: 's3cr3t-Tok3n-value-0042',
  HANDOFF_SECRET_ODD: 'k3y~with+plus/slash=eq and "spaces"\\/~+==',
};
export const SECRET_VALUE = SECRET_ENV.HANDOFF_SECRET_API_TOKEN;
export const ODD_SECRET = SECRET_ENV.HANDOFF_SECRET_ODD;

const CALL_WORKFLOW = workflow(
  'call',
  {
    type: 'object',
    required: ['url'],
    properties: {
      url: { type: 'string' },
      method: { type: 'string', default: 'POST' },
      timeoutMs: { type: 'integer', default: 10000 },
      responseLimitBytes: { type: 'integer', default: 1048576 },
      followRedirects: { type: ['boolean', 'integer'], default: false },
    },
  },
  [
    node('fetch', 'http.request', {
      method: '{{ inputs.method }}',
      url: '{{ inputs.url }}',
      headers: { authorization: 'Bearer {{ secrets.API_TOKEN }}' },
      query: { source: 'handoff' },
      json: { hello: '{{ inputs.url }}' },
      timeoutMs: '{{ inputs.timeoutMs }}',
      responseLimitBytes: '{{ inputs.responseLimitBytes }}',
      followRedirects: '{{ inputs.followRedirects }}',
      responseHeaders: ['x-echo'],
      retry: { attempts: 3, backoffMs: 10, maxBackoffMs: 5000 },
    }),
    node('created', 'core.transform', { output: { branch: 'created' } }),
    node('other', 'core.transform', { output: { branch: 'other' } }),
  ],
  [
    {
      id: 'to-created',
      sourceNodeId: 'fetch',
      targetNodeId: 'created',
      condition: { type: 'expression', expression: 'nodes.fetch.status = 201' },
    },
    { id: 'to-other', sourceNodeId: 'fetch', targetNodeId: 'other' },
  ],
);

const CHAT_WORKFLOW = workflow(
  'chat',
  {
    type: 'object',
    required: ['baseUrl', 'prompt'],
    properties: { baseUrl: { type: 'string' }, prompt: { type: 'string' } },
  },
  [
    node('draft', 'llm.chat', {
      baseUrl: '{{ inputs.baseUrl }}',
      apiKey: '{{ secrets.API_TOKEN }}',
      model: 'gpt-test',
      system: 'You summarise.',
      prompt: 'Summarise this request:\n{{ inputs.prompt }}',
      retry: { attempts: 2, backoffMs: 10 },
    }),
  ],
  [],
);

/** One GET whose query parameter and Authorization header hold the secret ODD; no retry. */
const LEAK_WORKFLOW = workflow(
  'leak',
  { type: 'object', required: ['url'], properties: { url: { type: 'string' } } },
  [
    node('fetch', 'http.request', {
      method: 'GET',
      url: '{{ inputs.url }}',
      headers: { authorization: 'Bearer {{ secrets.ODD }}' },
      query: { key: '{{ secrets.ODD }}', plain: 'visible' },
      responseHeaders: ['x-echo'],
      retry: { attempts: 1 },
    }),
  ],
  [],
);

/** One llm.chat whose key is the secret ODD; no retry. */
const LEAK_CHAT_WORKFLOW = workflow(
  'leak_chat',
  { type: 'object', required: ['baseUrl'], properties: { baseUrl: { type: 'string' } } },
  [
    node('draft', 'llm.chat', {
      baseUrl: '{{ inputs.baseUrl }}',
      apiKey: '{{ secrets.ODD }}',
      model: 'gpt-test',
      prompt: 'x',
      retry: { attempts: 1 },
    }),
  ],
  [],
);

/** A fresh directory holding call.json, chat.json, leak.json and leak_chat.json. */
export function writeCallWorkflows(): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-call-wf-'));
  for (const wf of [CALL_WORKFLOW, CHAT_WORKFLOW, LEAK_WORKFLOW, LEAK_CHAT_WORKFLOW]) {
    writeFileSync(join(dir, `${wf.id}.json`), JSON.stringify(wf));
  }
  return dir;
}
