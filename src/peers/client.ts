// Calling other A2A agents, through the official client (@a2a-js/sdk) with its v0.3 compatibility
// layer on: a peer whose card lists A2A 1.0 interfaces (JSON-RPC or HTTP+JSON) is spoken to in
// 1.0, a peer with a 0.3 card (today's Handoff) in 0.3. Every byte goes through Handoff's egress
// dispatchers (src/peers/http.ts); every failure is a PeerError of one of three kinds (errors.ts).
//
//   const peers = Peers.fromConfig(config);
//   const peer = await peers.resolve({ agent: 'reviewer' }, { runId, callerAgentId, deadline });  // or { url }
//   peer.chosen            // { url, binding: 'JSONRPC' | 'HTTP+JSON', protocolVersion: '0.3' | '1.0' }
//   const sent = await peer.send({ messageId: messageIdFor(key), text: 'review this', skillId: 'approval' });
//   for await (const task of peer.subscribe(taskId, { signal })) …   // ends at terminal/interrupted
//   await peers.close();
//
// Whom a registry entry trusts: its card URL's origin and the origins it lists (registry.ts). The
// card is the peer's to write, so an endpoint it names on any other origin is treated like a URL
// from run input — the egress guard in full, on the guarded pool — and the entry's token goes
// only to the entry's origins, request by request. Cards are kept CARD_TTL_MS per entry or URL.
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { type AgentCard, type Message, type Part, Role, type Task, TaskState } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type RequestOptions,
  RestTransportFactory,
  type TransportFactory,
} from '@a2a-js/sdk/client';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import { Agent } from 'undici';
import { TokenSource } from '../calls/client-credentials.js';
import { checkPushUrl, createEgressPolicy, type EgressPolicy } from '../egress/address.js';
import { createGuardedDispatcher, type Resolver } from '../egress/dispatcher.js';
import type { Redactor } from '../secrets/redact.js';
import { authorized, pinnedCard } from './auth-fetch.js';
import { INVALID_AGENT_RESPONSE, PeerError, peerError, refusedError, toPeerError, transportError } from './errors.js';
import { checkInputUrl, peerFetch, shownUrl } from './http.js';
import { traceparentFor } from './identity.js';
import { currentTraceContext, failSpanWith, inSpan, SpanKind, tracingEnabled } from '../telemetry/tracing.js';
import type { Message as NeutralMessage, TaskView } from '../a2a/model.js';
import { applyStreamEvent, INTERRUPTED_STATES, messageOf, TERMINAL_STATES, taskOf } from './normalize.js';
import { type AgentEntry, cardUrlFor, trustedOrigins } from './registry.js';

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
  /** Learns each access token fetched for an agent, so that a peer echoing it is scrubbed. */
  redactor?: Redactor;
  /** The card cache's clock (epoch ms; tests move it); default Date.now. */
  now?: () => number;
}

/**
 * A peer's card is read again after this long: every resolve (a node's wake, a stream hold, a
 * cancel) would otherwise fetch it, as often as a hostile peer makes the caller wake.
 */
const CARD_TTL_MS = 60_000;
/** Cards kept at most (URLs from run input are unbounded in number); the oldest goes first. */
const CARD_CACHE_MAX = 1_000;
/** ListTasks pages read to find the tasks of one context (100 tasks each). */
const MAX_LIST_PAGES = 5;

/** A registered agent by name (operator-trusted), or a URL that came from run input (fully guarded). */
export type PeerTarget = { agent: string } | { url: string };

/** The run a call belongs to: it names the trace and goes in `metadata.openwop` of each message. */
export interface RunContext {
  runId: string;
  callerAgentId: string;
  /** Epoch ms at which the caller gives up: each request (the card's too) is bounded by the time left. */
  deadline?: number;
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

export type SendResult = { kind: 'task'; task: TaskView } | { kind: 'message'; message: NeutralMessage };

/** How to reach a target: where its card is, the fetch for it, and (a registry entry) whom it trusts. */
interface Route {
  /** The card cache's key: one per registry entry, one per URL from run input. */
  key: string;
  cardUrl: string;
  fetchImpl: typeof fetch;
  entry?: { name: string; origins: Set<string> };
}

/** What of the host's configuration the peer client reads (src/config.ts's Config has it). */
export interface PeersSettings {
  agents: { registry: ReadonlyMap<string, AgentEntry>; timeoutMs: number; caFile?: string };
  secrets: { redact: (text: string) => string; redactor: Redactor };
}
export class Peers {
  private readonly trusted: Agent;
  private readonly guarded: Agent;
  private readonly inputPolicy: EgressPolicy;
  private readonly redact: (text: string) => string;
  /** Cards by route key, each until its expiry; a fetch in flight is shared by its readers. */
  private readonly cards = new Map<string, { card: Promise<AgentCard>; until: number }>();
  /** Access tokens of the registry's client-credentials agents, in memory only. */
  private readonly tokens: TokenSource;

