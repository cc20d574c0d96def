import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as Sdk from 'a2a-js-sdk-v03';
import type * as W from '../../src/a2a/v0_3/types.js';
import { buildA2ADiscoveryBlock, buildAgentCard, type AgentCardOptions } from '../../src/a2a/v0_3/card.js';

const opts: AgentCardOptions = {
  baseUrl: 'https://handoff.example.com/',
  name: 'Handoff',
  description: 'Durable workflow runs as A2A tasks',
  version: '0.1.0',
  skills: [
    { id: 'campaign-brief', name: 'Campaign brief', description: 'Drafts a brief and waits for approval' },
    { id: 'triage', name: 'Triage', description: 'Sorts things', tags: ['ops'], examples: ['triage this'] },
  ],
  streaming: true,
  pushNotifications: false,
  requireAuth: false,
};

test('A2A 0.3 card fields', () => {
  const card = buildAgentCard(opts);
  assert.equal(card.protocolVersion, '0.3.0');
  assert.equal(card.url, 'https://handoff.example.com/v1/a2a');
  assert.equal(card.preferredTransport, 'JSONRPC');
  assert.deepEqual(card.additionalInterfaces, [{ url: 'https://handoff.example.com/v1/a2a', transport: 'JSONRPC' }]);
  assert.deepEqual(card.capabilities, { streaming: true, pushNotifications: false, stateTransitionHistory: false });
  assert.deepEqual(card.defaultInputModes, ['text/plain', 'application/json']);
  assert.deepEqual(card.defaultOutputModes, ['application/json', 'text/plain']);
  assert.equal(card.name, 'Handoff');
  assert.equal(card.version, '0.1.0');
  assert.equal(card.description, opts.description);
});

test('skills: tags default to workflow, examples kept when given', () => {
  const [a, b] = buildAgentCard(opts).skills;
  assert.deepEqual(a, {
    id: 'campaign-brief',
    name: 'Campaign brief',
    description: 'Drafts a brief and waits for approval',
    tags: ['workflow'],
  });
  assert.deepEqual(b, {
    id: 'triage',
    name: 'Triage',
    description: 'Sorts things',
    tags: ['ops'],
    examples: ['triage this'],
  });
});

test('security schemes only when auth is required', () => {
  const anon = buildAgentCard(opts);
  assert.equal(anon.securitySchemes, undefined);
  assert.equal(anon.security, undefined);
  const authed = buildAgentCard({ ...opts, requireAuth: true });
  assert.deepEqual(authed.securitySchemes, { bearer: { type: 'http', scheme: 'bearer' } });
  assert.deepEqual(authed.security, [{ bearer: [] }]);
});

test('discovery block mirrors the card flags', () => {
  const block = buildA2ADiscoveryBlock(opts);
  assert.deepEqual(block, {
    supported: true,
    agentCardUrl: 'https://handoff.example.com/.well-known/agent-card.json?A2A-Version=1.0',
    durableTasks: true,
    streaming: true,
    pushNotifications: false,
    protocolVersions: ['1.0', '0.3'],
    preferredVersion: '1.0',
    profiles: ['a2a-1.0', 'a2a-0.3-legacy'],
  });
  const card = buildAgentCard(opts);
  assert.equal(card.capabilities.streaming, block.streaming);
  assert.equal(card.capabilities.pushNotifications, block.pushNotifications);
});

test('a base URL with a path prefix keeps it', () => {
  assert.equal(
    buildAgentCard({ ...opts, baseUrl: 'https://h.example.com/handoff' }).url,
    'https://h.example.com/handoff/v1/a2a',
  );
});

test('the card and wire types are assignable to the official SDK 0.3 types', () => {
  // Compile-time check: if our types drift from @a2a-js/sdk's, tsc fails on these lines.
  const sdkCard: Sdk.AgentCard = buildAgentCard({ ...opts, requireAuth: true });
  const ours = {} as {
    task: W.Task;
    msg: W.Message;
    su: W.TaskStatusUpdateEvent;
    au: W.TaskArtifactUpdateEvent;
    push: W.TaskPushNotificationConfig;
  };
  const toSdk: {
    task: Sdk.Task;
    msg: Sdk.Message;
    su: Sdk.TaskStatusUpdateEvent;
    au: Sdk.TaskArtifactUpdateEvent;
    push: Sdk.TaskPushNotificationConfig;
  } = ours;
  // What the SDK client sends must fit what we accept.
  const fromSdk = {} as Sdk.MessageSendParams;
  const accepted: W.MessageSendParams = fromSdk;
  assert.equal(sdkCard.protocolVersion, '0.3.0');
  assert.ok(toSdk && accepted);
});
