// The tutorial of docs/workflows.md works as written: each workflow file it shows, loaded by a host
// as the reader's would be, does what the text after it says (the same inputs, the same results).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT, startTestHost, type TestHost } from '../support/host.js';

const doc = readFileSync(join(REPO_ROOT, 'docs/workflows.md'), 'utf8');
const tutorial = doc.slice(doc.indexOf('<a id="tutorial"></a>'), doc.indexOf('<a id="where"></a>'));
/** The workflow files the tutorial shows, in order. */
const files = [...tutorial.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => JSON.parse(m[1] as string));

/** A host loading one version of the reader's `my-workflows/greeting.json`. */
async function withGreeting(file: unknown, fn: (t: TestHost) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-tutorial-'));
  writeFileSync(join(dir, 'greeting.json'), JSON.stringify(file, null, 2));
  const t = await startTestHost({ workflows: [dir] });
  try {
    await fn(t);
  } finally {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const artifactOf = async (t: TestHost, runId: string) =>
  (await t.events(runId))
    .filter((e) => e.type === 'artifact.created')
    .map((e) => [e.nodeId ?? e.payload.artifactId, e.payload.data]);

describe('docs/workflows.md, the tutorial', () => {
  it('shows three versions of greeting.json', () => {
    assert.deepEqual(
      files.map((f) => f.id),
      ['greeting', 'greeting', 'greeting'],
    );
  });

  it('1. one node: completes at once with {"text": "Hello, Ada!"}', async () => {
    await withGreeting(files[0], async (t) => {
      const runId = await t.createRun('greeting', { name: 'Ada' });
      await t.waitForStatus(runId, ['completed']);
      assert.deepEqual(await artifactOf(t, runId), [['draft', { text: 'Hello, Ada!' }]]);
    });
  });

  it('3. ask a person: waits at review, an edit-accept is the result; a run without a name is refused', async () => {
    await withGreeting(files[1], async (t) => {
      const refused = await t.post('/v1/runs', { workflowId: 'greeting', inputs: {} });
      assert.equal(refused.status, 400);
      assert.match(refused.body.message, /inputs must have required property 'name'/);
      const runId = await t.createRun('greeting', { name: 'Bob' });
      const waiting = await t.waitForStatus(runId, ['waiting-approval']);
      assert.equal(waiting.interrupt.nodeId, 'review');
      const decided = await t.post(`/v1/runs/${runId}/interrupts/review`, {
        resumeValue: { action: 'edit-accept', editedArtifactData: { text: 'Hi Bob, welcome!' } },
      });
      assert.equal(decided.status, 200, decided.text);
      await t.waitForStatus(runId, ['completed']);
      assert.deepEqual(await artifactOf(t, runId), [['sent', { text: 'Hi Bob, welcome!', approvedBy: 'local' }]]);
    });
  });

  it('4. choose a path: a trusted name completes at once, any other waits for review', async () => {
    await withGreeting(files[2], async (t) => {
      const trusted = await t.createRun('greeting', { name: 'team', trusted: true });
      await t.waitForStatus(trusted, ['completed']);
      assert.deepEqual(await artifactOf(t, trusted), [
        ['sent', { text: 'Hello, team!', approvedBy: 'nobody: trusted' }],
      ]);
      const other = await t.createRun('greeting', { name: 'Bob' });
      await t.waitForStatus(other, ['waiting-approval']);
      await t.post(`/v1/runs/${other}/interrupts/review`, { resumeValue: { action: 'accept' } });
      await t.waitForStatus(other, ['completed']);
      assert.deepEqual(await artifactOf(t, other), [['sent', { text: 'Hello, Bob!', approvedBy: 'local' }]]);
    });
  });
});
