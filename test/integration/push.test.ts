// Push notifications through the in-process host (inject) and a real loopback HTTPS receiver:
// registration refusals and tenancy of push configs, what is stored (fingerprint in the record,
// tokens only encrypted, discarded after the final push), cancellation by delete, the dead letter
// and the operator retry, and the RFC 0100 push-config seam. Runs on SQLite, and on PostgreSQL
// when HANDOFF_TEST_PG_URL is set. Nothing waits by sleeping: every wait polls a condition
// (receiver log, delivery state, table row) until a deadline.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type A2AClient,
  assertRpcError,
  assertRpcResult,
  assertSchema,
  dataMessage,
  skillMessage,
  startA2ATeam,
  validateTaskState,
} from '../support/a2a.js';
import { loadHostKey, Vault } from '../../src/push/vault.js';
import { DIALECTS, type Json, type TestHost } from '../support/host.js';
import {
  type Behaviour,
  type HttpsReceiver,
  type ReceivedRequest,
  startHttpsReceiver,
} from '../support/https-receiver.js';
import { until } from '../support/until.js';

/** One receiver, many endpoints: each test owns a path and its behaviour, and reads its own log. */
interface Hit {
  at: number;
  deliveryId: string;
  headers: ReceivedRequest['headers'];
  body: string;
  status: number | 'reset';
}
class Router {
  private readonly routes = new Map<string, (req: ReceivedRequest, n: number) => Behaviour>();
  readonly hits = new Map<string, Hit[]>();
  constructor(readonly rx: HttpsReceiver) {
    rx.behave((req) => {
      const route = this.routes.get(req.path);
      const log = this.hits.get(req.path) ?? [];
      this.hits.set(req.path, log);
      const b = route ? route(req, log.length) : { status: 404 };
      log.push({
        at: Date.now(),
        deliveryId: String(req.headers['x-handoff-delivery-id']),
        headers: req.headers,
        body: req.body,
        status: b.reset ? 'reset' : (b.status ?? 200),
      });
      return b;
    });
  }
  /** A fresh endpoint; `answer` decides each response (the n-th request of this path, from 0). */
  endpoint(name: string, answer: (req: ReceivedRequest, n: number) => Behaviour = () => ({ status: 200 })) {
    const path = `/hook/${name}-${randomUUID().slice(0, 8)}`;
    this.routes.set(path, answer);
    return {
      url: this.rx.urlFor('127.0.0.1', path),
      log: () => this.hits.get(path) ?? [],
      answer: (a: (req: ReceivedRequest, n: number) => Behaviour) => this.routes.set(path, a),
    };
  }
}

