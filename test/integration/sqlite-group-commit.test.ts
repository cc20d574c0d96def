// SQLite's group commit as the database sees it: the statements each group runs (BEGIN, COMMIT,
// ROLLBACK go straight to the connection, and are counted), what a failing member or a failing
// COMMIT leaves behind, and that no other query runs inside a group's transaction. The outcomes
// every store owes are in the store contract (test/integration/store-contract-*.test.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { openStore } from '../../src/store/connect.js';
import { newRun } from '../support/runs.js';
import type { NewRun, RunChange, Store, StoreTx } from '../../src/store/store.js';

const CONTROL = new Set(['begin', 'savepoint', 'release', 'rollback', 'commit']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('SQLite group commit', () => {
  let dir: string;
  let store: Store;
  /** Every statement's kind, in order; every COMMIT's count of transactions; every change heard. */
  const ops: string[] = [];
  const groups: number[] = [];
  const heard: string[] = [];
  /** Told of each statement before it runs (a test's way to act between two of them). */
  let beforeStatement: ((op: string) => void) | undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'handoff-group-'));
    store = await openStore({
      sqliteFile: join(dir, 'handoff.db'),
      onStatement: (op) => {
        ops.push(op);
        beforeStatement?.(op);
      },
      onGroupCommit: (n) => groups.push(n),
    });
    store.setPipeline({
      steps: [],
      listeners: [
        { name: 'test', committed: (changes: RunChange[]) => heard.push(...changes.map((c) => c.run.runId)) },
      ],
    });
  });
  after(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Start `fns` as transactions in one turn (one group); their outcomes and the statements run. */
  async function group(fns: Array<() => Promise<unknown>>) {
    ops.length = 0;
    groups.length = 0;
    heard.length = 0;
    const outcomes = await Promise.allSettled(fns.map((fn) => fn()));
    return { outcomes, control: ops.filter((op) => CONTROL.has(op)) };
  }

  /** Run `attempt` until its statements are `expected` (a busy machine may close a group early: its
   * time budget), at most five times; the last try's control statements are asserted. */
  async function asGrouped(expected: string[], attempt: () => Promise<string[]>): Promise<void> {
    let control: string[] = [];
    for (let i = 0; i < 5; i++) {
      control = await attempt();
      if (control.join() === expected.join()) break;
    }
    assert.deepEqual(control, expected);
  }

  it('a member that fails after writing is undone by a rollback and a replay of the members before it', async () => {
    await asGrouped(
      [
        'begin', // the first member fails after writing, with nothing before it: all of it is undone
        'rollback',
        'begin', // the second succeeds
        'rollback', // the third fails after writing: everything goes…
        'begin', // …and the second's writes are run again; the group commits what it has
        'commit',
        'begin', // the fourth was left for the next group
        'commit',
      ],
      async () => {
        const runs = [newRun(), newRun(), newRun(), newRun()];
        const { outcomes, control } = await group(
          runs.map(
            (run, i) => () =>
              store.transaction(async (tx) => {
                await tx.insertRun(run, [{ type: 'run.started' }]);
                if (i === 0 || i === 2) throw new Error(`abort ${i}`);
                return i;
              }),
          ),
        );
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['rejected', 'fulfilled', 'rejected', 'fulfilled'],
        );
        assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /abort 2/);
        for (const [i, run] of runs.entries()) {
          const stored = await store.runs.get(run.runId);
          assert.equal(stored !== undefined, i === 1 || i === 3, `run ${i}`);
          assert.equal((await store.events.list(run.runId)).length, i === 1 || i === 3 ? 1 : 0, `events of run ${i}`);
        }
        assert.deepEqual(heard.sort(), [runs[1]?.runId, runs[3]?.runId].sort());
        return control;
      },
    );
    assert.deepEqual(groups, [1, 1], 'each COMMIT carried the one that succeeded before it');
  });

  it('a member that fails before writing anything needs no undo: the group goes on', async () => {
    await asGrouped(['begin', 'commit'], async () => {
      const first = newRun();
      const last = newRun();
      const { outcomes, control } = await group([
        () => store.transaction((tx) => tx.insertRun(first, [])),
        () =>
          store.transaction(async (tx) => {
            assert.ok(await tx.getRun(first.runId), 'it reads what the member before it wrote');
            throw new Error('refused');
          }),
        // A write that fails (a duplicate key) is undone by SQLite itself: nothing to undo either.
        () => store.transaction((tx) => tx.insertRun(first, [])),
        () => store.transaction((tx) => tx.insertRun(last, [])),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
      );
      assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /UNIQUE/);
      assert.ok(await store.runs.get(first.runId));
      assert.ok(await store.runs.get(last.runId));
      return control;
    });
    assert.deepEqual(groups, [2]);
  });

  it('the replay runs every write of the members before: their Kysely statements and fixed ones', async () => {
    let secret = '';
    const run = newRun();
    const failing = newRun();
    await asGrouped(['begin', 'rollback', 'begin', 'commit'], async () => {
      const { outcomes, control } = await group([
        () =>
          store.transaction(async (tx) => {
            await tx.insertRun(run, [{ type: 'run.started' }]); // fixed statements
            secret = await tx.secrets.put('ciphertext'); // a built query, through Kysely
          }),
        () =>
          store.transaction(async (tx) => {
            await tx.insertRun(failing, []);
            throw new Error('abort');
          }),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'rejected'],
      );
      // What ran after the rollback: the first member's three writes again, a look at whether any
      // other connection wrote meanwhile (this file is shared: data_version), then the COMMIT.
      assert.deepEqual(ops.slice(ops.lastIndexOf('rollback') + 1), [
        'begin',
        'insert',
        'insert',
        'insert',
        'pragma',
        'commit',
      ]);
      return control;
    });
    assert.ok(await store.runs.get(run.runId));
    assert.equal((await store.events.list(run.runId)).length, 1);
    assert.equal(await store.secrets.get(secret), 'ciphertext');
    assert.equal(await store.runs.get(failing.runId), undefined);
  });

  /** A transaction inserting `run` that `then` goes on from (a failure it throws, or a catch). */
  const inserting = (run: NewRun, then?: (tx: StoreTx) => Promise<unknown>) => () =>
    store.transaction(async (tx) => {
      await tx.insertRun(run, [{ type: 'run.started' }]);
      return then?.(tx);
    });

  it('a replay refuses to commit when another connection wrote between the ROLLBACK and it', async () => {
    const other = new BetterSqlite3(join(dir, 'handoff.db'));
    other.pragma('busy_timeout = 5000');
    try {
      const [kept, failing] = [newRun(), newRun()];
      let rolledBack = false;
      beforeStatement = (op) => {
        if (op === 'rollback') rolledBack = true;
        // Just before the replay's BEGIN: another process's commit, as it could land there.
        if (op === 'begin' && rolledBack) {
          rolledBack = false;
          other.prepare("insert into secrets (secret_id, ciphertext, created_at) values ('other', 'x', 'now')").run();
        }
      };
      const { outcomes } = await group([
        inserting(kept),
        inserting(failing, async () => {
          throw new Error('abort');
        }),
      ]);
      assert.equal(outcomes[0]?.status, 'rejected');
      assert.match(String((outcomes[0] as PromiseRejectedResult).reason), /another connection wrote/);
      assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /abort/);
      assert.equal(await store.runs.get(kept.runId), undefined, 'nothing of the group committed');
      assert.equal(await store.secrets.get('other'), 'x', 'the other connection’s write stands');
    } finally {
      beforeStatement = undefined;
      other.close();
    }
  });

  it('a replay that fails fails the whole group, and the next transaction commits', async () => {
    const [kept, failing, next] = [newRun(), newRun(), newRun()];
    let rolledBack = false;
    beforeStatement = (op) => {
      if (op === 'rollback') rolledBack = true;
      if (op === 'insert' && rolledBack) {
        rolledBack = false;
        throw new Error('disk gone during the replay');
      }
    };
    try {
      const { outcomes } = await group([
        inserting(kept),
        inserting(failing, async () => {
          throw new Error('abort');
        }),
      ]);
      assert.match(String((outcomes[0] as PromiseRejectedResult).reason), /disk gone during the replay/);
      assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /abort/);
    } finally {
      beforeStatement = undefined;
    }
    assert.equal(await store.runs.get(kept.runId), undefined);
    await store.transaction((tx) => tx.insertRun(next, []));
    assert.ok(await store.runs.get(next.runId), 'the connection is out of the failed transaction');
  });

  describe('when SQLite itself ends the transaction (RAISE(ROLLBACK) in a trigger)', () => {
    before(async () => {
      await sql`create temp trigger end_transaction after insert on main.runs when new.workflow_id = 'ends'
        begin select raise(rollback, 'ended by a trigger'); end`.execute(store.db);
    });
    after(async () => {
      await sql`drop trigger temp.end_transaction`.execute(store.db);
    });

    it('the members before it fail with it; the rest commit in a new transaction', async () => {
      await asGrouped(['begin', 'begin', 'commit'], async () => {
        const [before, ends, after] = [newRun(), newRun({ workflowId: 'ends' }), newRun()];
        const { outcomes, control } = await group([inserting(before), inserting(ends), inserting(after)]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['rejected', 'rejected', 'fulfilled'],
        );
        const lost = (outcomes[0] as PromiseRejectedResult).reason as Error;
        assert.match(lost.message, /SQLite ended the group's transaction/);
        assert.match(String(lost.cause), /ended by a trigger/);
        assert.equal(await store.runs.get(before.runId), undefined);
        assert.equal(await store.runs.get(ends.runId), undefined);
        assert.ok(await store.runs.get(after.runId));
        return control;
      });
    });

    it('a member that catches the error writes nothing more, and fails its group', async () => {
      const [ends, later] = [newRun({ workflowId: 'ends' }), newRun()];
      const { outcomes } = await group([
        inserting(ends),
        () =>
          store.transaction(async (tx) => {
            await tx.insertRun(later, []);
          }),
      ]);
      // The first member alone: SQLite's rollback undid it, so it failed and nothing else is lost.
      assert.equal(outcomes[0]?.status, 'rejected');
      assert.equal(outcomes[1]?.status, 'fulfilled');
      const [first, caught, after] = [newRun(), newRun({ workflowId: 'ends' }), newRun()];
      const refused: unknown[] = [];
      const { outcomes: again } = await group([
        inserting(first),
        () =>
          store.transaction(async (tx) => {
            try {
              await tx.insertRun(caught, []);
            } catch {
              // It goes on as if nothing happened: its next write must not commit on its own.
            }
            try {
              await tx.secrets.put('after the end');
            } catch (err) {
              refused.push(err);
            }
          }),
        inserting(after),
      ]);
      assert.match(String(refused[0]), /SQLite ended this transaction/);
      assert.deepEqual(
        again.map((o) => o.status),
        ['rejected', 'rejected', 'fulfilled'],
      );
      assert.equal(await store.runs.get(first.runId), undefined, 'nothing committed on its own');
      assert.ok(await store.runs.get(after.runId));
    });
  });

  it('a lone failing transaction is rolled back and nothing is committed', async () => {
    const run = newRun();
    const { outcomes, control } = await group([
      () =>
        store.transaction(async (tx) => {
          await tx.insertRun(run, []);
          throw new Error('abort');
        }),
    ]);
    assert.equal(outcomes[0]?.status, 'rejected');
    assert.deepEqual(control, ['begin', 'rollback']);
    assert.deepEqual(groups, []);
    assert.equal(await store.runs.get(run.runId), undefined);
  });

  it('a failing COMMIT rejects every member, commits none, and the next transaction commits', async () => {
    // A deferred foreign key is checked at COMMIT: a trigger makes one member's run violate it.
    await sql`create temp table commit_parent (id text primary key)`.execute(store.db);
    await sql`create temp table commit_child (id text references commit_parent (id) deferrable initially deferred)`.execute(
      store.db,
    );
    await sql`create temp trigger fail_at_commit after insert on main.runs when new.workflow_id = 'fails-at-commit'
      begin insert into commit_child values ('missing'); end`.execute(store.db);
    try {
      await asGrouped(['begin', 'commit', 'rollback'], async () => {
        const runs = [newRun(), newRun({ workflowId: 'fails-at-commit' }), newRun()];
        const { outcomes, control } = await group(
          runs.map((run) => () => store.transaction((tx) => tx.insertRun(run, [{ type: 'run.started' }]))),
        );
        for (const outcome of outcomes) {
          assert.equal(outcome.status, 'rejected');
          assert.match(String((outcome as PromiseRejectedResult).reason), /FOREIGN KEY/);
        }
        assert.deepEqual(groups, [], 'no COMMIT succeeded');
        assert.deepEqual(heard, [], 'no listener heard of a change');
        for (const run of runs) assert.equal(await store.runs.get(run.runId), undefined);
        return control;
      });
      const next = newRun();
      await store.transaction((tx) => tx.insertRun(next, []));
      assert.ok(await store.runs.get(next.runId), 'the connection is out of the failed transaction');
    } finally {
      await sql`drop trigger temp.fail_at_commit`.execute(store.db);
    }
  });

  it("a member's Kysely statements run in the group's transaction; no other query runs inside it", async () => {
    const countSecrets = async () =>
      Number(
        (
          await store.db
            .selectFrom('secrets')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const secretsBefore = await countSecrets();
    const run = newRun();
    let inside!: () => void;
    const opened = new Promise<void>((resolve) => {
      inside = resolve;
    });
    const order: string[] = [];
    const failing = store
      .transaction(async (tx) => {
        await tx.insertRun(run, []); // a fixed statement, straight on the connection
        const secret = await tx.secrets.put('ciphertext'); // a built query, through Kysely
        assert.equal(await tx.secrets.get(secret), 'ciphertext', 'the transaction reads its own write');
        inside();
        await sleep(30); // other work gets the event loop meanwhile
        throw new Error('abort');
      })
      .catch(() => order.push('transaction failed'));
    await opened;
    const [secrets, stored] = await Promise.all([
      countSecrets().then((n) => {
        order.push('Kysely read');
        return n;
      }),
      store.runs.get(run.runId).then((r) => {
        order.push('fixed read');
        return r;
      }),
    ]);
    await failing;
    assert.equal(order[0], 'transaction failed', `the reads waited for the transaction: ${order.join(', ')}`);
    assert.equal(secrets, secretsBefore, 'the read did not see the uncommitted secret');
    assert.equal(stored, undefined, 'nor the uncommitted run');
  });
});

// The group's time budget, on a clock the members move: each member "works" for a given number
// of milliseconds, so where a group closes depends on the rule alone, not on this machine's speed.
describe('SQLite group commit: the time budget', () => {
  let dir: string;
  let store: Store;
  let clock = 0;
  const groups: number[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'handoff-group-budget-'));
    store = await openStore({
      sqliteFile: join(dir, 'handoff.db'),
      onGroupCommit: (n) => groups.push(n),
      groupClock: () => clock,
    });
  });
  after(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** `n` transactions requested in one turn, each inserting a run and working `ms` on the clock. */
  async function requested(n: number, ms: number): Promise<number[]> {
    groups.length = 0;
    const runs = Array.from({ length: n }, () => newRun());
    await Promise.all(
      runs.map((run) =>
        store.transaction(async (tx) => {
          await tx.insertRun(run, [{ type: 'run.started' }]);
          clock += ms;
        }),
      ),
    );
    for (const run of runs) assert.ok(await store.runs.get(run.runId), 'every transaction committed');
    return [...groups];
  }

  it('transactions queued together share one COMMIT while their work stays under 25 ms', async () => {
    // Ten members of 2 ms each: a 3 ms budget made five commits of two under load, each leaving
    // the rest queued for another COMMIT.
    assert.deepEqual(await requested(10, 2), [10]);
  });

  it('a group closes once its members have worked 25 ms; the rest commit in the next group', async () => {
    // 10 + 10 = 20 ms < 25: a third member joins; at 30 ms the group closes.
    assert.deepEqual(await requested(5, 10), [3, 2]);
  });
});
