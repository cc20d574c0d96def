// The durable floor: what the rows Handoff commits for one blocking echo `message/send` cost on
// their own. Fastify (Handoff's framework) and better-sqlite3 on Handoff's real schema (created by
// its own migrations) and SQLite settings, with nothing else: no engine, no Kysely, no hooks, no
// savepoints. Each send reads the idempotency index and writes exactly what Handoff writes for an
// echo task: the run row, its 6 log events (one row, as Handoff logs a commit) and its A2ATaskState
// row, committed (one COMMIT per event-loop turn, like Handoff's group commit) before the reply.
// tasks/get reads them back (the task+run join, then the task's log) and builds the Task.
//
// Its ids are Handoff's (src/engine/ids.ts): UUIDv7, so time-ordered, and each new run, interrupt
// and task lands at the end of its key's b-tree. Random (v4) keys would dirty a random leaf of
// every index keyed by them per commit: twice the WAL pages per flow (docs/decisions.md).
//
// No server that keeps the same durable log can spend less on those writes than this, so a Handoff
// cost near this floor means its own code is no longer what is expensive.
//
//   node dist/bench/baselines/sqlite-floor-server.js --port 4102     (echo and approval skills)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import Fastify from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { openStore, SQLITE_WAL_AUTOCHECKPOINT } from '../../src/store/connect.js';
import { parsePort } from './args.js';

type Json = Record<string, unknown>;
interface Message {
  kind: 'message';
  role: string;
  messageId: string;
  parts: Array<{ kind: string; text?: string }>;
  metadata?: Json;
}

const port = parsePort(process.argv);
const dir = mkdtempSync(join(tmpdir(), 'bench-floor-'));
const file = join(dir, 'handoff.db');
// Handoff's schema, made by Handoff's migrations; then the file is reopened raw.
await (await openStore({ sqliteFile: file })).close();
const db = new BetterSqlite3(file);
db.pragma('busy_timeout = 5000');
db.pragma('locking_mode = EXCLUSIVE');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('temp_store = MEMORY');
db.pragma(`wal_autocheckpoint = ${SQLITE_WAL_AUTOCHECKPOINT}`);
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));

const byMessage = db.prepare(
  'select task_id from a2a_tasks where tenant_id = ? and principal_id = ? and message_id = ?',
);
const insertRun = db.prepare(
  'insert into runs (run_id, tenant_id, principal_id, workflow_id, status, inputs, ' +
    'state, cursor, error, tags, metadata, next_seq, version, lease_owner, ' +
    'lease_expires_at, wake_at, created_at, updated_at, completed_at) values (?, ?, ?, ' +
    '?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
);
/** A commit's events, one row (Handoff's log: src/store/repos/events.ts). */
const insertBatch = db.prepare(
  'insert into event_batches (run_id, first_seq, last_seq, created_at, events) values (?, ?, ?, ?, ?)',
);
const insertTask = db.prepare(
  'insert into a2a_tasks (task_id, tenant_id, principal_id, context_id, message_id, ' +
    'state, interrupt_kind, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
);
const taskAndRun = db.prepare(
  'select t.context_id, t.state, t.updated_at, r.workflow_id, r.status, r.version, r.next_seq from a2a_tasks ' +
    't join runs r on r.run_id = t.task_id where t.task_id = ? and t.tenant_id = ?',
);
const insertInterrupt = db.prepare(
  'insert into interrupts (interrupt_id, run_id, node_id, kind, status, data, votes, exchanges, resolution, ' +
    'resolved_by, created_at, resolved_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
);
const findReply = db.prepare(
  'select task_id from a2a_messages where tenant_id = ? and principal_id = ? and message_id = ?',
);
const insertReply = db.prepare(
  'insert into a2a_messages (tenant_id, principal_id, message_id, task_id) values (?, ?, ?, ?)',
);
const resolveInterrupt = db.prepare(
  "update interrupts set status = 'resolved', votes = ?, resolution = ?, resolved_by = ?, resolved_at = ? " +
    "where run_id = ? and node_id = 'review' and status = 'open'",
);
const completeRun = db.prepare(
  "update runs set status = 'completed', state = ?, cursor = ?, next_seq = ?, version = ?, updated_at = ?, " +
    'completed_at = ? where run_id = ? and version = ?',
);
const updateTask = db.prepare('update a2a_tasks set state = ?, interrupt_kind = ?, updated_at = ? where task_id = ?');
const taskBatches = db.prepare('select events from event_batches where run_id = ? order by first_seq');
const begin = db.prepare('begin');
const commit = db.prepare('commit');

/** Writes queued this turn; one transaction commits them all, then every caller is answered. */
let queue: Array<{ write(): void; done(): void }> = [];
function commitQueued(): void {
  const batch = queue;
  queue = [];
  begin.run();
  try {
    for (const w of batch) w.write();
    commit.run();
  } catch (err) {
    if (db.inTransaction) db.exec('rollback');
    throw err;
  }
  for (const w of batch) w.done();
}

