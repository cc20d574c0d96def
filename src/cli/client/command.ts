// What every client command shares: the common options (--api-key / HANDOFF_API_KEY, --json,
// --timeout, --a2a-version), connecting to an agent through its card in the version it offers (1.0
// first), the action wrapper that turns any failure into `handoff: …` on stderr and exit code 1,
// message builders, and printing a Task result.
//
//   export function getCommand(): Command {
//     return clientCommand('get', 'show a task').argument('<url>').argument('<taskId>')
//       .action(run(async (url: string, id: string, opts: ClientOptions) => {
//         const { a2a } = await connect(url, opts);
//         return printResult(await a2a.getTask(id), opts, url);
//       }));
//   }
import { randomUUID } from 'node:crypto';
import { Command, Option } from 'commander';
import type { Message, Part, Task } from '../../a2a/v0_3/types.js';
import { A2AClient, A2A_VERSIONS, type Answer, a2aHeaders, parseA2AVersion } from './a2a.js';
import { type Agent, resolveAgent, UsageError } from './card.js';
import { type Connection, DEFAULT_TIMEOUT_MS } from './http.js';
import { cliCommand } from './invocation.js';
import { EXIT_OK, exitCodeForState, formatMessage, formatTask, Paint, reportError } from './output.js';
import { JsonRpcClient } from './rpc.js';

export interface ClientOptions {
  apiKey?: string;
  json?: boolean;
  /** Seconds, as typed. */
  timeout?: string;
  /** `0.3` or `1.0`, as typed; absent: what the card offers, 1.0 first. */
  a2aVersion?: string;
}

/** A subcommand with the common client options. */
export function clientCommand(name: string, description: string): Command {
  return new Command(name)
    .description(description)
    .addOption(new Option('--api-key <key>', 'API key, sent as Authorization: Bearer <key>').env('HANDOFF_API_KEY'))
    .option('--json', 'print JSON (the A2A result) instead of text, for scripts')
    .option('--timeout <seconds>', `per-request timeout in seconds (default ${DEFAULT_TIMEOUT_MS / 1000})`)
    .option(
      '--a2a-version <version>',
      `A2A version to speak (${A2A_VERSIONS.join(' or ')}; default: 1.0 when the agent card offers it, else 0.3)`,
    );
}

/** A subcommand about one task: the common options and the `<url> <taskId>` arguments. */
export function taskCommand(name: string, description: string): Command {
  return clientCommand(name, description).argument('<url>', 'agent base URL').argument('<taskId>', 'task id');
}

export function connection(opts: ClientOptions): Connection {
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  if (opts.timeout !== undefined) {
    const s = Number(opts.timeout);
    if (!Number.isFinite(s) || s <= 0)
      throw new UsageError(`--timeout must be a positive number of seconds, got '${opts.timeout}'`);
    timeoutMs = Math.round(s * 1000);
  }
  return { ...(opts.apiKey ? { apiKey: opts.apiKey } : {}), timeoutMs };
}

export interface Connected {
  agent: Agent;
  a2a: A2AClient;
  conn: Connection;
}

/** Resolve the agent card at `url` and an A2A client for its endpoint, in the version chosen. */
export async function connect(url: string, opts: ClientOptions): Promise<Connected> {
  const conn = connection(opts);
  const want = parseA2AVersion(opts.a2aVersion);
  const agent = await resolveAgent(url, conn, want);
  // Handoff-Surface: the host's audit log records this client's acts as the CLI's.
  const rpc = new JsonRpcClient(agent.endpoint, conn, { ...a2aHeaders(agent.version), 'handoff-surface': 'cli' });
  return { agent, a2a: new A2AClient(agent.version, rpc), conn };
}

/** Wrap an action: its result is the exit code; anything thrown is reported (exit 1). */
export function run<A extends unknown[]>(fn: (...args: A) => Promise<number>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    let code: number;
    try {
      code = await fn(...args);
    } catch (err) {
      code = reportError(err);
    }
    process.exitCode = code;
  };
}

// ---------------------------------------------------------------- input

/** `--data`: a JSON object (A2A v0.3 data parts hold objects). */
export function parseJsonObject(text: string, flag = '--data'): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flag} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`${flag} must be a JSON object`);
  return value as Record<string, unknown>;
}

/** Any JSON value (e.g. edited artifact data). */
export function parseJsonValue(text: string, flag = '--data'): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`${flag} is not valid JSON: ${(err as Error).message}`);
  }
}