for (const dialect of DIALECTS) {
  describe(`A2A push notifications (${dialect})`, () => {
    let t: TestHost;
    let alice: A2AClient;
    let eve: A2AClient;
    let rx: HttpsReceiver;
    let router: Router;
    let caDir: string;

    before(async () => {
      rx = await startHttpsReceiver();
      router = new Router(rx);
      caDir = mkdtempSync(join(tmpdir(), 'handoff-push-ca-'));
      writeFileSync(join(caDir, 'ca.pem'), rx.caPem);
      ({ t, alice, eve } = await startA2ATeam(dialect, {
        HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8',
        HANDOFF_PUSH_CA_FILE: join(caDir, 'ca.pem'),
        // Long enough that a failed attempt stays pending for the whole test.
        HANDOFF_PUSH_RETRY_SCHEDULE: '30s,30s',
        HANDOFF_TEST_SEAMS: '1',
      }));
      t.host.pushWorker.start();
    });
    after(async () => {
      await t?.close();
      await rx?.close();
      if (caDir) rmSync(caDir, { recursive: true, force: true });
    });

    // ---------------------------------------------------------------- helpers

    const inline = (url: string, token?: string, id?: string) => ({
      configuration: { pushNotificationConfig: { url, ...(token ? { token } : {}), ...(id ? { id } : {}) } },
    });
    async function deliveries(client: A2AClient, query: string): Promise<Json[]> {
      const res = await t.get(`/v1/a2a/deliveries?${query}`, client.headers);
      assert.equal(res.status, 200, res.text);
      return res.body.deliveries as Json[];
    }
    /** Wait until the task's deliveries satisfy `pred`; returns them (oldest first). */
    async function waitDeliveries(taskId: string, what: string, pred: (ds: Json[]) => boolean): Promise<Json[]> {
      return until(what, async () => {
        const ds = (await deliveries(alice, `taskId=${taskId}`)).reverse();
        return pred(ds) ? ds : undefined;
      });
    }
    const configRow = (taskId: string, configId = taskId) =>
      t.host.store.db
        .selectFrom('push_configs')
        .selectAll()
        .where('task_id', '=', taskId)
        .where('config_id', '=', configId)
        .executeTakeFirst();
    const secretRow = (secretId: string) =>
      t.host.store.db.selectFrom('secrets').selectAll().where('secret_id', '=', secretId).executeTakeFirst();
    const decide = (task: Json, action: string, extra: Record<string, unknown> = {}) =>
      dataMessage({ action, ...extra }, { taskId: task.id, contextId: task.contextId });

    // ---------------------------------------------------------------- registration

    it('an inline config with a refused URL on message/send is -32602 and starts no run', async () => {
      const ep = router.endpoint('refused');
      const refused: Array<[string, string]> = [
        ['https://10.0.0.5/push', 'address'],
        ['https://[::1]/push', 'address'],
        [`https://localhost:${rx.port}/hook`, 'address'],
        ['https://metadata.google.internal/x', 'address'],
        [ep.url.replace('https:', 'http:'), 'scheme'],
        ['ftp://127.0.0.1/x', 'scheme'],
        ['not a url', 'parse'],
      ];
      const runs = await t.host.store.runs.count();
      const tasks = (await t.get('/v1/a2a/tasks', alice.headers)).body.tasks.length;
      for (const [url, arm] of refused) {
        const res = await alice.send(skillMessage('approval', 'should not start'), inline(url, 'tok-x'));
        const err = assertRpcError(res, -32602, res.body.id);
        assert.equal(err.data?.arm, arm, `${url}: ${res.text}`);
        assert.ok(!res.text.includes('tok-x'), res.text);
      }
      assert.equal(await t.host.store.runs.count(), runs, 'a run was started');
      assert.equal((await t.get('/v1/a2a/tasks', alice.headers)).body.tasks.length, tasks);
      assert.equal(
        (
          await t.host.store.db
            .selectFrom('push_configs')
            .select('task_id')
            .where(
              'url',
              'in',
              refused.map(([u]) => u),
            )
            .execute()
        ).length,
        0,
      );
      assert.equal(ep.log().length, 0);
    });

    it('an allowlisted IP literal is accepted inline; \
the config is registered in the creating transaction', async () => {
      const ep = router.endpoint('inline-ok');
      const task = await alice.sendOk(skillMessage('echo', 'hi'), inline(ep.url, 'tok-inline'));
      assert.equal(task.status.state, 'completed');
      // echo completes inside the creating transaction: the completed push exists only if the
      // config was already registered there.
      const [d] = await waitDeliveries(
        task.id,
        'the completed push',
        (ds) => ds.length === 1 && ds[0].state === 'delivered',
      );
      assert.equal(d.final, true);
      const [hit] = ep.log();
      assert.equal(JSON.parse(hit!.body).status.state, 'completed');
    });

    it('push-config methods on a foreign task look exactly like an unknown task (-32001)', async () => {
      const ep = router.endpoint('foreign');
      const task = await alice.sendOk(skillMessage('approval', 'alice only'), inline(ep.url, 'tok-alice'));
      const calls: Array<[string, (id: string) => unknown]> = [
        [
          'tasks/pushNotificationConfig/set',
          (id) => ({ taskId: id, pushNotificationConfig: { url: ep.url, token: 'tok-eve' } }),
        ],
        ['tasks/pushNotificationConfig/get', (id) => ({ id })],
        ['tasks/pushNotificationConfig/get', (id) => ({ id, pushNotificationConfigId: id })],
        ['tasks/pushNotificationConfig/list', (id) => ({ id })],
        ['tasks/pushNotificationConfig/delete', (id) => ({ id, pushNotificationConfigId: id })],
      ];
      for (const [method, params] of calls) {
        const foreign = await eve.rpc(method, params(task.id), 7);
        const unknown = await eve.rpc(method, params('run_0000unknown'), 7);
        assertRpcError(foreign, -32001, 7);
        assertRpcError(unknown, -32001, 7);
        assert.equal(foreign.text.replaceAll(task.id, 'X'), unknown.text.replaceAll('run_0000unknown', 'X'), method);
      }
      // Nothing of eve's landed; alice's config is intact.
      const row = await configRow(task.id);
      assert.ok(row);
      assert.equal(row.tenant_id, 't1');
      assert.equal(row.url, ep.url);
      const list = assertRpcResult(await alice.rpc('tasks/pushNotificationConfig/list', { id: task.id })) as Json[];
      assert.equal(list.length, 1);
      await alice.sendOk(decide(task, 'accept'));
    });

    it('delete is idempotent: an existing config twice, and a config that never existed', async () => {
      const ep = router.endpoint('delete');
      const task = await alice.sendOk(skillMessage('approval', 'delete me'));
      assertRpcResult(
        await alice.rpc('tasks/pushNotificationConfig/set', {
          taskId: task.id,
          pushNotificationConfig: { id: 'c1', url: ep.url, token: 'tok-del' },
        }),
      );
      const secret = (await configRow(task.id, 'c1'))!.token_secret!;
      assert.ok(await secretRow(secret));
      for (let i = 0; i < 2; i++) {
        assert.equal(
          assertRpcResult(
            await alice.rpc('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'c1' }),
          ),
          null,
        );
      }
      assert.equal(
        assertRpcResult(
          await alice.rpc('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'never' }),
        ),
        null,
      );
      assert.deepEqual(assertRpcResult(await alice.rpc('tasks/pushNotificationConfig/list', { id: task.id })), []);
      assert.equal(await configRow(task.id, 'c1'), undefined);
      assert.equal(await secretRow(secret), undefined, 'the deleted config left its token behind');
      await alice.sendOk(decide(task, 'accept'));
    });

    it('several configs: each gets its own delivery, and each credential goes only to its own URL', async () => {
      const a = router.endpoint('multi-a');
      const b = router.endpoint('multi-b');
      const task = await alice.sendOk(skillMessage('approval', 'two receivers'), inline(a.url, 'tok-a'));
      assertRpcResult(
        await alice.rpc('tasks/pushNotificationConfig/set', {
          taskId: task.id,
          pushNotificationConfig: {
            id: 'second',
            url: b.url,
            authentication: { schemes: ['Basic'], credentials: 'dXNlcjpwdw==' },
          },
        }),
      );
      await alice.sendOk(decide(task, 'accept'));
      const ds = await waitDeliveries(
        task.id,
        'input-required to a, completed to both',
        (x) => x.length === 3 && x.every((d) => d.state === 'delivered'),
      );
      assert.deepEqual(ds.map((d) => d.configId).sort(), [task.id, task.id, 'second'].sort());
      assert.deepEqual(
        a.log().map((h) => JSON.parse(h.body).status.state),
        ['input-required', 'completed'],
      );
      assert.deepEqual(
        b.log().map((h) => JSON.parse(h.body).status.state),
        ['completed'],
      );
      for (const h of a.log()) {
        assert.equal(h.headers['x-a2a-notification-token'], 'tok-a');
        assert.equal(h.headers.authorization, 'Bearer tok-a');
      }
      const [hb] = b.log();
      assert.equal(hb!.headers['x-a2a-notification-token'], undefined);
      assert.equal(hb!.headers.authorization, 'Basic dXNlcjpwdw==');
      assert.notEqual(hb!.deliveryId, a.log()[1]!.deliveryId, 'one delivery id per (config, transition)');
      assert.equal(hb!.body, a.log()[1]!.body, 'the same event to every config');
    });

    it('each config is pushed in the version it was registered in (0.3 body, 1.0 StreamResponse), \
with A2A-Version on every delivery', async () => {
      const old = router.endpoint('v03');
      const v1 = router.endpoint('v10');
      const task = await alice.sendOk(skillMessage('approval', 'two versions'), inline(old.url, 'tok-old'));
      const created = await t.request(
        'POST',
        '/v1/a2a',
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'CreateTaskPushNotificationConfig',
          params: {
            taskId: task.id,
            id: 'v1',
            url: v1.url,
            token: 'tok-v1',
            authentication: { scheme: 'Bearer', credentials: 'cred-v1' },
          },
        },
        { ...alice.headers, 'a2a-version': '1.0' },
      );
      assert.deepEqual(created.body.result, {
        id: 'v1',
        taskId: task.id,
        url: v1.url,
        authentication: { scheme: 'Bearer' },
      });
      await alice.sendOk(decide(task, 'accept'));
      await waitDeliveries(
        task.id,
        'three deliveries',
        (x) => x.length === 3 && x.every((d) => d.state === 'delivered'),
      );
      for (const h of old.log()) {
        assert.equal(h.headers['a2a-version'], '0.3');
        assert.equal(h.headers['content-type'], 'application/json');
        assert.equal(h.headers.authorization, 'Bearer tok-old');
        assert.equal(JSON.parse(h.body).kind, 'status-update');
      }
      assert.equal(JSON.parse(old.log().at(-1)!.body).final, true);
      const [hit] = v1.log();
      assert.equal(hit!.headers['a2a-version'], '1.0');
      assert.equal(hit!.headers['content-type'], 'application/a2a+json');
      assert.equal(hit!.headers.authorization, 'Bearer cred-v1');
      const body = JSON.parse(hit!.body);
      assert.deepEqual(Object.keys(body), ['statusUpdate']);
      assert.equal(body.statusUpdate.taskId, task.id);
      assert.equal(body.statusUpdate.contextId, task.contextId);
      assert.equal(body.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
      assert.equal('final' in body.statusUpdate, false);
    });

    it('a failed task pushes `failed` (final) without the error text', async () => {
      const ep = router.endpoint('failed');
      const reason = `reason-${randomUUID()}`;
      const task = await alice.sendOk(
        {
          kind: 'message',
          role: 'user',
          messageId: `m-${randomUUID()}`,
          parts: [{ kind: 'data', data: { reason } }],
          metadata: { skillId: 'fail' },
        },
        inline(ep.url, 'tok-f'),
      );
      assert.equal(task.status.state, 'failed');
      await waitDeliveries(task.id, 'the failed push', (ds) => ds.length === 1 && ds[0].state === 'delivered');
      const [hit] = ep.log();
      const body = JSON.parse(hit!.body);
      assert.equal(body.status.state, 'failed');
      assert.equal(body.final, true);
      assert.ok(!hit!.body.includes(reason) && !hit!.body.includes('on purpose'), hit!.body);
    });

    // The reply's read tells the push step whether the task has configs: one registered after the
    // task started, or by the reply itself, must still be pushed.
    it('a config set on a waiting task, or inline on the reply, gets the reply’s `completed` push', async () => {
      for (const how of ['set', 'inline'] as const) {
        const ep = router.endpoint(`reply-${how}`);
        const task = await alice.sendOk(skillMessage('approval', 'please approve'));
        assert.equal(task.status.state, 'input-required');
        if (how === 'set') {
          const set = await alice.rpc('tasks/pushNotificationConfig/set', {
            taskId: task.id,
            pushNotificationConfig: { url: ep.url, token: 'tok-set' },
          });
          assertRpcResult(set);
        }
        const done = await alice.sendOk(decide(task, 'accept'), how === 'inline' ? inline(ep.url, 'tok-in') : {});
        assert.equal(done.status.state, 'completed');
        const ds = await waitDeliveries(
          task.id,
          `the ${how} push`,
          (d) => d.length === 1 && d[0].state === 'delivered',
        );
        assert.equal(ds.length, 1);
        assert.equal(JSON.parse(ep.log()[0]!.body).status.state, 'completed', how);
      }
    });

    it('an inline config on a reply that is refused registers nothing', async () => {
      const ep = router.endpoint('refused-reply');
      const task = await alice.sendOk(skillMessage('echo', 'done'));
      assert.equal(task.status.state, 'completed');
      const res = await alice.send(decide(task, 'accept'), inline(ep.url, 'tok-refused'));
      assert.ok(res.body.error, res.text);
      assert.deepEqual(assertRpcResult(await alice.rpc('tasks/pushNotificationConfig/list', { id: task.id })), []);
      assert.equal(await configRow(task.id), undefined);
    });

    // ---------------------------------------------------------------- what is stored

    it('the A2ATaskState shows pushConfig {url, tokenFingerprint ≤ 32} and never the token; \
tokens are only stored encrypted', async () => {
      const ep = router.endpoint('stored');
      const token = `tok-${randomUUID()}`;
      const task = await alice.sendOk(skillMessage('approval', 'at rest'), inline(ep.url, token));
      assert.equal(task.status.state, 'input-required');
      assert.ok(!JSON.stringify(task).includes(token));

      const record = await alice.record(task.id);
      assertSchema(validateTaskState, record, 'record with pushConfig');
      assert.deepEqual(Object.keys(record.pushConfig).sort(), ['tokenFingerprint', 'url']);
      assert.equal(record.pushConfig.url, ep.url);
      const fp = String(record.pushConfig.tokenFingerprint);
      assert.ok(fp.length > 0 && fp.length <= 32, fp);
      assert.ok(!token.includes(fp) && !fp.includes(token));
      assert.ok(!JSON.stringify(record).includes(token));
      // The same through the seam read and the list of tasks.
      const seam = await t.get(`/v1/host/sample/a2a/tasks/${task.id}`, alice.headers);
      assert.equal(seam.status, 200);
      assert.deepEqual(seam.body.pushConfig, record.pushConfig);
      assert.ok(!(await t.get('/v1/a2a/tasks', alice.headers)).text.includes(token));
      for (const method of ['tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list']) {
        const res = await alice.rpc(method, { id: task.id });
        assertRpcResult(res);
        assert.ok(!res.text.includes(token), `${method}: ${res.text}`);
      }

      // At rest: the config holds a reference, the vault row a ciphertext that is not the token.
      const row = (await configRow(task.id))!;
      assert.match(String(row.token_secret), /^sec_/);
      assert.equal(row.token_fingerprint, fp);
      assert.ok(!JSON.stringify(row).includes(token), JSON.stringify(row));
      const secret = (await secretRow(row.token_secret!))!;
      assert.ok(secret);
      for (const form of [token, Buffer.from(token).toString('base64'), Buffer.from(token).toString('hex')]) {
        assert.ok(!secret.ciphertext.includes(form), 'the vault holds the token in clear');
      }
      // …and it is the token, encrypted under the host key (the key file in the data dir).
      const vault = new Vault(loadHostKey(undefined, join(t.config.dataDir, 'secret.key')));
      assert.equal(vault.open(secret.ciphertext), token);
      assert.throws(() => new Vault(Buffer.alloc(32, 7)).open(secret.ciphertext), 'another key cannot open it');
      const events = JSON.stringify(await t.events(task.id, alice.headers));
      assert.ok(!events.includes(token), 'the token is in the event log');
      if (dialect === 'sqlite') {
        // Nowhere in the database files at all (main file and WAL).
        const files = readdirSync(t.config.dataDir).filter((f) => f.startsWith('handoff.db'));
        assert.ok(files.length > 0);
        for (const f of files)
          assert.ok(!readFileSync(join(t.config.dataDir, f)).includes(Buffer.from(token)), `${f} contains the token`);
      }
      await alice.sendOk(decide(task, 'accept'));
    });

    it('set with the same id replaces the config and deletes the old secret', async () => {
      const ep = router.endpoint('replace');
      const task = await alice.sendOk(skillMessage('approval', 'replace'));
      const set = (token: string) =>
        alice.rpc('tasks/pushNotificationConfig/set', {
          taskId: task.id,
          pushNotificationConfig: { url: ep.url, token },
        });
      assertRpcResult(await set('tok-one'));
      const first = (await configRow(task.id))!;
      assertRpcResult(await set('tok-two'));
      const second = (await configRow(task.id))!;
      assert.notEqual(first.token_secret, second.token_secret);
      assert.notEqual(first.token_fingerprint, second.token_fingerprint);
      assert.equal(await secretRow(first.token_secret!), undefined);
      assert.ok(await secretRow(second.token_secret!));
      await alice.sendOk(decide(task, 'accept'));
      const [hit] = await until('the completed push', () => ep.log().length >= 1 && ep.log());
      assert.equal(hit!.headers['x-a2a-notification-token'], 'tok-two');
    });

    it("after the final push is delivered the config's secrets are discarded (token_secret null)", async () => {
      const ep = router.endpoint('discard');
      const task = await alice.sendOk(skillMessage('approval', 'discard'), inline(ep.url, 'tok-discard'));
      const secret = (await configRow(task.id))!.token_secret!;
      await waitDeliveries(task.id, 'the input-required push', (ds) => ds.length === 1 && ds[0].state === 'delivered');
      // Not final yet: the token must still be there for the next push.
      assert.equal((await configRow(task.id))!.token_secret, secret);
      assert.ok(await secretRow(secret));

      await alice.sendOk(decide(task, 'accept'));
      await waitDeliveries(
        task.id,
        'the completed push',
        (ds) => ds.length === 2 && ds.every((d) => d.state === 'delivered'),
      );
      const row = await until('the secrets to be discarded', async () => {
        const r = await configRow(task.id);
        return r && r.token_secret === null ? r : undefined;
      });
      assert.equal(row.credentials_secret, null);
      assert.equal(await secretRow(secret), undefined);
      // The completed push still carried the token; the record still names the config.
      assert.deepEqual(
        ep.log().map((h) => h.headers['x-a2a-notification-token']),
        ['tok-discard', 'tok-discard'],
      );
      assert.equal((await alice.record(task.id)).pushConfig.url, ep.url);
    });

    it('a config set on an already-terminal task (no push will ever be owed) keeps no secret', async () => {
      const ep = router.endpoint('terminal');
      const task = await alice.sendOk(skillMessage('echo', 'done already'));
      assert.equal(task.status.state, 'completed');
      assertRpcResult(
        await alice.rpc('tasks/pushNotificationConfig/set', {
          taskId: task.id,
          pushNotificationConfig: { url: ep.url, token: 'tok-late' },
        }),
      );
      assert.equal((await deliveries(alice, `taskId=${task.id}`)).length, 0);
      const row = (await configRow(task.id))!;
      assert.equal(row.token_secret, null, 'the token of a config that can never be used is kept');
    });

    it('deleting a config cancels its pending deliveries (and the task goes on without it)', async () => {
      const ep = router.endpoint('cancel', () => ({ status: 503 }));
      const task = await alice.sendOk(skillMessage('approval', 'cancel'), inline(ep.url, 'tok-cancel'));
      // The first attempt failed (503): the delivery waits ~15–30 s for its retry.
      const [pending] = await waitDeliveries(
        task.id,
        'a failed first attempt',
        (ds) => ds.length === 1 && ds[0].attempts === 1 && ds[0].state === 'pending',
      );
      assert.equal(pending.lastStatus, 503);
      assert.equal(ep.log().length, 1);

      assert.equal(
        assertRpcResult(
          await alice.rpc('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: task.id }),
        ),
        null,
      );
      const after = await deliveries(alice, `taskId=${task.id}`);
      assert.deepEqual(
        after.map((d) => [d.deliveryId, d.state]),
        [[pending.deliveryId, 'cancelled']],
      );
      assert.equal((await deliveries(alice, `taskId=${task.id}&state=cancelled`)).length, 1);
      assert.equal((await deliveries(alice, `taskId=${task.id}&state=pending`)).length, 0);

      // The task completes; with no config, its completion owes no delivery.
      const done = await alice.sendOk(decide(task, 'accept'));
      assert.equal(done.status.state, 'completed');
      assert.deepEqual(
        (await deliveries(alice, `taskId=${task.id}`)).map((d) => d.state),
        ['cancelled'],
      );
      assert.equal((await alice.record(task.id)).pushConfig, undefined);
    });

    // ---------------------------------------------------------------- dead letter and retry

    it('a permanent refusal (400) is dead at once; retry → pending → delivered with the same id; 409 after; \
404 unknown and foreign', async () => {
      const ep = router.endpoint('dead', () => ({ status: 400 }));
      const task = await alice.sendOk(skillMessage('echo', 'dead'), inline(ep.url));
      const [dead] = await waitDeliveries(
        task.id,
        'a dead delivery',
        (ds) => ds.length === 1 && ds[0].state === 'dead',
      );
      assert.equal(dead.attempts, 1);
      assert.equal(dead.lastStatus, 400);
      assert.match(dead.lastError, /http_status/);
      assert.equal(dead.nextAttemptAt, null);
      assert.equal(ep.log().length, 1);
      // The task is untouched by the failed push.
      assert.equal((await alice.getTask(task.id)).status.state, 'completed');

      const listed = await deliveries(alice, `state=dead&taskId=${task.id}`);
      assert.deepEqual(
        listed.map((d) => d.deliveryId),
        [dead.deliveryId],
      );
      assert.ok((await deliveries(alice, 'state=dead')).some((d) => d.deliveryId === dead.deliveryId));
      // Another tenant neither sees nor retries it; an unknown id is the same 404.
      assert.ok(!(await deliveries(eve, 'state=dead')).some((d) => d.deliveryId === dead.deliveryId));
      assert.equal((await deliveries(eve, `taskId=${task.id}`)).length, 0);
      const foreign = await t.post(`/v1/a2a/deliveries/${dead.deliveryId}/retry`, undefined, eve.headers);
      const unknown = await t.post('/v1/a2a/deliveries/dlv_unknown/retry', undefined, alice.headers);
      assert.equal(foreign.status, 404, foreign.text);
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(foreign.body.error, 'not_found');
      assert.equal((await deliveries(alice, `taskId=${task.id}`))[0].state, 'dead');

      ep.answer(() => ({ status: 204 }));
      const retried = await t.post(`/v1/a2a/deliveries/${dead.deliveryId}/retry`, undefined, alice.headers);
      assert.equal(retried.status, 200, retried.text);
      assert.equal(retried.body.deliveryId, dead.deliveryId);
      assert.equal(retried.body.state, 'pending');
      assert.equal(retried.body.attempts, 0);
      const [done] = await waitDeliveries(task.id, 'the retried delivery', (ds) => ds[0]?.state === 'delivered');
      assert.equal(done.attempts, 1);
      assert.equal(done.lastStatus, 204);
      assert.deepEqual(
        ep.log().map((h) => [h.deliveryId, h.status]),
        [
          [dead.deliveryId, 400],
          [dead.deliveryId, 204],
        ],
      );
      assert.equal(ep.log()[0]!.body, ep.log()[1]!.body, 'a retry sends the same body');

      const again = await t.post(`/v1/a2a/deliveries/${dead.deliveryId}/retry`, undefined, alice.headers);
      assert.equal(again.status, 409, again.text);
      assert.equal(again.body.error, 'delivery_not_dead');
      // The audit log has the retry by hand (once: the refused ones changed nothing), and the
      // inline config it was registered with.
      const audit = await t.get(`/v1/audit?runId=${task.id}`, alice.headers);
      assert.deepEqual(
        audit.body.entries.map((e: Json) => [e.act, e.surface, e.values.deliveryId ?? e.values.configId]),
        [
          ['push-config.set', 'a2a', task.id],
          ['delivery.retry', 'rest', dead.deliveryId],
        ],
      );
    });

    it('an operator retry of a dead-lettered final push still carries the token', async () => {
      const ep = router.endpoint('dead-token', () => ({ status: 404 }));
      const task = await alice.sendOk(skillMessage('echo', 'dead token'), inline(ep.url, 'tok-dead'));
      const [dead] = await waitDeliveries(
        task.id,
        'a dead delivery',
        (ds) => ds.length === 1 && ds[0].state === 'dead',
      );
      assert.equal(ep.log()[0]!.headers['x-a2a-notification-token'], 'tok-dead');
      ep.answer(() => ({ status: 200 }));
      const retried = await t.post(`/v1/a2a/deliveries/${dead.deliveryId}/retry`, undefined, alice.headers);
      assert.equal(retried.status, 200, retried.text);
      await waitDeliveries(task.id, 'the retried delivery', (ds) => ds[0]?.state === 'delivered');
      const hit = ep.log()[1]!;
      assert.equal(hit.headers['x-a2a-notification-token'], 'tok-dead');
      assert.equal(hit.headers.authorization, 'Bearer tok-dead');
    });

    it('the worker does not spin while the only due row is in flight', async () => {
      // Count the worker's passes while one attempt is held open by the receiver for 1.5 s.
      const worker = t.host.pushWorker as unknown as { pass: () => Promise<void> };
      const original = worker.pass;
      let passes = 0;
      let counting = false;
      worker.pass = function (this: unknown) {
        if (counting) passes++;
        return original.call(this);
      };
      try {
        const ep = router.endpoint('spin', () => ({ status: 200, delayMs: 1500 }));
        const task = await alice.sendOk(skillMessage('echo', 'spin'), inline(ep.url));
        await until('the attempt to reach the receiver', () => ep.log().length >= 1);
        counting = true;
        await waitDeliveries(task.id, 'the held attempt to finish', (ds) => ds[0]?.state === 'delivered');
        counting = false;
        // pollMs is 1 s: an idle-but-waiting worker needs at most a few passes in 1.5 s.
        assert.ok(passes <= 5, `${passes} worker passes during one 1.5 s attempt`);
      } finally {
        worker.pass = original;
      }
    });

    it('the worker does not spin while a due row is blocked behind its predecessor’s backoff', async () => {
      const ep = router.endpoint('blocked', () => ({ status: 503 }));
      const task = await alice.sendOk(skillMessage('approval', 'blocked'), inline(ep.url));
      await waitDeliveries(
        task.id,
        'the first attempt to fail',
        (ds) => ds.length === 1 && ds[0].attempts === 1 && ds[0].state === 'pending',
      );
      await alice.sendOk(decide(task, 'accept'));
      await waitDeliveries(task.id, 'the completed row, blocked', (ds) => ds.length === 2);
      const worker = t.host.pushWorker as unknown as { pass: () => Promise<void> };
      const original = worker.pass;
      let passes = 0;
      worker.pass = function (this: unknown) {
        passes++;
        return original.call(this);
      };
      try {
        // A rate, measured over a fixed window (nothing is synchronised by this wait).
        await new Promise((r) => setTimeout(r, 1000));
      } finally {
        worker.pass = original;
        await alice.rpc('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: task.id });
      }
      assert.ok(passes <= 3, `${passes} worker passes in 1 s with nothing claimable (pollMs is 1 s)`);
    });

    it('a receiver’s Retry-After is honoured only up to the schedule’s longest step (30 s), not for 31 years', async () => {
      const LONGEST_STEP_MS = 30_000; // HANDOFF_PUSH_RETRY_SCHEDULE above
      for (const retryAfter of ['999999999', 'Fri, 31 Dec 9999 23:59:59 GMT']) {
        const ep = router.endpoint('retry-after', () => ({ status: 503, headers: { 'retry-after': retryAfter } }));
        const task = await alice.sendOk(skillMessage('echo', 'slow down'), inline(ep.url));
        const [pending] = await waitDeliveries(
          task.id,
          'the 503 recorded',
          (ds) => ds.length === 1 && ds[0].attempts === 1 && ds[0].state === 'pending',
        );
        // Recorded after the receiver answered (hit.at) and before now: the Retry-After, cut to the step.
        const next = Date.parse(pending.nextAttemptAt);
        const answeredAt = ep.log()[0]!.at;
        assert.ok(
          next - answeredAt >= LONGEST_STEP_MS,
          `Retry-After ${retryAfter}: next attempt ${next - answeredAt} ms on`,
        );
        assert.ok(next <= Date.now() + LONGEST_STEP_MS, `Retry-After ${retryAfter}: ${pending.nextAttemptAt}`);
        assert.equal(pending.lastStatus, 503);
        await alice.rpc('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: task.id });
      }
    });

    it('GET /v1/a2a/deliveries validates its query', async () => {
      assert.equal((await t.get('/v1/a2a/deliveries?state=bogus', alice.headers)).status, 400);
      assert.equal((await t.get('/v1/a2a/deliveries?limit=0', alice.headers)).status, 400);
      assert.equal((await t.get('/v1/a2a/deliveries?other=1', alice.headers)).status, 400);
    });

    // ---------------------------------------------------------------- the RFC 0100 seam

    it('seam push-config: denied URL → 400 before any task lookup; allowed + unknown → 404; existing \
→ 200 with the record', async () => {
      const ep = router.endpoint('seam');
      const seam = (body: unknown, client: A2AClient = alice) =>
        t.post('/v1/host/sample/a2a/tasks/push-config', body, client.headers);
      for (const url of [
        'https://10.1.2.3/push',
        'http://push.example.com/x',
        `https://localhost:${rx.port}/x`,
        'https://169.254.169.254/latest',
      ]) {
        const res = await seam({ taskId: 'run_x', url });
        assert.equal(res.status, 400, `${url}: ${res.text}`);
        assert.equal(res.body.error, 'a2a_push_egress_denied');
      }
      assert.equal((await seam({ taskId: 'run_x' })).status, 400);
      const unknown = await seam({ taskId: 'run_x', url: ep.url });
      assert.equal(unknown.status, 404, unknown.text);

      const started = await t.post(
        '/v1/host/sample/a2a/tasks/start',
        { scenario: 'paused-at-approval' },
        alice.headers,
      );
      assert.equal(started.status, 201, started.text);
      const taskId = started.body.taskId as string;
      assert.equal((await seam({ taskId, url: ep.url }, eve)).status, 404, 'a foreign task is unknown');
      const ok = await seam({ taskId, url: ep.url, tokenFingerprint: 'ignored' });
      assert.equal(ok.status, 200, ok.text);
      assertSchema(validateTaskState, ok.body, 'seam record');
      assert.equal(ok.body.taskId, taskId);
      assert.equal(ok.body.state, 'input-required');
      assert.deepEqual(ok.body.pushConfig, { url: ep.url });
      assert.deepEqual((await alice.record(taskId)).pushConfig, { url: ep.url });
      const list = assertRpcResult(await alice.rpc('tasks/pushNotificationConfig/list', { id: taskId })) as Json[];
      assert.deepEqual(
        list.map((c) => c.pushNotificationConfig.url),
        [ep.url],
      );
      // The seam registered a real config: cancelling the task pushes `canceled` to it.
      assertRpcResult(await alice.rpc('tasks/cancel', { id: taskId }));
      const [hit] = await until('the canceled push', () => ep.log().length >= 1 && ep.log());
      const body = JSON.parse(hit!.body);
      assert.equal(body.status.state, 'canceled');
      assert.equal(body.final, true);
      assert.equal(hit!.headers['x-a2a-notification-token'], undefined);
      assert.equal(hit!.headers.authorization, undefined);
    });
  });
}
