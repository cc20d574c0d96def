// What the loader refuses in http.request and llm.chat configs (secrets by reference above all),
// and what a call node does without the host's services. No I/O: nothing here calls out.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NODE_TYPES } from '../../src/engine/nodes/index.js';
import { validateWorkflow, WorkflowValidationError } from '../../src/engine/workflow/loader.js';
import { renderWithSecrets } from '../../src/engine/workflow/secret-refs.js';
import type { WorkflowNode } from '../../src/engine/workflow/definition.js';
import { node } from '../support/call-workflows.js';

const wf = (...nodes: object[]) => ({
  id: 'w',
  name: 'w',
  version: '1',
  nodes,
  edges: [],
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});
const secrets = { has: (name: string) => name === 'TOKEN' };
const get = { url: 'https://api.example.com/x', method: 'GET' };

function problems(def: unknown): string[] {
  try {
    validateWorkflow(def, 'w.json', { secrets });
    return [];
  } catch (err) {
    assert.ok(err instanceof WorkflowValidationError, String(err));
    return err.problems;
  }
}

describe('secrets by reference, at load', () => {
  it('are accepted in http.request headers and query values and the llm.chat apiKey', () => {
    const def = wf(
      node('h', 'http.request', {
        ...get,
        headers: { authorization: 'Bearer {{ secrets.TOKEN }}' },
        query: { key: '{{ secrets.TOKEN }}', many: ['a', '{{ secrets.TOKEN }}'] },
      }),
      node('l', 'llm.chat', {
        baseUrl: 'https://m.example.com/v1',
        apiKey: '{{ secrets.TOKEN }}',
        model: 'm',
        prompt: 'p',
      }),
    );
    assert.deepEqual(problems(def), []);
  });

  it('an unknown secret fails the load, naming it', () => {
    const def = wf(node('h', 'http.request', { ...get, headers: { authorization: '{{ secrets.NOPE }}' } }));
    assert.deepEqual(problems(def), [
      'node "h": config.headers.authorization: secret NOPE is not defined (HANDOFF_SECRET_NOPE or HANDOFF_SECRETS_FILE)',
    ]);
  });

  it('anywhere else (url, body, a prompt, another node type) is refused', () => {
    const def = wf(
      node('u', 'http.request', { method: 'GET', url: 'https://x.example/?k={{ secrets.TOKEN }}' }),
      node('b', 'http.request', { ...get, method: 'POST', json: { k: '{{ secrets.TOKEN }}' } }),
      node('p', 'llm.chat', { provider: 'x', prompt: 'say {{ secrets.TOKEN }}' }),
      node('t', 'core.transform', { output: '{{ secrets.TOKEN }}' }),
    );
    const where = '(only in request headers, query parameters and an API key)';
    assert.deepEqual(problems(def), [
      `node "u": config.url: a secret may not be used here ${where}`,
      `node "b": config.json.k: a secret may not be used here ${where}`,
      `node "p": config.prompt: a secret may not be used here ${where}`,
      `node "t": config.output: a secret may not be used here ${where}`,
    ]);
  });

  it('only as {{ secrets.NAME }}: an expression reading a secret is refused', () => {
    const def = wf(node('h', 'http.request', { ...get, headers: { a: '{{ $lowercase(secrets.TOKEN) }}' } }));
    assert.deepEqual(problems(def), [
      'node "h": config.headers.a: a secret is referenced only as {{ secrets.NAME }}, got {{ $lowercase(secrets.TOKEN) }}',
    ]);
  });

  it('renderWithSecrets fills the references and renders the rest of the template', async () => {
    const scope = { inputs: { id: 7 }, vars: {}, nodes: {}, carry: {}, run: { runId: 'r', workflowId: 'w' } };
    const out = await renderWithSecrets(
      {
        authorization: 'Bearer {{ secrets.TOKEN }}',
        id: '{{ inputs.id }}',
        both: '{{ inputs.id }}:{{ secrets.TOKEN }}',
      },
      scope,
      { get: () => 'v@lue' },
    );
    assert.deepEqual(out, { authorization: 'Bearer v@lue', id: 7, both: '7:v@lue' });
  });
});

describe('call node configs, at load', () => {
  it('llm.chat: one of messages / prompt, one of provider / baseUrl, a key only as a secret', () => {
    const def = wf(
      node('a', 'llm.chat', { provider: 'p', baseUrl: 'https://m.example/v1', model: 'm', prompt: 'x', messages: [] }),
      node('b', 'llm.chat', { baseUrl: 'https://m.example/v1', apiKey: 'sk-literal', prompt: 'x' }),
    );
    assert.deepEqual(problems(def), [
      'node "a": config.messages must NOT have fewer than 1 items',
      'node "b": config.apiKey must be a secret reference, {{ secrets.NAME }}',
      'node "b": config.model is required with baseUrl',
    ]);
  });

  it('http.request: json or body, not both; literal numbers checked, templates left to run time', () => {
    const def = wf(
      node('a', 'http.request', { ...get, method: 'POST', json: {}, body: 'x' }),
      node('b', 'http.request', { ...get, timeoutMs: 0 }),
      node('c', 'http.request', { ...get, timeoutMs: '{{ inputs.t }}', retry: { attempts: 2, backoffMs: 5 } }),
    );
    const found = problems(def);
    assert.ok(found.includes('node "a": config: give json or body, not both'), found.join('\n'));
    assert.ok(
      found.some((p) => p.startsWith('node "b": config.timeoutMs')),
      found.join('\n'),
    );
    assert.ok(!found.some((p) => p.startsWith('node "c"')), found.join('\n'));
  });
});

describe('a call node without the host services', () => {
  it('fails clearly instead of calling out', async () => {
    const type = NODE_TYPES.get('http.request')!;
    const n = node('h', 'http.request', get) as unknown as WorkflowNode;
    const scope = { inputs: {}, vars: {}, nodes: {}, carry: {}, run: { runId: 'r', workflowId: 'w' } };
    const result = await type.execute({
      runId: 'r',
      workflowId: 'w',
      node: n,
      config: n.config,
      ordinal: 0,
      scope,
      now: Date.now(),
      idempotencyKey: 'r:h:0',
    });
    assert.deepEqual(result, {
      kind: 'failed',
      error: {
        code: 'no_call_services',
        message: "http.request needs the host's outbound-call services, and this engine has none",
      },
    });
  });
});
