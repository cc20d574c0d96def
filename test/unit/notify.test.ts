// The notify settings of gates as the loader checks them, and decision-link tokens: 128 random
// bits and a signature, refused when altered, signed under another key, or malformed.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { validateWorkflow, WorkflowValidationError } from '../../src/engine/workflow/loader.js';
import { LinkSigner } from '../../src/notify/links.js';

const position = { x: 0, y: 0 };
const withGate = (typeId: string, config: Record<string, unknown>) => ({
  id: 'gated',
  name: 'gated',
  version: '1.0.0',
  nodes: [{ id: 'gate', typeId, name: 'Gate', position, config, inputs: {} }],
  edges: [],
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});
const approval = (extra: Record<string, unknown>) => withGate('core.approvalGate', { title: 'T', ...extra });
const clarification = (extra: Record<string, unknown>) =>
  withGate('core.clarificationGate', { questions: [{ id: 'q', question: 'Why?' }], ...extra });

const problemsOf = (def: unknown): string => {
  try {
    validateWorkflow(def, 'x.json');
    return '';
  } catch (err) {
    assert.ok(err instanceof WorkflowValidationError, String(err));
    return err.message;
  }
};

describe('gate notify config', () => {
  it('takes e-mail, webhook and Slack entries and remindBeforeMs on both gates', () => {
    const notify = [
      { channel: 'email', to: ['approvers', 'ops@example.com'], remindBeforeMs: 60_000 },
      { channel: 'webhook', url: 'https://hooks.example.com/x' },
      { channel: 'slack', url: 'https://hooks.slack.com/services/T/B/C' },
    ];
    assert.equal(
      problemsOf(approval({ approversList: ['alice'], timeoutMs: 3_600_000, remindBeforeMs: 600_000, notify })),
      '',
    );
    assert.equal(
      problemsOf(clarification({ timeoutMs: 1000, onTimeout: 'escalate', escalateTo: ['boss'], notify })),
      '',
    );
  });

  it('refuses what cannot be sent, naming the problem', () => {
    const cases: Array<[unknown, RegExp]> = [
      [approval({ notify: [{ channel: 'email', to: ['not an address'] }] }), /notify/],
      [approval({ notify: [{ channel: 'webhook', url: 'http://plain.example.com/' }] }), /notify/],
      [approval({ notify: [{ channel: 'pager', url: 'https://x.example.com/' }] }), /notify/],
      [approval({ notify: [] }), /notify/],
      [
        approval({ notify: [{ channel: 'email', to: ['approvers'] }] }),
        /"approvers", but the gate has no approversList/,
      ],
      [
        approval({ remindBeforeMs: 1000, notify: [{ channel: 'email', to: ['a@example.com'] }] }),
        /remindBeforeMs needs config.timeoutMs/,
      ],
      [approval({ timeoutMs: 5000, remindBeforeMs: 1000 }), /remindBeforeMs needs config.notify/],
    ];
    for (const [def, expected] of cases) assert.match(problemsOf(def), expected, JSON.stringify(def));
  });
});

describe('decision link tokens', () => {
  const signer = new LinkSigner(randomBytes(32));

  it('are 128 random bits and a signature; their hash is what the store keeps', () => {
    const { token, hash } = signer.mint();
    const [random, sig] = token.split('.') as [string, string];
    assert.equal(Buffer.from(random, 'base64url').length, 16);
    assert.equal(Buffer.from(sig, 'base64url').length, 32);
    assert.equal(signer.check(token), hash);
    assert.notEqual(hash, token);
    assert.notEqual(signer.mint().token, token);
  });

  it('are refused altered, signed under another key, or malformed', () => {
    const { token } = signer.mint();
    const [random, sig] = token.split('.') as [string, string];
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    const other = new LinkSigner(randomBytes(32)).mint().token;
    for (const bad of [
      `${flip(random)}.${sig}`,
      `${random}.${flip(sig)}`,
      other,
      '',
      'x.y',
      `${token}.x`,
      token.slice(1),
    ]) {
      assert.equal(signer.check(bad), undefined, bad);
    }
  });

  it('need a key of at least 32 bytes', () => {
    assert.throws(() => new LinkSigner(randomBytes(16)), /32 bytes/);
  });
});
