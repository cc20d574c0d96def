// What the foreign test agents do, independent of the SDK version serving them
// (sdk-sample-server.ts on @a2a-js/sdk 0.3.14, sdk-v1-agent.ts on 1.3.0). Each turn of a task is a
// list of steps the server adapter publishes as that version's events.
//
// Skills (message.metadata.skillId, default echo; a reply into a parked task continues its skill):
// - echo      working → artifact "echo" (the input's text and data) → completed
// - approval  input-required "Approve this request?"; a reply {action:'accept'} → artifact
//             "decision" {approved:true} → completed; {action:'reject'} → rejected; else asks again
// - clarify   input-required SAMPLE_QUESTION; a text reply → artifact "answer" "Hello, <reply>!" → completed
// - auth      auth-required AUTH_QUESTION; a text reply → artifact "auth" "Signed in as <reply>" → completed
// - fail      working → failed "the fail skill always fails"
// - reject    rejected "the reject skill refuses every task"
//             (`auth-required` and `rejected` are `auth` and `reject` under the names OpenWOP's
//             drift-point fixture sends as its skill: its `driftScenario` input)
// - slow      working, then (after data.ms, default the agent's slowMs, or when the test finishes
//             it) artifact "slow" → completed
// - large     working → artifact "large": a text of as many random base64 characters as the
//             message's text says (a number) → completed
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export const SAMPLE_QUESTION = 'What is your name?';
export const APPROVAL_QUESTION = 'Approve this request?';
export const AUTH_QUESTION = 'Sign in to continue: who are you?';
export const SKILL_IDS = ['echo', 'approval', 'clarify', 'auth', 'fail', 'reject', 'slow', 'large'] as const;

export type StepState =
  | 'working'
  | 'input-required'
  | 'auth-required'
  | 'completed'
  | 'failed'
  | 'rejected'
  | 'canceled';

export type Step =
  | { status: StepState; text?: string }
  | { artifact: string; text?: string; data?: Record<string, unknown> }
  /** Hold the task in `working` until `ms` pass or the test ends it (see SlowTasks). */
  | { waitMs: number };

export interface Turn {
  /** Text parts joined by spaces. */
  text: string;
  /** Data parts merged (undefined when there are none). */
  data: Record<string, unknown> | undefined;
}

/** The steps of one turn. `parked` is true when the message continues an input- or auth-required task. */
export function planTurn(skill: string, parked: boolean, turn: Turn, slowMs: number): Step[] {
  switch (skill) {
    case 'approval':
      if (!parked) return [{ status: 'input-required', text: APPROVAL_QUESTION }];
      if (turn.data?.action === 'accept') {
        return [{ status: 'working' }, { artifact: 'decision', data: { approved: true } }, { status: 'completed' }];
      }
      if (turn.data?.action === 'reject') return [{ status: 'rejected', text: 'rejected by the reviewer' }];
      return [{ status: 'input-required', text: "Answer with {action:'accept'} or {action:'reject'}" }];
    case 'clarify':
      if (!parked) return [{ status: 'input-required', text: SAMPLE_QUESTION }];
      return [
        { status: 'working' },
        { artifact: 'answer', text: `Hello, ${turn.text || 'stranger'}!` },
        { status: 'completed' },
      ];
    case 'auth':
    case 'auth-required':
      if (!parked) return [{ status: 'auth-required', text: AUTH_QUESTION }];
      return [{ status: 'working' }, { artifact: 'auth', text: `Signed in as ${turn.text}` }, { status: 'completed' }];
    case 'fail':
      return [{ status: 'working' }, { status: 'failed', text: 'the fail skill always fails' }];
    case 'reject':
    case 'rejected':
      return [{ status: 'rejected', text: 'the reject skill refuses every task' }];
    case 'slow': {
      const ms = typeof turn.data?.ms === 'number' ? turn.data.ms : slowMs;
      return [
        { status: 'working' },
        { waitMs: ms },
        { artifact: 'slow', text: `done after ${ms} ms` },
        { status: 'completed' },
      ];
    }
    case 'large': {
      // Random: a compressing store (PostgreSQL's TOAST) would make a repeated text look small.
      const chars = Number(turn.text) || 0;
      const text = randomBytes(Math.ceil((chars * 3) / 4))
        .toString('base64')
        .slice(0, chars);
      return [{ status: 'working' }, { artifact: 'large', text }, { status: 'completed' }];
    }
    default:
      return [
        { status: 'working' },
        { artifact: 'echo', ...(turn.text ? { text: turn.text } : {}), ...(turn.data ? { data: turn.data } : {}) },
        { status: 'completed' },
      ];
  }
}

/** What a test agent saw of a request (to check headers: trace context, version, credentials). */
export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

/** What both test agents offer a test. */
export interface TestAgent {
  /** `http://127.0.0.1:<port>`: the base URL the card is found under. */
  url: string;
  /** Every request received, oldest first. */
  requests: SeenRequest[];
  /** End a task now: a `slow` one through its executor (streams see it), a parked one in the store. */
  finish(taskId: string, ending: Ending): Promise<void>;
  close(): Promise<void>;
}

/** A step the agent publishes (every step but a wait). */
export type PublishedStep = Exclude<Step, { waitMs: number }>;

/** Publish a turn's steps in order; a wait ends early, with the test's ending, if the test says so. */
export async function playTurn(
  steps: Step[],
  slow: SlowTasks,
  taskId: string,
  publish: (step: PublishedStep) => void,
): Promise<void> {
  for (const step of steps) {
    if (!('waitMs' in step)) {
      publish(step);
      continue;
    }
    const ending = await slow.wait(taskId, step.waitMs);
    if (ending) {
      publish({ status: ending.state, ...(ending.text ? { text: ending.text } : {}) });
      return;
    }
  }
}

/** How a test ends a task early: a state and the agent's words for it. */
export interface Ending {
  state: 'failed' | 'canceled' | 'completed';
  text?: string;
}

/**
 * The `slow` tasks waiting right now, so a test (or a cancel) can end one at once instead of
 * waiting it out: `wait` resolves with undefined when the time is up, or with the ending given.
 */
export class SlowTasks {
  private readonly waiting = new Map<string, (ending: Ending | undefined) => void>();

  wait(taskId: string, ms: number): Promise<Ending | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle(taskId, undefined), ms);
      this.waiting.set(taskId, (ending) => {
        clearTimeout(timer);
        resolve(ending);
      });
    });
  }

  /** True when the task was waiting (its executor now publishes the ending). */
  settle(taskId: string, ending: Ending | undefined): boolean {
    const done = this.waiting.get(taskId);
    this.waiting.delete(taskId);
    done?.(ending);
    return done !== undefined;
  }

  /** End every wait (agent shutdown). */
  release(): void {
    for (const id of [...this.waiting.keys()]) this.settle(id, { state: 'canceled', text: 'agent stopping' });
  }
}

/** Record every request the app receives (register before its routes). */
export function recordRequests(app: Express): SeenRequest[] {
  const requests: SeenRequest[] = [];
  app.use((req, _res, next) => {
    requests.push({ method: req.method, path: req.path, headers: req.headers });
    next();
  });
  return requests;
}

/** Listen on 127.0.0.1 (port 0: a free one); closing also ends the waits of `slow` tasks. */
export async function listen(
  app: Express,
  slow: SlowTasks,
  port = 0,
): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(port, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        slow.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
