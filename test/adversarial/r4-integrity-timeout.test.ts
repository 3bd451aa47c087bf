/**
 * Round 4, `integrityCheck({ timeout })` is input: a timeout past what a timer can hold
 * (Infinity, "no bound", or over 2^31 - 1 ms) must not turn into 1 ms (Node clamps such
 * timers to 1 ms), and a timeout that is not a number of ms gets a typed error.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../node/sqlite-store.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function store() {
  const { dir, remove } = await tempStoreDir();
  const made = new SqliteStore({ dir, fsync: false });
  cleanups.push(remove, () => made.close());
  await made.open();
  return made;
}

describe('r4: integrityCheck timeout', () => {
  it('Infinity and 2^31 ms mean no bound a small file reaches: the check answers', async () => {
    const s = await store();
    expect(await s.integrityCheck({ timeout: Number.POSITIVE_INFINITY })).toEqual(['ok']);
    expect(await s.integrityCheck({ timeout: 2 ** 31 })).toEqual(['ok']);
  });

  it('a timeout that is not a number of ms is an InvalidArgumentError, before any check starts', async () => {
    const s = await store();
    for (const timeout of [Number.NaN, -1, '1000' as unknown as number]) {
      await expect(s.integrityCheck({ timeout })).rejects.toBeInstanceOf(InvalidArgumentError);
    }
  });
});