  constructor(private readonly opts: PeersOptions) {
    this.redact = opts.redact ?? ((t) => t);
    const ca = opts.ca ? [...rootCertificates, opts.ca].join('\n') : undefined;
    this.inputPolicy = opts.inputPolicy ?? createEgressPolicy();
    this.tokens = new TokenSource({ timeoutMs: opts.timeoutMs, ...(opts.redactor ? { redactor: opts.redactor } : {}) });
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

  static fromConfig(config: PeersSettings, inputPolicy?: EgressPolicy): Peers {
    const { registry, timeoutMs, caFile } = config.agents;
    return new Peers({
      registry,
      timeoutMs,
      ...(caFile ? { ca: readFileSync(caFile, 'utf8') } : {}),
      ...(inputPolicy ? { inputPolicy } : {}),
      redact: config.secrets.redact,
      redactor: config.secrets.redactor,
    });
  }

  /** Read the peer's card (or take it from the cache) and pick the interface: the card's first one this client knows. */
  async resolve(target: PeerTarget, run: RunContext): Promise<PeerClient> {
    const route = this.route(target);
    const { cardUrl, fetchImpl } = route;
    const legacyCompat = { enabled: true };
    const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat });
    const card = await withinDeadline(this.card(route, resolver), run.deadline, `agent card at ${shownUrl(cardUrl)}`);
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
    this.checkEndpoint(route, chosenUrl);
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

  private route(target: PeerTarget): Route {
    const { timeoutMs } = this.opts;
    const guarded = peerFetch({ dispatcher: this.guarded, timeoutMs, policy: this.inputPolicy });
    if ('agent' in target) {
      const entry = this.opts.registry.get(target.agent);
      if (!entry) {
        const known = [...this.opts.registry.keys()].join(', ') || 'none';
        throw refusedError(`no agent '${target.agent}' in HANDOFF_AGENTS (registered: ${known})`);
      }
      const origins = trustedOrigins(entry);
      const trusted = authorized(peerFetch({ dispatcher: this.trusted, timeoutMs }), entry, this.tokens, this.trusted);
      return {
        key: `agent\n${entry.name}`,
        cardUrl: entry.cardUrl,
        fetchImpl: pinnedCard(byOrigin(origins, trusted, guarded), entry),
        entry: { name: entry.name, origins },
      };
    }
    const cardUrl = cardUrlFor(target.url);
    if (cardUrl === null) throw refusedError(`a URL from run input must be http(s): ${shownUrl(target.url)}`);
    checkInputUrl(cardUrl, this.inputPolicy);
    return { key: `url\n${cardUrl}`, cardUrl, fetchImpl: guarded };
  }

  /** The route's card, fetched at most once per TTL (readers share a fetch in flight; a failed one is not kept). */
  private card(route: Route, resolver: DefaultAgentCardResolver): Promise<AgentCard> {
    const now = (this.opts.now ?? Date.now)();
    const held = this.cards.get(route.key);
    if (held && held.until > now) return held.card;
    const card: Promise<AgentCard> = resolver.resolve(route.cardUrl, '').catch((err: unknown) => {
      if (this.cards.get(route.key)?.card === card) this.cards.delete(route.key);
      throw cardError(err, route.cardUrl, this.opts.timeoutMs, this.redact);
    });
    this.cards.delete(route.key);
    if (this.cards.size >= CARD_CACHE_MAX) this.cards.delete(this.cards.keys().next().value as string);
    this.cards.set(route.key, { card, until: now + CARD_TTL_MS });
    return card;
  }

