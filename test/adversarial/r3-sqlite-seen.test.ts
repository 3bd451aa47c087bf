/**
 * Round 3, SqliteStore.update() over the rows it remembers (`#seen`, keyed by scope and
 * name). Scopes and names are any well-formed Unicode, NUL included (the client checks no
 * more), so the cache's key must not let two (scope, name) pairs meet: an updater must
 * never be shown another scope's record (rule 8), nor fail because of one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../node/sqlite-store.js';
import type { IntentRecord } from '../../src/store/store.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';
import { intentRecord } from '../store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('r3: SqliteStore remembered rows', () => {
  it("an update is never shown another scope's record, whatever the scope and name hold", async () => {
    const { dir, remove } = await tempStoreDir();
    const store = new SqliteStore({ dir, fsync: false });
    cleanups.push(remove, () => store.close());
    // ('a\0b', 'c') and ('a', 'b\0c'): two intents of two scopes.
    await store.claim(intentRecord('a\u0000b', 'c', { key: 'key-of-tenant-a0b' }));
    await store.claim(intentRecord('a', 'b\u0000c', { key: 'key-of-tenant-a' }));
    const seen: (string | undefined)[] = [];
    const updated = await store.update('a\u0000b', 'c', (r?: IntentRecord) => {
      seen.push(r?.scope);
      return r && { ...r, attempts: r.attempts + 1 };
    });
    expect(seen).toEqual(['a\u0000b']); // was 'a': tenant a's record (and key), then InvalidArgumentError
    expect(updated?.key).toBe('key-of-tenant-a0b');
    expect((await store.get('a', 'b\u0000c'))?.attempts).toBe(0);
  });

  // Held: the conditional write compares the whole stored text (key included), so a row
  // deleted and formed again by another process under the same name refuses the stale handle.
  it('held: an update over a remembered row that another store deleted and formed again runs on the new row', async () => {
    const { dir, remove } = await tempStoreDir();
    const mine = new SqliteStore({ dir, fsync: false });
    const other = new SqliteStore({ dir, fsync: false });
    cleanups.push(
      remove,
      () => mine.close(),
      () => other.close(),
    );
    await mine.claim(intentRecord('s', 'x', { key: 'old-key' }));
    await other.delete('s', 'x');
    await other.claim(intentRecord('s', 'x', { key: 'new-key' }));
    const keys: (string | undefined)[] = [];
    const updated = await mine.update('s', 'x', (r?: IntentRecord) => {
      keys.push(r?.key);
      return r?.key === 'old-key' ? { ...r, state: 'in_flight' } : undefined;
    });
    expect(keys).toEqual(['old-key', 'new-key']);
    expect(updated).toMatchObject({ key: 'new-key', state: 'ready' });
    expect(await other.get('s', 'x')).toMatchObject({ key: 'new-key', state: 'ready' });
  });
});
