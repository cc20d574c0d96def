// The durable floor: what the rows Handoff commits for one blocking echo `message/send` cost on
// their own. Fastify (Handoff's framework) and better-sqlite3 on Handoff's real schema (created by
// its own migrations) and SQLite settings, with nothing else: no engine, no Kysely, no hooks, no
// savepoints. Each send reads the idempotency index and writes exactly what Handoff writes for an
// echo task: the run row, its 6 log events and its A2ATaskState row, committed (one COMMIT per
// event-loop turn, like Handoff's group commit) before the reply. tasks/get reads them back (the
// task+run join, then the task's message and artifact events) and builds the Task.
//
// No server that keeps the same durable log can spend less on those writes than this, so a Handoff
// cost near this floor means its own code is no longer what is expensive.
//
//   node dist/bench/baselines/sqlite-floor-server.js --port 4102     (echo skill only)
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import Fastify from 'fastify';
import { openStore } from '../../src/store/connect.js';
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
  'select t.context_id, t.state, t.updated_at, r.workflow_id, r.status from a2a_tasks ' +
    't join runs r on r.run_id = t.task_id where t.task_id = ? and t.tenant_id = ?',
);
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
  const id = `run_${randomUUID()}`;
  const contextId = `ctx_${randomUUID()}`;
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

function getTask(id: string): Json | undefined {
  const row = taskAndRun.get(id, 'default') as
    | { context_id: string; state: string; updated_at: string; workflow_id: string; status: string }
    | undefined;
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
  skills: [{ id: 'echo' }],
}));
app.post('/a2a/jsonrpc', (req, reply) => {
  const rpc = JSON.parse(String(req.body)) as {
    id: unknown;
    method: string;
    params: { message?: Message; id?: string };
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
  if (rpc.params.message.metadata?.skillId !== 'echo') return fail(-32602, 'this floor serves the echo skill only');
  echoSend(rpc.params.message, answer);
});
await app.listen({ port, host: '127.0.0.1' });