  /**
   * The endpoint the card named: a URL from run input passes the egress guard in full; so does a
   * registry agent's on an origin its entry does not name (it is then called on the guarded pool,
   * without the token: byOrigin). A refusal says which origin to add if the endpoint is the agent's.
   */
  private checkEndpoint(route: Route, url: string): void {
    if (!route.entry) {
      checkInputUrl(url, this.inputPolicy);
      return;
    }
    const { name, origins } = route.entry;
    const origin = originOfUrl(url);
    if (origins.has(origin)) return;
    const verdict = checkPushUrl(url, this.inputPolicy);
    if (verdict.ok) return;
    const why = verdict.code === 'insecure_scheme' ? 'it is not https' : verdict.reason;
    throw refusedError(
      `agent '${name}': its card names the endpoint ${shownUrl(url)}, on an origin its HANDOFF_AGENTS entry ` +
        `does not name (${[...origins].join(', ')}), and the egress guard refuses it: ${why}. ` +
        `If that origin is the agent's own, add ;origin=${origin} to the entry`,
    );
  }
}

/** Requests to the entry's origins go out on `inside` (token, trusted pool); any other on `outside`. */
function byOrigin(origins: ReadonlySet<string>, inside: typeof fetch, outside: typeof fetch): typeof fetch {
  const call = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' || input instanceof URL ? String(input) : input.url;
    return (origins.has(originOfUrl(url)) ? inside : outside)(input, init);
  };
  return call as typeof fetch;
}

/** The URL's origin; 'null' (no origin an entry can name) when it does not parse. */
function originOfUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'null';
  }
}