/** `--node`: a node id (the host names the open ones when a task waits at several). */
export function nodeOption(node: string): string {
  if (node.trim() === '')
    throw new UsageError(`--node needs a node id (the task lists its open ones: ${cliCommand()} get)`);
  return node;
}

export const textPart = (text: string): Part => ({ kind: 'text', text });
export const dataPart = (data: Record<string, unknown>): Part => ({ kind: 'data', data });

function userMessage(parts: Part[], extra: Partial<Pick<Message, 'taskId' | 'contextId' | 'metadata'>> = {}): Message {
  return { kind: 'message', role: 'user', messageId: randomUUID(), parts, ...extra };
}

// ---------------------------------------------------------------- output

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

const isTask = (v: unknown): v is Task =>
  typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'task';
const isMessage = (v: unknown): v is Message =>
  typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'message';

/** Print a send, get or cancel answer (--json: as the agent sent it, in its version); the exit
 * code follows the task state (a Message reply ends the interaction: 0). */
export function printResult(answer: Answer<unknown>, opts: ClientOptions, agentUrl: string): number {
  const result = answer.view;
  if (opts.json) printJson(answer.wire);
  else if (isTask(result)) process.stdout.write(`${formatTask(result, new Paint(process.stdout), agentUrl)}\n`);
  else if (isMessage(result)) process.stdout.write(`${formatMessage(result, new Paint(process.stdout))}\n`);
  else printJson(answer.wire);
  if (isTask(result)) return exitCodeForState(result.status?.state);
  return EXIT_OK;
}

/** A text and/or a `--data` object as message parts; a usage error when there is neither. */
export function textAndData(text: string | undefined, data: string | undefined, nothing: string): Part[] {
  const parts: Part[] = [];
  if (text !== undefined && text !== '') parts.push(textPart(text));
  if (data !== undefined) parts.push(dataPart(parseJsonObject(data)));
  if (parts.length === 0) throw new UsageError(nothing);
  return parts;
}

/**
 * `answer` and `approve`: read the task first and send its open interrupt's `artifactHash` back
 * (`metadata.openwop.expectedArtifactHash`), so the host applies the decision only to what was read:
 * a refine or an edit that raced it is refused (`artifact_changed`). `node` picks the interrupt
 * when the task waits at several. A task that shows no hash (another agent) is answered unbound.
 */
export async function sendDecision(
  url: string,
  opts: ClientOptions & { wait?: boolean },
  parts: Part[],
  extra: Partial<Pick<Message, 'taskId' | 'contextId' | 'metadata'>> & { taskId: string },
  node?: string,
): Promise<number> {
  const { a2a } = await connect(url, opts);
  const read = await a2a.getTask(extra.taskId, 0);
  const hash = shownHash(read.view, node);
  const metadata = (extra.metadata ?? {}) as Record<string, unknown>;
  const openwop = (metadata.openwop ?? {}) as Record<string, unknown>;
  const bound =
    hash === undefined
      ? extra
      : { ...extra, metadata: { ...metadata, openwop: { ...openwop, expectedArtifactHash: hash } } };
  return printResult(await a2a.send(userMessage(parts, bound), opts.wait !== false), opts, url);
}

/** The `artifactHash` the task shows for the interrupt at `node` (else its oldest open one). */
function shownHash(task: Task, node: string | undefined): string | undefined {
  const openwop = (task.metadata?.openwop ?? {}) as Record<string, unknown>;
  const all = Array.isArray(openwop.interrupts) ? (openwop.interrupts as Array<Record<string, unknown>>) : [];
  const oldest = (openwop.interrupt ?? {}) as Record<string, unknown>;
  const shown =
    node === undefined ? oldest : (all.find((i) => i.nodeId === node) ?? (oldest.nodeId === node ? oldest : {}));
  return typeof shown.artifactHash === 'string' ? shown.artifactHash : undefined;
}

/** The one send path of `send`, `answer` and `approve`: message/send (SendMessage) to the agent at
 * `url`, then print the resulting Task (blocking unless --no-wait, commander's `wait: false`); the
 * exit code follows its state. */
export async function sendAndPrint(
  url: string,
  opts: ClientOptions & { wait?: boolean },
  parts: Part[],
  extra: Partial<Pick<Message, 'taskId' | 'contextId' | 'metadata'>> = {},
): Promise<number> {
  const { a2a } = await connect(url, opts);
  return printResult(await a2a.send(userMessage(parts, extra), opts.wait !== false), opts, url);
}
