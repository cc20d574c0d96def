// The direct runner's reads (src/store/connect.ts `rawReader`): rows fetched as arrays and made
// into objects by a function built from the column names must be the very objects better-sqlite3
// makes itself, whatever the names and values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { rawReader } from '../../src/store/connect.js';

describe('raw reads of the direct runner', () => {
  const db = new BetterSqlite3(':memory:');
  db.exec(`create table t ("id" integer primary key, "a b" text, "x""y" text, "n" real, "blob" blob, "nul" text)`);
  db.prepare('insert into t values (?, ?, ?, ?, ?, ?)').run(1, 'one', 'q"uote', 1.5, Buffer.from('hi'), null);
  db.prepare('insert into t values (?, ?, ?, ?, ?, ?)').run(2, 'two', '', -0.25, null, 'x');

  const same = (sql: string, ...params: unknown[]) => {
    const reader = rawReader(db, sql);
    assert.ok(reader, sql);
    const rows = (reader.stmt.all(...params) as unknown[][]).map(reader.row);
    assert.deepStrictEqual(rows, db.prepare(sql).all(...params), sql);
    return rows;
  };

  it('gives the rows object mode gives: odd names, every storage class, no rows', () => {
    assert.equal(same('select * from t order by id').length, 2);
    same('select "id", "a b" as "constructor", "x""y" as "toString", 1 as "0" from t where id = ?', 2);
    same('select * from t where id = ?', 3);
    same(`select 'a' as "back\\slash", 'b' as "new
line", 2 as "ü", null as "" from t`);
  });

  it('keeps the last of a repeated name, as object rows do', () => {
    const [row] = same('select 1 as a, 2 as a, 3 as b');
    assert.deepStrictEqual(row, { a: 2, b: 3 });
  });

  it('leaves a statement with a __proto__ column to object rows (a literal would set the prototype)', () => {
    assert.equal(rawReader(db, 'select 1 as "__proto__"'), undefined);
  });
});
