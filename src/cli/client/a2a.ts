// The A2A operations of the client commands, in the version the agent is spoken to: 0.3 JSON-RPC,
// or 1.0 JSON-RPC (`A2A-Version: 1.0`, the 1.0 method names and shapes). Every answer comes back
// twice: `wire`, what the agent sent (what --json prints), and `view`, the same in the 0.3 form the
// text output and the exit codes read. The 1.0 ↔ 0.3 conversion goes through the neutral model
// with Handoff's own codecs (src/a2a/codec/), the ones its server answers with.
//
//   const a2a = new A2AClient('1.0', new JsonRpcClient(endpoint, conn, a2aHeaders('1.0')));
//   const { wire, view } = await a2a.getTask(id);      // view.status.state === 'completed'
import { decodeMessage, v0_3 } from '../../a2a/v0_3/codec.js';
import {
  decodeMessage as decodeV1Message,
  decodeStreamEvent as decodeV1StreamEvent,
  decodeTask as decodeV1Task,
  encodeMessage as encodeV1Message,
  type V1Message,
  type V1PushConfig,
  type V1StreamResponse,
  type V1Task,
} from '../../a2a/codec/v1_0.js';
import { isTerminalState } from '../../a2a/projection.js';
import type { Message, Task, TaskPushNotificationConfig } from '../../a2a/v0_3/types.js';
import { UsageError } from './card.js';
import type { JsonRpcClient, StreamItem, StreamOptions } from './rpc.js';

export const A2A_VERSIONS = ['0.3', '1.0'] as const;
export type A2AVersion = (typeof A2A_VERSIONS)[number];

/** `--a2a-version`: absent means "what the card offers". */
export function parseA2AVersion(value: string | undefined): A2AVersion | undefined {
  if (value === undefined) return undefined;
  if ((A2A_VERSIONS as readonly string[]).includes(value)) return value as A2AVersion;
  throw new UsageError(`--a2a-version must be one of ${A2A_VERSIONS.join(', ')}, got '${value}'`);
}

/** The headers a request of `version` carries (0.3: none, an absent header means 0.3). */
export const a2aHeaders = (version: A2AVersion): Record<string, string> =>
  version === '1.0' ? { 'a2a-version': '1.0' } : {};

export interface Answer<T> {
  wire: unknown;
  view: T;
}

export interface A2AStreamItem extends StreamItem {
  /** The event as the agent sent it (`result` is its 0.3 form). */
  wire: unknown;
}

export interface PushConfigInput {
  url: string;
  id?: string;
  token?: string;
}

const METHODS = {
  '0.3': {
    send: 'message/send',
    get: 'tasks/get',
    cancel: 'tasks/cancel',
    subscribe: 'tasks/resubscribe',
    pushSet: 'tasks/pushNotificationConfig/set',
    pushGet: 'tasks/pushNotificationConfig/get',
    pushList: 'tasks/pushNotificationConfig/list',
    pushDelete: 'tasks/pushNotificationConfig/delete',
  },
  '1.0': {
    send: 'SendMessage',
    get: 'GetTask',
    cancel: 'CancelTask',
    subscribe: 'SubscribeToTask',
    pushSet: 'CreateTaskPushNotificationConfig',
    pushGet: 'GetTaskPushNotificationConfig',
    pushList: 'ListTaskPushNotificationConfigs',
    pushDelete: 'DeleteTaskPushNotificationConfig',
  },
} as const;

type Rec = Record<string, unknown>;
const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------- 1.0 → the 0.3 view

const taskView = (t: V1Task): Task => v0_3.encodeTask(decodeV1Task(t)) as Task;

function sendView(r: unknown): Task | Message {
  if (isObject(r) && isObject(r.message))
    return v0_3.encodeSendResult({
      kind: 'message',
      message: decodeV1Message(r.message as unknown as V1Message),
    }) as Message;
  if (isObject(r) && isObject(r.task)) return taskView(r.task as unknown as V1Task);
  throw new Error('the agent answered SendMessage with neither a task nor a message');
}

/** 1.0 has no `final`: the stream ends by closing, which a terminal state announces. */
function streamView(r: V1StreamResponse): unknown {
  const event = decodeV1StreamEvent(r);
  const final = event.kind === 'status-update' && isTerminalState(event.update.status.state);
  return v0_3.encodeStreamEvent(event, final);
}

const pushView = (c: V1PushConfig): TaskPushNotificationConfig => ({
  taskId: c.taskId,
  pushNotificationConfig: {
    ...(c.id ? { id: c.id } : {}),
    url: c.url,
    ...(c.authentication?.scheme ? { authentication: { schemes: [c.authentication.scheme] } } : {}),
  },
});

// ---------------------------------------------------------------- the client

export class A2AClient {
  /** The method names of this version (for messages: "SubscribeToTask refused"). */
  readonly m: (typeof METHODS)[A2AVersion];

  constructor(
    readonly version: A2AVersion,
    readonly rpc: JsonRpcClient,
  ) {
    this.m = METHODS[version];
  }

