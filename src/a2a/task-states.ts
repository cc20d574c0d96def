// The RFC 0100 A2ATaskState records as the host API reads them (GET /v1/a2a/tasks, /{taskId},
// and the conformance seams): the persisted record of a task, with its default push config, and
// a tenant's records page by page, bounded by the bytes of their JSON (HANDOFF_LIST_MAX_BYTES).
import { BytePage } from '../byte-page.js';
import { taskListCursor } from '../store/repos/task-records.js';
import type { Store } from '../store/store.js';
import type { A2ATaskState } from './model.js';
import { toTaskState } from './projection.js';

export interface TaskStatePage {
  tasks: A2ATaskState[];
  nextCursor?: string;
}

export class TaskStates {
  constructor(
    private readonly store: Store,
    private readonly listMaxBytes: number,
  ) {}

  /** The record of a task of the tenant, with its default push config (id == task id, else the
   * first); undefined when the tenant has no such task. */
  async get(tenantId: string, taskId: string): Promise<A2ATaskState | undefined> {
    const rec = await this.store.tasks.get(taskId, tenantId);
    if (!rec) return undefined;
    const configs = await this.store.pushConfigs.list(taskId);
    const main = configs.find((c) => c.configId === taskId) ?? configs[0];
    const fingerprint = main?.tokenFingerprint ? { tokenFingerprint: main.tokenFingerprint } : {};
    return toTaskState(rec, main && { url: main.url, ...fingerprint });
  }

  /** The tenant's records, most recently changed first. A page ends early, before its records
   * would pass the byte bound (a caller's contextId may be a megabyte); the first always fits.
   * A malformed cursor is a RangeError. */
  async list(
    tenantId: string,
    query: { limit?: number; cursor?: string; state?: string; contextId?: string },
  ): Promise<TaskStatePage> {
    const page = await this.store.tasks.list(tenantId, { ...query, limit: query.limit ?? 50 });
    const shown = new BytePage(this.listMaxBytes);
    const tasks: A2ATaskState[] = [];
    for (const rec of page.tasks) {
      const state = toTaskState(rec);
      if (!shown.add(JSON.stringify(state))) break;
      tasks.push(state);
    }
    const last = page.tasks[tasks.length - 1];
    const more = page.nextCursor !== undefined || tasks.length < page.tasks.length;
    return more && last ? { tasks, nextCursor: taskListCursor(last) } : { tasks };
  }
}
