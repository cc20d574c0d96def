// Calling other A2A agents, through the official client (@a2a-js/sdk) with its v0.3 compatibility
// layer on: a peer whose card lists A2A 1.0 interfaces (JSON-RPC or HTTP+JSON) is spoken to in
// 1.0, a peer with a 0.3 card (today's Handoff) in 0.3. Every byte goes through Handoff's egress
// dispatchers (src/peers/http.ts); every failure is a PeerError of one of three kinds (errors.ts).
//
//   const peers = Peers.fromConfig(config);
//   const peer = await peers.resolve({ agent: 'reviewer' }, { runId, callerAgentId });  // or { url }
//   peer.chosen            // { url, binding: 'JSONRPC' | 'HTTP+JSON', protocolVersion: '0.3' | '1.0' }
//   const sent = await peer.send({ messageId: messageIdFor(key), text: 'review this', skillId: 'approval' });
//   for await (const task of peer.subscribe(taskId, { signal })) …   // ends at terminal/interrupted
//   await peers.close();
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { type AgentCard, type Message, type Part, Role } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  createAuthenticatingFetchWithRetry,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type RequestOptions,
  RestTransportFactory,
  type TransportFactory,
} from '@a2a-js/sdk/client';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import { Agent } from 'undici';
import type { Config } from '../config.js';
import { createEgressPolicy, type EgressPolicy } from '../egress/address.js';
import { createGuardedDispatcher, type Resolver } from '../egress/dispatcher.js';
import {
  INVALID_AGENT_RESPONSE,
  type PeerError,
  peerError,
  refusedError,
  toPeerError,
  transportError,
} from './errors.js';
import { checkInputUrl, peerFetch, shownUrl } from './http.js';
import { traceparentFor } from './identity.js';
import {
  applyStreamEvent,
  INTERRUPTED_STATES,
  type PeerMessage,
  type PeerTask,
  TERMINAL_STATES,
  toPeerMessage,
  toPeerTask,
} from './normalize.js';
import { type AgentEntry, cardUrlFor } from './registry.js';

export interface PeersOptions {
  registry: ReadonlyMap<string, AgentEntry>;
  /** Bound on every call (HANDOFF_AGENT_TIMEOUT_MS); a subscription's opening only. */
  timeoutMs: number;
  /** Extra trust anchor (PEM) for https peers, in addition to the public roots. */
  ca?: string;
  /** Who a URL from run input may reach; default: globally routable addresses only. */
  inputPolicy?: EgressPolicy;
  /** Name resolution for input URLs (tests map names to loopback); default: the system resolver. */
  lookup?: Resolver;
  /**
   * Applied to a peer's words in every error before they are cut (SecretStore.redact: a peer may
   * echo the token it was sent).
   */
  redact?: (text: string) => string;
}

/** A registered agent by name (operator-trusted), or a URL that came from run input (fully guarded). */
export type PeerTarget = { agent: string } | { url: string };

/** The run a call belongs to: it names the trace and goes in `metadata.openwop` of each message. */
export interface RunContext {
  runId: string;
  callerAgentId: string;
}

export interface ChosenInterface {
  url: string;
  binding: 'JSONRPC' | 'HTTP+JSON';
  protocolVersion: '0.3' | '1.0';
}

export interface SendRequest {
  /** From messageIdFor(idempotency key): the same key must give the same id (src/peers/identity.ts). */
  messageId: string;
  text?: string;
  /** A JSON object (A2A 0.3 data parts can hold nothing else). */
  data?: Record<string, unknown>;
  skillId?: string;
  /** Set for a follow-up message into an existing task. */
  taskId?: string;
  contextId?: string;
  /** Extra message metadata; `openwop` and `skillId` are set by the client. */
  metadata?: Record<string, unknown>;
  /** Webhook the peer should push this task's updates to. */
  pushConfig?: PeerPushConfig;
}

export interface PeerPushConfig {
  url: string;
  /** Sent back by the peer with each push; never logged. */
  token: string;
  id?: string;
}