function echoSend(msg: Message, reply: (result: Json) => void): void {
  if (byMessage.get('default', 'local', msg.messageId)) throw new Error('messageId reused');
  const text = msg.parts.map((p) => p.text ?? '').join('');
  const id = `run_${uuidv7()}`;
  const contextId = `ctx_${uuidv7()}`;
  const now = new Date().toISOString();
  const echo = { echo: text };
  const artifact = { artifactId: 'echo', name: 'Echo the prompt', data: echo };
  const task = {
    kind: 'task',
    id,
    contextId,
    status: { state: 'completed', timestamp: now },
    artifacts: [{ artifactId: 'echo', parts: [{ kind: 'data', data: echo }], name: 'Echo the prompt' }],
    history: [msg],
    metadata: { openwop: { runId: id, workflowId: 'echo', runStatus: 'completed' } },
  };
  if (queue.length === 0) setImmediate(commitQueued);
  queue.push({
    write() {
      const outputs = JSON.stringify({ outputs: { echo }, vars: {} });
      insertRun.run(
        id,
        'default',
        'local',
        'echo',
        'completed',
        JSON.stringify({ prompt: text }),
        outputs,
        '{"ordinals":{"echo":1}}',
        null,
        JSON.stringify([`a2a:${msg.messageId}`]),
        JSON.stringify({ a2a: { messageId: msg.messageId, contextId }, contentTrust: 'untrusted' }),
        6,
        2,
        null,
        null,
        null,
        now,
        now,
        now,
      );
      appendEvents(id, 0, now, [
        ev('a2a.message', null, { message: msg }),
        ev('run.started', null, { workflowId: 'echo' }),
        ev('node.started', 'echo', { ordinal: 0, typeId: 'core.transform' }),
        ev('node.completed', 'echo', { ordinal: 0 }),
        ev('artifact.created', 'echo', artifact),
        ev('run.completed', null, { outputs: { echo } }),
      ]);
      insertTask.run(id, 'default', 'local', contextId, msg.messageId, 'completed', null, now);
    },
    done: () => reply(task),
  });
}

/** One log event as a batch row holds it. */
const ev = (type: string, nodeId: string | null, payload: unknown) =>
  nodeId === null ? { type, payload } : { type, nodeId, payload };

/** One commit's events: one row, as Handoff writes them. */
function appendEvents(id: string, first: number, at: string, events: unknown[]): void {
  insertBatch.run(id, first, first + events.length - 1, at, JSON.stringify(events));
}

const GATE = {
  title: 'Review the draft',
  description: 'Accept the draft, reject it, ask for a revision, edit it, or ask a question.',
  artifactId: 'review',
  actions: ['accept', 'reject', 'refine', 'edit-accept', 'ask'],
  requiredApprovals: 1,
  rejectionPolicy: 'single-veto',
  artifactFrom: 'draft',
};

function approvalSend(msg: Message, reply: (result: Json) => void): void {
  if (byMessage.get('default', 'local', msg.messageId)) throw new Error('messageId reused');
  const text = msg.parts.map((p) => p.text ?? '').join('');
  const id = `run_${uuidv7()}`;
  const interruptId = `int_${uuidv7()}`;
  const contextId = `ctx_${uuidv7()}`;
  const now = new Date().toISOString();
  const draft = { text: `Draft: ${text}` };
  const gate = { ...GATE, artifact: draft };
  const task = {
    kind: 'task',
    id,
    contextId,
    status: { state: 'input-required', timestamp: now },
    history: [msg],
    metadata: {
      openwop: {
        runId: id,
        workflowId: 'approval',
        runStatus: 'waiting-approval',
        interrupt: { kind: 'approval', nodeId: 'review', actions: GATE.actions, title: GATE.title, artifact: draft },
      },
    },
  };
  if (queue.length === 0) setImmediate(commitQueued);
  queue.push({
    write() {
      insertInterrupt.run(
        interruptId,
        id,
        'review',
        'approval',
        'open',
        JSON.stringify(gate),
        '[]',
        '[]',
        null,
        null,
        now,
        null,
      );
      insertRun.run(
        id,
        'default',
        'local',
        'approval',
        'waiting-approval',
        JSON.stringify({ prompt: text }),
        JSON.stringify({ outputs: { draft }, vars: {} }),
        '{"ordinals":{"draft":1,"review":0}}',
        null,
        JSON.stringify([`a2a:${msg.messageId}`]),
        JSON.stringify({ a2a: { messageId: msg.messageId, contextId }, contentTrust: 'untrusted' }),
        8,
        3,
        null,
        null,
        null,
        now,
        now,
        null,
      );
      appendEvents(id, 0, now, [
        ev('a2a.message', null, { message: msg }),
        ev('run.started', null, { workflowId: 'approval' }),
        ev('node.started', 'draft', { ordinal: 0, typeId: 'core.transform' }),
        ev('node.completed', 'draft', { ordinal: 0 }),
        ev('node.started', 'review', { ordinal: 0 }),
        ev('node.suspended', 'review', { kind: 'approval', interruptId }),
        ev('approval.requested', 'review', { interruptId, ...gate }),
        ev('interrupt.requested', 'review', { interruptId, kind: 'approval', key: `${id}:review:0` }),
      ]);
      insertTask.run(id, 'default', 'local', contextId, msg.messageId, 'input-required', 'approval', now);
    },
    done: () => reply(task),
  });
}

