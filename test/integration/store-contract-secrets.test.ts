// The store contract: the secrets repository: ciphertexts by reference. Run on SQLite, and on
// PostgreSQL when HANDOFF_TEST_PG_URL is set (test/support/store-contract.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Clock, storeContract } from '../support/store-contract.js';

storeContract(({ sharedStore }) => {
  describe('secrets', () => {
    const clock = new Clock();
    const store = sharedStore(clock);

    it('put keeps a ciphertext under a new reference; get reads it; delete removes the named ones', async () => {
      const [a, b] = await store().transaction(async (tx) => [
        await tx.secrets.put('v1:nonce:ciphertext-a'),
        await tx.secrets.put('v1:nonce:ciphertext-b'),
      ]);
      assert.match(a, /^sec_/);
      assert.notEqual(a, b);
      assert.equal(await store().secrets.get(a), 'v1:nonce:ciphertext-a');
      assert.equal(await store().secrets.get(b), 'v1:nonce:ciphertext-b');
      assert.equal(await store().secrets.get('sec_unknown'), undefined);
      await store().transaction((tx) => tx.secrets.delete([a, undefined, 'sec_unknown']));
      assert.equal(await store().secrets.get(a), undefined);
      assert.equal(await store().secrets.get(b), 'v1:nonce:ciphertext-b', 'only the named secret goes');
      await store().transaction((tx) => tx.secrets.delete([undefined]));
      assert.equal(await store().secrets.get(b), 'v1:nonce:ciphertext-b');
    });

    it('a secret put in a failed transaction is not kept', async () => {
      let ref: string | undefined;
      await assert.rejects(
        store().transaction(async (tx) => {
          ref = await tx.secrets.put('ciphertext');
          throw new Error('abort');
        }),
        /abort/,
      );
      assert.ok(ref);
      assert.equal(await store().secrets.get(ref), undefined);
    });
  });
});
