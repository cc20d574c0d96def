// Leg 2, A2ATaskState + a2a capability shape (always on, server-free): the five checks of the
// OpenWOP suite (docs/protocol/openwop.md#conformance-legs, leg 3, a–e) against the published schemas this package
// ships. It proves the schema copies the other legs validate the host with are the RFC's.
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { type LegRun, type SuiteContext, isObject } from './context.js';
import { A2A_BLOCK_SCHEMA, TASK_STATE_SCHEMA } from './schemas.js';
import type { Evidence } from './types.js';

const CONFORMING = {
  taskId: 'run_x',
  runId: 'run_x',
  contextId: 'ctx_42',
  state: 'input-required',
  interruptKind: 'approval',
  updatedAt: '2026-06-13T19:00:00Z',
};

export async function taskStateShapeLeg(ctx: SuiteContext, leg: LegRun): Promise<void> {
  const s = ctx.schemas;
  leg.require(s !== undefined, 'the published schemas load and compile', { note: ctx.schemasError });
  leg.note(`schemas from ${s.dir}`);

  const verdict = (validate: ValidateFunction, value: unknown, want: boolean, name: string, schema: string) =>
    leg.expect(
      (validate(value) as boolean) === want,
      name,
      (): Evidence => ({
        field: schema,
        expected: want ? 'validates' : 'is rejected',
        actual: want
          ? `rejected: ${(validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')}`
          : 'validates',
        note: `value: ${JSON.stringify(value)}`,
      }),
    );

  // a. the RFC's own example record validates
  verdict(s.taskState, CONFORMING, true, 'a. a conforming input-required record validates', TASK_STATE_SCHEMA);
  // b. the state vocabulary is the stored lowercase-hyphen one
  verdict(s.taskState, { ...CONFORMING, state: 'WORKING' }, false, "b. state 'WORKING' is rejected", TASK_STATE_SCHEMA);
  // c. the record is closed: no inline inputs (nor outputs, artifacts, credentials)
  verdict(
    s.taskState,
    { ...CONFORMING, inputs: { secret: 'x' } },
    false,
    'c. an extra `inputs` property is rejected (closed record)',
    TASK_STATE_SCHEMA,
  );
  // d. PushConfig, compiled from $defs through the schema's $id
  const pc = `${TASK_STATE_SCHEMA}#/$defs/PushConfig`;
  verdict(s.pushConfig, { tokenFingerprint: 'a1b2' }, false, 'd. PushConfig without url is rejected', pc);
  verdict(
    s.pushConfig,
    { url: 'https://caller.example.com/push', tokenFingerprint: 'x'.repeat(33) },
    false,
    'd. PushConfig with a 33-char tokenFingerprint is rejected',
    pc,
  );
  verdict(
    s.pushConfig,
    { url: 'https://caller.example.com/push', tokenFingerprint: 'a1b2c3d4' },
    true,
    'd. PushConfig {url, tokenFingerprint} validates',
    pc,
  );
  // e. the a2a capability block: required fields, closed, and the two verdicts
  const schema = s.a2aBlockSchema;
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
  leg.expect(
    ['supported', 'agentCardUrl'].every((k) => required.includes(k)),
    'e. the a2a block requires supported and agentCardUrl',
    {
      field: `${A2A_BLOCK_SCHEMA} required`,
      expected: ['supported', 'agentCardUrl'],
      actual: schema.required,
    },
  );
  leg.expect(schema.additionalProperties === false, 'e. the a2a block is closed (additionalProperties: false)', {
    field: `${A2A_BLOCK_SCHEMA} additionalProperties`,
    expected: false,
    actual: schema.additionalProperties,
  });
  leg.expect(
    isObject(schema.properties) &&
      ['streaming', 'pushNotifications', 'durableTasks'].every((k) => k in (schema.properties as object)),
    'e. the a2a block declares streaming, pushNotifications, durableTasks',
    {
      field: `${A2A_BLOCK_SCHEMA} properties`,
      expected: ['supported', 'agentCardUrl', 'streaming', 'pushNotifications', 'durableTasks'],
      actual: isObject(schema.properties) ? Object.keys(schema.properties) : schema.properties,
    },
  );
  verdict(
    s.a2aBlock,
    { supported: true, agentCardUrl: 'https://example.com/.well-known/agent-card.json', durableTasks: true },
    true,
    'e. {supported, agentCardUrl, durableTasks} validates',
    A2A_BLOCK_SCHEMA,
  );
  verdict(
    s.a2aBlock,
    { supported: true },
    false,
    'e. {supported: true} without agentCardUrl is rejected',
    A2A_BLOCK_SCHEMA,
  );
}