interface TaskRow {
  context_id: string;
  state: string;
  updated_at: string;
  workflow_id: string;
  status: string;
  version: number;
  next_seq: number;
}

function approvalReply(msg: Message, taskId: string, reply: (result: Json) => void, fail: (m: string) => void): void {
  const row = taskAndRun.get(taskId, 'default') as TaskRow | undefined;
  if (row?.state !== 'input-required') {
    fail('task not waiting for input');
    return;
  }
  if (findReply.get('default', 'local', msg.messageId)) {
    fail('reply already applied');
    return;
  }
  const action = (msg.parts[0] as { data?: { action?: string } }).data?.action ?? '';
  const now = new Date().toISOString();
  if (queue.length === 0) setImmediate(commitQueued);
  queue.push({
    write() {
      const draft = { text: 'Draft: Please approve this benchmark request.' };
      const resolution = { action, artifact: draft, decidedBy: 'local', approvers: ['local'] };
      const vote = { principalId: 'local', action, at: now, value: { action } };
      const final = { ...draft, approvedBy: 'local' };
      resolveInterrupt.run(JSON.stringify([vote]), JSON.stringify(resolution), 'local', now, taskId);
      const seq = row.next_seq;
      const done = completeRun.run(
        JSON.stringify({ outputs: { draft, review: resolution, final }, vars: {} }),
        '{"ordinals":{"draft":1,"review":1,"final":1}}',
        seq + 9,
        row.version + 1,
        now,
        now,
        taskId,
        row.version,
      );
      if (done.changes !== 1) throw new Error('run changed concurrently');
      appendEvents(taskId, seq, now, [
        ev('a2a.message', null, { message: msg, principalId: 'local' }),
        ev('approval.received', 'review', { decidedBy: 'local', action, decidedAt: now }),
        ev('interrupt.resolved', 'review', { kind: 'approval', outcome: action, resolvedAt: now }),
        ev('node.resumed', 'review', { action }),
        ev('node.completed', 'review', { ordinal: 0, outcome: action }),
        ev('node.started', 'final', { ordinal: 0, typeId: 'core.transform' }),
        ev('node.completed', 'final', { ordinal: 0 }),
        ev('artifact.created', 'final', { artifactId: 'final', name: 'Publish', data: final }),
        ev('run.completed', null, { outputs: { final } }),
      ]);
      insertReply.run('default', 'local', msg.messageId, taskId);
      updateTask.run('completed', null, now, taskId);
    },
    done: () => reply(getTask(taskId) as Json),
  });
}

function getTask(id: string): Json | undefined {
  const row = taskAndRun.get(id, 'default') as TaskRow | undefined;
  if (!row) return undefined;
  const artifacts = [];
  const history = [];
  for (const { events } of taskBatches.all(id) as Array<{ events: string }>) {
    for (const e of JSON.parse(events) as Array<{ type: string; payload: Json }>) {
      const p = e.payload;
      if (e.type === 'a2a.message') history.push(p.message);
      else if (e.type === 'artifact.created')
        artifacts.push({ artifactId: p.artifactId, parts: [{ kind: 'data', data: p.data }], name: p.name });
    }
  }
  return {
    kind: 'task',
    id,
    contextId: row.context_id,
    status: { state: row.state, timestamp: row.updated_at },
    ...(artifacts.length > 0 ? { artifacts } : {}),
    ...(history.length > 0 ? { history } : {}),
    metadata: { openwop: { runId: id, workflowId: row.workflow_id, runStatus: row.status } },
  };
}

const app = Fastify({ logger: false });
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
app.get('/.well-known/agent-card.json', async () => ({
  name: 'bench-floor',
  url: `http://127.0.0.1:${port}/a2a/jsonrpc`,
  skills: [{ id: 'echo' }, { id: 'approval' }],
}));
app.post('/a2a/jsonrpc', (req, reply) => {
  const rpc = JSON.parse(String(req.body)) as {
    id: unknown;
    method: string;
    params: { message?: Message & { taskId?: string }; id?: string };
  };
  const answer = (result: unknown) =>
    void reply.header('content-type', 'application/json').send(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result }));
  const fail = (code: number, message: string) =>
    void reply
      .header('content-type', 'application/json')
      .send({ jsonrpc: '2.0', id: rpc.id, error: { code, message } });
  if (rpc.method === 'tasks/get') {
    const task = getTask(String(rpc.params.id));
    return task ? answer(task) : fail(-32001, 'Task not found');
  }
  if (rpc.method !== 'message/send' || !rpc.params.message) return fail(-32601, 'Method not found');
  const msg = rpc.params.message;
  if (msg.taskId) {
    approvalReply(msg, msg.taskId, answer, (m) => fail(-32602, m));
    return;
  }
  const skill = msg.metadata?.skillId;
  if (skill === 'approval') return approvalSend(msg, answer);
  if (skill !== 'echo') return fail(-32602, 'this floor serves the echo and approval skills only');
  echoSend(msg, answer);
});
await app.listen({ port, host: '127.0.0.1' });
