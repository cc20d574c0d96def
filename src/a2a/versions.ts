// A2A protocol versions: which one a request asks for, and which operation a JSON-RPC method name
// is. The one place method names live; service, routes and validators ask here.
//
//   const version = requestedVersion(req.headers['a2a-version'], req.query['A2A-Version']);
//   const { operation, streaming } = jsonRpcMethod(body.method, version);   // throws -32601 / -32009
//
// A version is Major.Minor; a patch number is ignored. No header (or an empty one) means 0.3.
import { A2AError, methodNotFound, versionNotSupported } from './errors.js';
import type { Operation } from './model.js';

export const SERVED_VERSIONS = ['0.3', '1.0'] as const;
export type ProtocolVersion = (typeof SERVED_VERSIONS)[number];

/** The header (and query parameter) a 1.0 client names its version in. */
export const VERSION_HEADER = 'A2A-Version';

/** 0.3 JSON-RPC method → operation. 0.3 has no ListTasks. */
const V0_3_METHODS: Readonly<Record<string, Operation>> = {
  'message/send': 'send',
  'message/stream': 'stream',
  'tasks/get': 'get',
  'tasks/cancel': 'cancel',
  'tasks/resubscribe': 'subscribe',
  'tasks/pushNotificationConfig/set': 'push.create',
  'tasks/pushNotificationConfig/get': 'push.get',
  'tasks/pushNotificationConfig/list': 'push.list',
  'tasks/pushNotificationConfig/delete': 'push.delete',
  'agent/getAuthenticatedExtendedCard': 'card.extended',
};

/** 1.0 JSON-RPC method (= gRPC method) → operation. */
const V1_0_METHODS: Readonly<Record<string, Operation>> = {
  SendMessage: 'send',
  SendStreamingMessage: 'stream',
  GetTask: 'get',
  ListTasks: 'list',
  CancelTask: 'cancel',
  SubscribeToTask: 'subscribe',
  CreateTaskPushNotificationConfig: 'push.create',
  GetTaskPushNotificationConfig: 'push.get',
  ListTaskPushNotificationConfigs: 'push.list',
  DeleteTaskPushNotificationConfig: 'push.delete',
  GetExtendedAgentCard: 'card.extended',
};

// Maps, not object lookups: a method named "constructor" or "__proto__" must find nothing.
const METHODS: Readonly<Record<ProtocolVersion, ReadonlyMap<string, Operation>>> = {
  '0.3': new Map(Object.entries(V0_3_METHODS)),
  '1.0': new Map(Object.entries(V1_0_METHODS)),
};

/** Operations answered as an SSE stream, in every version and binding. */
const STREAMING: ReadonlySet<Operation> = new Set(['stream', 'subscribe']);

/** Major.Minor with an optional patch, e.g. "1.0", "0.3.0", "1.0.1". */
const VERSION_SYNTAX = /^(\d{1,4})\.(\d{1,4})(?:\.\d{1,4})?$/;

type Parsed = { ok: true; version: ProtocolVersion } | { ok: false; given: string };

/** The version a request names: header first, then the query parameter; absent or empty → 0.3. */
function parseVersion(header: unknown, query: unknown): Parsed {
  const raw = [header, query].find((v) => v !== undefined && v !== '');
  if (raw === undefined) return { ok: true, version: '0.3' };
  // A repeated header or parameter arrives as an array (or a comma list): one version only.
  const given = Array.isArray(raw) ? raw.join(', ') : String(raw);
  const m = VERSION_SYNTAX.exec(given.trim());
  const version = m ? `${Number(m[1])}.${Number(m[2])}` : undefined;
  return (SERVED_VERSIONS as readonly string[]).includes(version ?? '')
    ? { ok: true, version: version as ProtocolVersion }
    : { ok: false, given };
}

/** The served version a request asks for; any other → -32009 (HTTP 400 on REST). */
export function requestedVersion(header: unknown, query?: unknown): ProtocolVersion {
  const parsed = parseVersion(header, query);
  if (!parsed.ok) throw versionNotSupported(parsed.given, SERVED_VERSIONS);
  return parsed.version;
}

/** The agent card a request gets: the 0.3 (hybrid) card for 0.x or no version, else the 1.0 card.
 * Discovery never fails: a version we do not serve still gets the newest card, which lists
 * every interface with its version (the a2a-js server does the same). */
export function cardVersion(header: unknown, query?: unknown): ProtocolVersion {
  const parsed = parseVersion(header, query);
  if (parsed.ok) return parsed.version;
  return /^\s*0\./.test(parsed.given) ? '0.3' : '1.0';
}

export interface ResolvedMethod {
  version: ProtocolVersion;
  operation: Operation;
  streaming: boolean;
}

/**
 * Dispatch of a JSON-RPC method name: PascalCase names are 1.0, slash names 0.3, and the request's
 * version must be the method's. A 1.0 name without `A2A-Version: 1.0` asks for 0.3 (absent means
 * 0.3), so it is -32009 naming the header to send, as a2a-python answers; a 0.3 name under 1.0
 * likewise. A name in neither table is -32601.
 */
export function jsonRpcMethod(method: string, requested: ProtocolVersion): ResolvedMethod {
  const own = METHODS[requested].get(method);
  if (own) return { version: requested, operation: own, streaming: STREAMING.has(own) };
  const other: ProtocolVersion = requested === '1.0' ? '0.3' : '1.0';
  const operation = METHODS[other].get(method);
  if (!operation) throw methodNotFound(method);
  throw new A2AError(
    'version-not-supported',
    `${method} is an A2A ${other} method but the request asks for A2A ${requested}` +
      (other === '1.0'
        ? ` (no ${VERSION_HEADER} header means 0.3): send ${VERSION_HEADER}: 1.0`
        : `: send it without ${VERSION_HEADER}, or use the 1.0 method ${methodName('1.0', operation)}`),
    undefined,
    { requestedVersion: requested, method },
  );
}

/** The JSON-RPC method name of an operation in a version (undefined: 0.3 has no ListTasks). */
export function methodName(version: ProtocolVersion, operation: Operation): string | undefined {
  for (const [name, op] of METHODS[version]) if (op === operation) return name;
  return undefined;
}

/** The 1.0 method name (the name traces use) of a JSON-RPC method of either version, if it is one. */
export function neutralMethodName(method: string): string | undefined {
  const operation = METHODS['1.0'].get(method) ?? METHODS['0.3'].get(method);
  return operation && methodName('1.0', operation);
}
