// The durable floor: what the rows Handoff commits for one blocking echo `message/send` cost on
// their own. Fastify (Handoff's framework) and better-sqlite3 on Handoff's real schema (created by
// its own migrations) and SQLite settings, with nothing else: no engine, no Kysely, no hooks, no
// savepoints. Each send reads the idempotency index and writes exactly what Handoff writes for an
// echo task: the run row, its 6 log events and its A2ATaskState row, committed (one COMMIT per
// event-loop turn, like Handoff's group commit) before the reply. tasks/get reads them back (the
// task+run join, then the task's message and artifact events) and builds the Task.
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
const insertEvents = db.prepare(
  `insert into events (run_id, seq, type, node_id, payload, created_at) values ` +
    `${Array(6).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`,
);
const insertTask = db.prepare(
  'insert into a2a_tasks (task_id, tenant_id, principal_id, context_id, message_id, ' +
    'state, interrupt_kind, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
);
const taskAndRun = db.prepare(
  'select t.context_id, t.state, t.updated_at, r.workflow_id, r.status, r.version, r.next_seq from a2a_tasks ' +
    't join runs r on r.run_id = t.task_id where t.task_id = ? and t.tenant_id = ?',
);
const eventsInsert = (n: number) =>
  db.prepare(
    `insert into events (run_id, seq, type, node_id, payload, created_at) values ${Array(n).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`,
  );
const insertEvents8 = eventsInsert(8);
const insertEvents9 = eventsInsert(9);
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
const taskEvents = db.prepare(
  "select type, payload from events where run_id = ? and type in ('artifact.created', 'a2a.message') order by seq",
);
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
      insertEvents.run(
        id,
        0,
        'a2a.message',
        null,
        JSON.stringify({ message: msg }),
        now,
        id,
        1,
        'run.started',
        null,
        '{"workflowId":"echo"}',
        now,
        id,
        2,
        'node.started',
        'echo',
        '{"ordinal":0,"typeId":"core.transform"}',
        now,
        id,
        3,
        'node.completed',
        'echo',
        '{"ordinal":0}',
        now,
        id,
        4,
        'artifact.created',
        'echo',
        JSON.stringify(artifact),
        now,
        id,
        5,
        'run.completed',
        null,
        JSON.stringify({ outputs: { echo } }),
        now,
      );
      insertTask.run(id, 'default', 'local', contextId, msg.messageId, 'completed', null, now);
    },
    done: () => reply(task),
  });
}

/** One log event's six columns. */
const ev = (id: string, seq: number, type: string, node: string | null, payload: unknown, at: string) => [
  id,
  seq,
  type,
  node,
  JSON.stringify(payload),
  at,
];

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
      insertEvents8.run(
        ...ev(id, 0, 'a2a.message', null, { message: msg }, now),
        ...ev(id, 1, 'run.started', null, { workflowId: 'approval' }, now),
        ...ev(id, 2, 'node.started', 'draft', { ordinal: 0, typeId: 'core.transform' }, now),
        ...ev(id, 3, 'node.completed', 'draft', { ordinal: 0 }, now),
        ...ev(id, 4, 'node.started', 'review', { ordinal: 0 }, now),
        ...ev(id, 5, 'node.suspended', 'review', { kind: 'approval', interruptId }, now),
        ...ev(id, 6, 'approval.requested', 'review', { interruptId, ...gate }, now),
        ...ev(id, 7, 'interrupt.requested', 'review', { interruptId, kind: 'approval', key: `${id}:review:0` }, now),
      );
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
      insertEvents9.run(
        ...ev(taskId, seq, 'a2a.message', null, { message: msg, principalId: 'local' }, now),
        ...ev(taskId, seq + 1, 'approval.received', 'review', { decidedBy: 'local', action, decidedAt: now }, now),
        ...ev(
          taskId,
          seq + 2,
          'interrupt.resolved',
          'review',
          { kind: 'approval', outcome: action, resolvedAt: now },
          now,
        ),
        ...ev(taskId, seq + 3, 'node.resumed', 'review', { action }, now),
        ...ev(taskId, seq + 4, 'node.completed', 'review', { ordinal: 0, outcome: action }, now),
        ...ev(taskId, seq + 5, 'node.started', 'final', { ordinal: 0, typeId: 'core.transform' }, now),
        ...ev(taskId, seq + 6, 'node.completed', 'final', { ordinal: 0 }, now),
        ...ev(taskId, seq + 7, 'artifact.created', 'final', { artifactId: 'final', name: 'Publish', data: final }, now),
        ...ev(taskId, seq + 8, 'run.completed', null, { outputs: { final } }, now),
      );
      insertReply.run('default', 'local', msg.messageId, taskId);
      updateTask.run('completed', null, now, taskId);
    },
    done: () => reply(getTask(taskId) as Json),
  });
}

function getTask(id: string): Json | undefined {
  const row = taskAndRun.get(id, 'default') as TaskRow | undefined;
  if (!row) return undefined;
  const events = taskEvents.all(id) as Array<{ type: string; payload: string }>;
  const artifacts = [];
  const history = [];
  for (const e of events) {
    const p = JSON.parse(e.payload) as Json;
    if (e.type === 'a2a.message') history.push(p.message);
    else artifacts.push({ artifactId: p.artifactId, parts: [{ kind: 'data', data: p.data }], name: p.name });
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