export type SendResult = { kind: 'task'; task: PeerTask } | { kind: 'message'; message: PeerMessage };

export class Peers {
  private readonly trusted: Agent;
  private readonly guarded: Agent;
  private readonly inputPolicy: EgressPolicy;
  private readonly redact: (text: string) => string;

  constructor(private readonly opts: PeersOptions) {
    this.redact = opts.redact ?? ((t) => t);
    const ca = opts.ca ? [...rootCertificates, opts.ca].join('\n') : undefined;
    this.inputPolicy = opts.inputPolicy ?? createEgressPolicy();
    // Streams stay open as long as their caller wants: no idle bound on bodies (calls have signals).
    this.trusted = new Agent({
      connect: { timeout: opts.timeoutMs, ...(ca ? { ca } : {}) },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: 0,
    });
    this.guarded = createGuardedDispatcher({
      policy: this.inputPolicy,
      ...(opts.lookup ? { lookup: opts.lookup } : {}),
      ...(ca ? { ca } : {}),
      connectTimeoutMs: opts.timeoutMs,
      headersTimeoutMs: opts.timeoutMs,
      bodyTimeoutMs: 0,
    });
  }

  static fromConfig(config: Config, inputPolicy?: EgressPolicy): Peers {
    const { registry, timeoutMs, caFile } = config.agents;
    return new Peers({
      registry,
      timeoutMs,
      ...(caFile ? { ca: readFileSync(caFile, 'utf8') } : {}),
      ...(inputPolicy ? { inputPolicy } : {}),
      redact: config.secrets.redact,
    });
  }

  /** Read the peer's card and pick the interface to speak: the card's first one this client knows. */
  async resolve(target: PeerTarget, run: RunContext): Promise<PeerClient> {
    const { cardUrl, fetchImpl, guarded } = this.route(target);
    const legacyCompat = { enabled: true };
    const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat });
    let card: AgentCard;
    try {
      card = await resolver.resolve(cardUrl, '');
    } catch (err) {
      throw cardError(err, cardUrl, this.opts.timeoutMs, this.redact);
    }
    let chosenUrl = '';
    // The factory does not say which interface it picked; its transport factory is told the URL.
    const noting = (inner: TransportFactory): TransportFactory => ({
      protocolName: inner.protocolName,
      create: (url, agentCard) => {
        chosenUrl = url;
        return inner.create(url, agentCard);
      },
    });
    const factory = new ClientFactory({
      transports: [
        noting(new JsonRpcTransportFactory({ fetchImpl, legacyCompat })),
        noting(new RestTransportFactory({ fetchImpl, legacyCompat })),
      ],
      cardResolver: resolver,
    });
    let client: Client;
    try {
      client = await factory.createFromAgentCard(card);
    } catch {
      // The factory's only refusal: no interface of a binding it has a transport for.
      const offered = (card.supportedInterfaces ?? []).map((i) => `${i.protocolBinding} ${i.protocolVersion}`);
      const what = `agent card at ${shownUrl(cardUrl)} offers no interface this host speaks`;
      const speaks = '(JSONRPC or HTTP+JSON, A2A 0.3 or 1.0)';
      throw peerError(INVALID_AGENT_RESPONSE, `${what} ${speaks}: ${offered.join(', ') || 'none'}`);
    }
    if (guarded) checkInputUrl(chosenUrl, this.inputPolicy);
    const chosen: ChosenInterface = {
      url: chosenUrl,
      binding: client.transport.protocolName as ChosenInterface['binding'],
      protocolVersion: client.protocolVersion === '0.3' ? '0.3' : '1.0',
    };
    return new PeerClient(client, card, chosen, run, this.opts.timeoutMs, this.redact);
  }

  async close(): Promise<void> {
    await Promise.all([this.trusted.close(), this.guarded.close()]);
  }

  private route(target: PeerTarget): { cardUrl: string; fetchImpl: typeof fetch; guarded: boolean } {
    const { timeoutMs } = this.opts;
    if ('agent' in target) {
      const entry = this.opts.registry.get(target.agent);
      if (!entry) {
        const known = [...this.opts.registry.keys()].join(', ') || 'none';
        throw refusedError(`no agent '${target.agent}' in HANDOFF_AGENTS (registered: ${known})`);
      }
      return {
        cardUrl: entry.cardUrl,
        fetchImpl: withToken(peerFetch({ dispatcher: this.trusted, timeoutMs }), entry.token),
        guarded: false,
      };
    }
    const cardUrl = cardUrlFor(target.url);
    if (cardUrl === null) throw refusedError(`a URL from run input must be http(s): ${shownUrl(target.url)}`);
    checkInputUrl(cardUrl, this.inputPolicy);
    const fetchImpl = peerFetch({ dispatcher: this.guarded, timeoutMs, policy: this.inputPolicy });
    return { cardUrl, fetchImpl, guarded: true };
  }
}

