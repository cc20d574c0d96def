// A new run record for tests that write runs straight to the store (no engine, no workflow).
import { randomUUID } from 'node:crypto';
import type { NewRun } from '../../src/store/store.js';

/** A pending run of workflow `wf` for tenant-a/alice, created now; `over` sets any field. */
export function newRun(over: Partial<NewRun> = {}): NewRun {
  return {
    runId: `run_${randomUUID()}`,
    tenantId: 'tenant-a',
    principalId: 'alice',
    workflowId: 'wf',
    status: 'pending',
    inputs: {},
    state: { outputs: {}, vars: {} },
    cursor: { nodeId: 'start', ordinals: {} },
    tags: [],
    metadata: {},
    createdAt: new Date().toISOString(),
    ...over,
  };
}