/** `work`, unless `deadline` (epoch ms) comes first: then a transport error (the work itself goes on, bounded). */
async function withinDeadline<T>(work: Promise<T>, deadline: number | undefined, what: string): Promise<T> {
  if (deadline === undefined) return work;
  const left = deadline - Date.now();
  if (left <= 0) throw transportError(`${what}: the call's deadline has passed`);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(transportError(`${what}: no answer within ${left} ms`)), left);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
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
    if ('messageId' in result) return { kind: 'message', message: messageOf(result) };
    return { kind: 'task', task: req.taskId ? this.theTask(req.taskId, 'send', result) : taskOf(result) };
  }

  async getTask(taskId: string): Promise<TaskView> {
    const answer = await this.call('getTask', (o) =>
      this.client.getTask({ tenant: '', id: taskId, historyLength: 0 }, o),
    );
    return this.theTask(taskId, 'getTask', answer);
  }

  async cancelTask(taskId: string): Promise<TaskView> {
    const answer = await this.call('cancelTask', (o) =>
      this.client.cancelTask({ tenant: '', id: taskId, metadata: undefined }, o),
    );
    return this.theTask(taskId, 'cancelTask', answer);
  }

  /**
   * Cancel every task of the context that has not ended, but `except`; the ids cancelled. A cancel
   * the peer answers with an A2A error (the task ended meanwhile, is unknown…) is passed over; a
   * transport failure is thrown, as are the list's errors (see `unsupported`).
   */
  async cancelContext(contextId: string, except?: string): Promise<string[]> {
    const cancelled: string[] = [];
    for (const task of await this.tasksInContext(contextId)) {
      if (task.id === except || TERMINAL_STATES.has(task.status.state)) continue;
      try {
        await this.cancelTask(task.id);
        cancelled.push(task.id);
      } catch (err) {
        if (!(err instanceof PeerError) || err.failure.kind === 'transport') throw err;
      }
    }
    return cancelled;
  }

  /**
   * The tasks of one context, newest first (1.0 ListTasks; at most MAX_LIST_PAGES pages). A task the
   * peer lists in another context is left out: a peer that ignores the filter must not make the
   * caller act on tasks that are not this context's. A 0.3 peer has no list: a PeerError
   * `unsupported(err)` (errors.ts) recognises.
   */
  async tasksInContext(contextId: string): Promise<TaskView[]> {
    const found: TaskView[] = [];
    let pageToken = '';
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const answer = await this.call('listTasks', (o) =>
        this.client.listTasks(
          {
            tenant: '',
            contextId,
            status: TaskState.TASK_STATE_UNSPECIFIED,
            pageSize: 100,
            pageToken,
            historyLength: 0,
            statusTimestampAfter: undefined,
            includeArtifacts: false,
          },
          o,
        ),
      );
      found.push(...answer.tasks.map(taskOf).filter((t) => t.contextId === contextId));
      pageToken = answer.nextPageToken;
      if (!pageToken) break;
    }
    return found;
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
  ): AsyncGenerator<TaskView, void, undefined> {
    const stop = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
    const what = this.what('subscribe');
    let known: TaskView | undefined;
    try {
      for await (const event of this.client.resubscribeTask({ tenant: '', id: taskId }, this.options(signal))) {
        known = applyStreamEvent(known, event);
        if (!known) continue;
        if (known.id !== taskId) throw otherTask(what, known.id, taskId);
        yield known;
        if (TERMINAL_STATES.has(known.status.state)) return;
        if (!opts.throughInterrupts && INTERRUPTED_STATES.has(known.status.state)) return;
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      const e = toPeerError(err, what, this.timeoutMs, this.redact);
      const unsupported = e.failure.kind === 'peer' && e.failure.code === A2A_ERROR_CODE.UNSUPPORTED_OPERATION;
      if (known !== undefined || !unsupported) throw e;
      const task = await this.getTask(taskId);
      if (!TERMINAL_STATES.has(task.status.state)) throw e;
      yield task;
      return;
    } finally {
      stop.abort();
    }
    if (!opts.signal?.aborted)
      throw transportError(`${what}: the stream of task ${taskId} closed before the task settled`);
  }

  /** One request, bounded by HANDOFF_AGENT_TIMEOUT_MS or the time left before the run's deadline, whichever ends first. */
  private call<T>(method: string, fn: (options: RequestOptions) => Promise<T>): Promise<T> {
    if (!tracingEnabled()) return this.callOnce(method, fn);
    // A client span per request, named as the draft A2A conventions name the method.
    const name = SPAN_NAMES[method] ?? method;
    const attributes = {
      'a2a.method.name': name,
      'server.address': hostOf(this.chosen.url),
      'handoff.run.id': this.run.runId,
    };
    return inSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        return await this.callOnce(method, fn);
      } catch (err) {
        if (err instanceof PeerError) failSpanWith(span, err.failure.kind, err.message);
        throw err;
      }
    });
  }

  private async callOnce<T>(method: string, fn: (options: RequestOptions) => Promise<T>): Promise<T> {
    const left = this.run.deadline === undefined ? this.timeoutMs : this.run.deadline - Date.now();
    if (left <= 0) throw transportError(`${this.what(method)}: the call's deadline has passed`);
    const bound = Math.min(this.timeoutMs, left);
    try {
      return await fn(this.options(AbortSignal.timeout(bound)));
    } catch (err) {
      throw toPeerError(err, this.what(method), bound, this.redact);
    }
  }

  /** A peer answering for another task than the one asked about is not a valid A2A answer. */
  private theTask(taskId: string, method: string, answer: Task): TaskView {
    const task = taskOf(answer);
    if (task.id !== taskId) throw otherTask(this.what(method), task.id, taskId);
    return task;
  }

  /** Per request: the deadline and a new span of the run's trace (the SDK sends these as headers). */
  private options(signal: AbortSignal): RequestOptions {
    // With tracing on, the active span's context (the request's client span); else a span id of
    // the run's own trace id, so a peer's logs still group one run's calls.
    const trace = currentTraceContext() ?? { traceparent: traceparentFor(this.run.runId) };
    return { signal, serviceParameters: { ...trace } };
  }

  private what(method: string): string {
    return `${method} ${shownUrl(this.chosen.url)}`;
  }
}

/** The A2A 1.0 method each request of this client is, for span names. */
const SPAN_NAMES: Readonly<Record<string, string>> = {
  send: 'SendMessage',
  getTask: 'GetTask',
  cancelTask: 'CancelTask',
  listTasks: 'ListTasks',
  setPushConfig: 'CreateTaskPushNotificationConfig',
};

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

const otherTask = (what: string, answered: string, asked: string): PeerError =>
  peerError(
    INVALID_AGENT_RESPONSE,
    `${what}: the peer answered with task '${answered.slice(0, 100)}' for task ${asked}`,
  );

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