/** The SDK's own way to add credentials to every request it makes, the agent card's included. */
function withToken(fetchImpl: typeof fetch, token: string | undefined): typeof fetch {
  if (token === undefined) return fetchImpl;
  return createAuthenticatingFetchWithRetry(fetchImpl, {
    headers: async () => ({ Authorization: `Bearer ${token}` }),
    shouldRetryWithHeaders: async () => undefined,
  });
}

/**
 * A card that cannot be fetched is a transport problem (retry) or an HTTP answer (404, 401…);
 * one that arrives but cannot be read is the peer's fault, whatever the SDK called it.
 */
function cardError(err: unknown, cardUrl: string, timeoutMs: number, redact: (text: string) => string): PeerError {
  const what = `agent card at ${shownUrl(cardUrl)}`;
  let e: PeerError;
  try {
    e = toPeerError(err, what, timeoutMs, redact);
  } catch {
    return peerError(INVALID_AGENT_RESPONSE, `${what} is unreadable: ${redact((err as Error).message)}`);
  }
  if (e.failure.kind !== 'peer' || e.failure.code > 0) return e;
  return peerError(INVALID_AGENT_RESPONSE, `${what} is unreadable: ${e.failure.message.replace(`${what}: `, '')}`);
}

/** One peer, as resolved for one run: the calls a node needs, each bounded and classified. */
export class PeerClient {
  constructor(
    private readonly client: Client,
    readonly card: AgentCard,
    readonly chosen: ChosenInterface,
    private readonly run: RunContext,
    private readonly timeoutMs: number,
    private readonly redact: (text: string) => string = (t) => t,
  ) {}

  /**
   * Send a message without waiting for the work (0.3 `blocking: false`, 1.0 `returnImmediately`):
   * the peer answers with its Task at once, even if it will wait hours for a person.
   */
  async send(req: SendRequest): Promise<SendResult> {
    const parts: Part[] = [];
    if (req.text !== undefined) parts.push(part({ $case: 'text', value: req.text }));
    if (req.data !== undefined) parts.push(part({ $case: 'data', value: req.data }));
    if (parts.length === 0) throw new TypeError('PeerClient.send needs text or data');
    const message: Message = {
      messageId: req.messageId,
      contextId: req.contextId ?? '',
      taskId: req.taskId ?? '',
      role: Role.ROLE_USER,
      parts,
      metadata: {
        ...req.metadata,
        openwop: { runId: this.run.runId, callerAgentId: this.run.callerAgentId },
        ...(req.skillId !== undefined ? { skillId: req.skillId } : {}),
      },
      extensions: [],
      referenceTaskIds: [],
    };
    const configuration = {
      acceptedOutputModes: [],
      taskPushNotificationConfig: req.pushConfig ? pushConfig('', req.pushConfig) : undefined,
      historyLength: 0,
      returnImmediately: true,
    };
    const result = await this.call('send', (options) =>
      this.client.sendMessage({ tenant: '', message, configuration, metadata: undefined }, options),
    );
    return 'messageId' in result
      ? { kind: 'message', message: toPeerMessage(result) }
      : { kind: 'task', task: toPeerTask(result) };
  }