  private get v1(): boolean {
    return this.version === '1.0';
  }

  /** message/send | SendMessage; blocking unless `blocking` is false. */
  async send(message: Message, blocking: boolean): Promise<Answer<Task | Message>> {
    if (!this.v1) {
      const params = { message, ...(blocking ? {} : { configuration: { blocking: false } }) };
      const wire = await this.rpc.call<Task | Message>(this.m.send, params);
      return { wire, view: wire };
    }
    const params = {
      message: encodeV1Message(decodeMessage(message)),
      ...(blocking ? {} : { configuration: { returnImmediately: true } }),
    };
    const wire = await this.rpc.call(this.m.send, params);
    return { wire, view: sendView(wire) };
  }

  async getTask(id: string, historyLength?: number): Promise<Answer<Task>> {
    const wire = await this.rpc.call(this.m.get, { id, ...(historyLength !== undefined ? { historyLength } : {}) });
    return { wire, view: this.v1 ? taskView(wire as V1Task) : (wire as Task) };
  }

  async cancelTask(id: string): Promise<Answer<Task>> {
    const wire = await this.rpc.call(this.m.cancel, { id });
    return { wire, view: this.v1 ? taskView(wire as V1Task) : (wire as Task) };
  }

  /** tasks/resubscribe | SubscribeToTask: each item in its 0.3 form, with what was sent beside it. */
  async subscribe(id: string, opts: StreamOptions = {}): Promise<AsyncGenerator<A2AStreamItem>> {
    const items = await this.rpc.stream(this.m.subscribe, { id }, opts);
    const v1 = this.v1;
    return (async function* () {
      for await (const item of items) {
        const result = v1 ? streamView(item.result as V1StreamResponse) : item.result;
        yield { ...item, result, wire: item.result };
      }
    })();
  }

  /** ListTasks (1.0 only: 0.3 has no list method). `state` as in 0.3, e.g. `input-required`. */
  async listTasks(q: { pageSize?: number; state?: string; contextId?: string; pageToken?: string }) {
    if (!this.v1) throw new UsageError('A2A 0.3 has no ListTasks method');
    const params = {
      ...(q.pageSize !== undefined ? { pageSize: q.pageSize } : {}),
      ...(q.state ? { status: `TASK_STATE_${q.state.toUpperCase().replace(/-/g, '_')}` } : {}),
      ...(q.contextId ? { contextId: q.contextId } : {}),
      ...(q.pageToken ? { pageToken: q.pageToken } : {}),
    };
    const wire = await this.rpc.call('ListTasks', params);
    const tasks = isObject(wire) && Array.isArray(wire.tasks) ? (wire.tasks as V1Task[]) : [];
    const token = isObject(wire) && typeof wire.nextPageToken === 'string' ? wire.nextPageToken : '';
    return { wire, views: tasks.map(taskView), nextPageToken: token };
  }

  async pushSet(taskId: string, config: PushConfigInput): Promise<Answer<TaskPushNotificationConfig>> {
    if (!this.v1) {
      const wire = await this.rpc.call<TaskPushNotificationConfig>(this.m.pushSet, {
        taskId,
        pushNotificationConfig: config,
      });
      return { wire, view: wire };
    }
    const wire = await this.rpc.call<V1PushConfig>(this.m.pushSet, { taskId, ...config });
    return { wire, view: pushView(wire) };
  }

  /** Without `configId`: the task's default config (0.3: `{id: taskId}`; 1.0: the task id as id). */
  async pushGet(taskId: string, configId?: string): Promise<Answer<TaskPushNotificationConfig>> {
    if (!this.v1) {
      const params = { id: taskId, ...(configId ? { pushNotificationConfigId: configId } : {}) };
      const wire = await this.rpc.call<TaskPushNotificationConfig>(this.m.pushGet, params);
      return { wire, view: wire };
    }
    const wire = await this.rpc.call<V1PushConfig>(this.m.pushGet, { taskId, id: configId ?? taskId });
    return { wire, view: pushView(wire) };
  }

  /** The first page (Handoff keeps a handful of configs per task). */
  async pushList(taskId: string): Promise<Answer<TaskPushNotificationConfig[]>> {
    if (!this.v1) {
      const wire = await this.rpc.call(this.m.pushList, { id: taskId });
      return { wire, view: Array.isArray(wire) ? (wire as TaskPushNotificationConfig[]) : [] };
    }
    const wire = await this.rpc.call(this.m.pushList, { taskId });
    const configs = isObject(wire) && Array.isArray(wire.configs) ? (wire.configs as V1PushConfig[]) : [];
    return { wire, view: configs.map(pushView) };
  }

  async pushDelete(taskId: string, configId: string): Promise<unknown> {
    const params = this.v1 ? { taskId, id: configId } : { id: taskId, pushNotificationConfigId: configId };
    return this.rpc.call(this.m.pushDelete, params);
  }
}
