// Encrypted caller secrets (push tokens and credentials), stored by reference. The ciphertext is
// made and opened by the vault (src/push/vault.ts); this table only keeps it.
import { v7 as uuidv7 } from 'uuid';
import { Repo } from './repo.js';

export class Secrets extends Repo {
  /** Keep a ciphertext; returns its reference. */
  async put(ciphertext: string): Promise<string> {
    const secretId = `sec_${uuidv7()}`;
    await this.db
      .insertInto('secrets')
      .values({ secret_id: secretId, ciphertext, created_at: this.now().toISOString() })
      .execute();
    return secretId;
  }

  async get(secretId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('secrets')
      .select('ciphertext')
      .where('secret_id', '=', secretId)
      .executeTakeFirst();
    return row?.ciphertext;
  }

  async delete(secretIds: Array<string | undefined>): Promise<void> {
    const ids = secretIds.filter((x): x is string => typeof x === 'string');
    if (ids.length > 0) await this.db.deleteFrom('secrets').where('secret_id', 'in', ids).execute();
  }
}