  async getTask(taskId: string): Promise<PeerTask> {
    return toPeerTask(
      await this.call('getTask', (o) => this.client.getTask({ tenant: '', id: taskId, historyLength: 0 }, o)),
    );
  }

  async cancelTask(taskId: string): Promise<PeerTask> {
    return toPeerTask(
      await this.call('cancelTask', (o) => this.client.cancelTask({ tenant: '', id: taskId, metadata: undefined }, o)),
    );
  }

  /** Register a webhook for the task; the answer never repeats the token. */
  async setPushConfig(taskId: string, config: PeerPushConfig): Promise<{ id: string; taskId: string; url: string }> {
    const saved = await this.call('setPushConfig', (o) =>
      this.client.createTaskPushNotificationConfig(pushConfig(taskId, config), o),
    );
    return { id: saved.id, taskId: saved.taskId || taskId, url: saved.url };
  }

  /**
   * The task as it changes (0.3 `tasks/resubscribe`, 1.0 `SubscribeToTask`): each event folded
   * into the task so far, starting with the peer's current view. Ends after a terminal or
   * interrupted state (`throughInterrupts`: only after a terminal one, for a caller that keeps
   * waiting while the peer's own people answer); a task already terminal (which SDK peers refuse to
   * subscribe to) is read once. Only the opening is timed: give a `signal` to stop watching (the
   * iteration then ends). A stream the peer closes early is a transport error: subscribe again
   * later, or poll getTask.
   */
  async *subscribe(
    taskId: string,
    opts: { signal?: AbortSignal; throughInterrupts?: boolean } = {},
  ): AsyncGenerator<PeerTask, void, undefined> {
    const stop = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
    const what = this.what('subscribe');
    let known: PeerTask | undefined;
    try {
      for await (const event of this.client.resubscribeTask({ tenant: '', id: taskId }, this.options(signal))) {
        known = applyStreamEvent(known, event);
        if (!known) continue;
        yield known;
        if (TERMINAL_STATES.has(known.state)) return;
        if (!opts.throughInterrupts && INTERRUPTED_STATES.has(known.state)) return;
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      const e = toPeerError(err, what, this.timeoutMs, this.redact);
      const unsupported = e.failure.kind === 'peer' && e.failure.code === A2A_ERROR_CODE.UNSUPPORTED_OPERATION;
      if (known !== undefined || !unsupported) throw e;
      const task = await this.getTask(taskId);
      if (!TERMINAL_STATES.has(task.state)) throw e;
      yield task;
      return;
    } finally {
      stop.abort();
    }
    if (!opts.signal?.aborted)
      throw transportError(`${what}: the stream of task ${taskId} closed before the task settled`);
  }

  private async call<T>(method: string, fn: (options: RequestOptions) => Promise<T>): Promise<T> {
    try {
      return await fn(this.options(AbortSignal.timeout(this.timeoutMs)));
    } catch (err) {
      throw toPeerError(err, this.what(method), this.timeoutMs, this.redact);
    }
  }

  /** Per request: the deadline and a new span of the run's trace (the SDK sends these as headers). */
  private options(signal: AbortSignal): RequestOptions {
    return { signal, serviceParameters: { traceparent: traceparentFor(this.run.runId) } };
  }

  private what(method: string): string {
    return `${method} ${shownUrl(this.chosen.url)}`;
  }
}

const part = (content: NonNullable<Part['content']>): Part => ({
  content,
  metadata: undefined,
  filename: '',
  mediaType: '',
});

/** Token twice: 0.3 peers send it back as X-A2A-Notification-Token, 1.0 peers as `Authorization: Bearer`. */
const pushConfig = (taskId: string, c: PeerPushConfig) => ({
  tenant: '',
  id: c.id ?? '',
  taskId,
  url: c.url,
  token: c.token,
  authentication: { scheme: 'Bearer', credentials: c.token },
});
