/** lazyStore: every Store call waits for the store being opened, then goes to it as a method call. */
import { describe, expect, it } from 'vitest';
import { lazyStore } from '../src/store/lazy-store.js';
import { MemoryStore } from '../src/store/memory-store.js';
import type { IntentRecord } from '../src/store/store.js';

const record = (name: string): IntentRecord => ({
  v: 1,
  scope: 's',
  name,
  key: `k-${name}`,
  state: 'ready',
  attempts: 0,
  createdAt: 1,
  updatedAt: 1,
});

describe('lazyStore', () => {
  it('forwards every call, with its arguments and `this`, once the store is open', async () => {
    let open!: (store: MemoryStore) => void;
    const lazy = lazyStore(new Promise((resolve) => (open = resolve)));
    const claimed = lazy.claim(record('a'), { durability: 'relaxed' });
    open(new MemoryStore());
    expect(await claimed).toMatchObject({ created: true, record: { key: 'k-a' } });
    expect(await lazy.get('s', 'a')).toMatchObject({ key: 'k-a' });
    expect(await lazy.update('s', 'a', (r) => r && { ...r, state: 'succeeded', updatedAt: 2 })).toMatchObject({
      state: 'succeeded',
    });
    await lazy.claim(record('b'));
    expect((await lazy.list('s', ['ready'])).map((r) => r.name)).toEqual(['b']);
    expect(await lazy.sweep('s', 10 ** 12)).toBe(2);
    await lazy.claim(record('c'));
    await lazy.delete('s', 'c', 'other');
    expect(await lazy.get('s', 'c')).toBeDefined();
    await lazy.clear('s');
    expect(await lazy.list('s')).toEqual([]);
    await lazy.close?.();
  });

  it('rejects every call with the opening failure, and closes quietly', async () => {
    const lazy = lazyStore(Promise.reject(new Error('no disk')));
    await expect(lazy.get('s', 'a')).rejects.toThrow('no disk');
    await expect(lazy.claim(record('a'))).rejects.toThrow('no disk');
    await expect(lazy.close?.()).resolves.toBeUndefined();
  });
});
