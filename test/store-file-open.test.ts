import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openFileStore } from '../node/file-store.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord } from './store-conformance.js';

// Records every path the store lists, opens or reads, to show what opening it touches.
const touched = vi.hoisted(() => ({ readdir: [] as string[], open: [] as string[] }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...fs,
    readdir: ((dir: string, ...rest: never[]) => {
      touched.readdir.push(String(dir));
      return (fs.readdir as (...args: unknown[]) => unknown)(dir, ...rest);
    }) as typeof fs.readdir,
    open: ((file: string, ...rest: never[]) => {
      touched.open.push(String(file));
      return (fs.open as (...args: unknown[]) => unknown)(file, ...rest);
    }) as typeof fs.open,
    readFile: ((file: string, ...rest: never[]) => {
      touched.open.push(String(file));
      return (fs.readFile as (...args: unknown[]) => unknown)(file, ...rest);
    }) as typeof fs.readFile,
  };
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('FileStore growth', () => {
  it('opening lists only its temp and trash folders and opens no record, however many there are', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const first = await openFileStore({ dir, fsync: false });
    for (const scope of ['a', 'b', 'c']) {
      await Promise.all(Array.from({ length: 300 }, (_, i) => first.claim(intentRecord(scope, `n${i}`))));
    }
    await first.close();

    touched.readdir.length = 0;
    touched.open.length = 0;
    const second = await openFileStore({ dir });
    cleanups.push(() => second.close());
    await second.close(); // includes the background clean-up of trash/
    expect(touched.readdir.sort()).toEqual([path.join(dir, 'tmp'), path.join(dir, 'trash')].sort());
    expect(touched.open.filter((file) => file.includes(`${path.sep}scopes${path.sep}`))).toEqual([]);

    // A read opens the one file it needs; listing a scope lists only that scope's folder.
    touched.readdir.length = 0;
    touched.open.length = 0;
    expect((await second.get('b', 'n7'))?.key).toBe('key-b-n7');
    expect(touched.open).toHaveLength(1);
    expect(await second.list('c')).toHaveLength(300);
    expect(touched.readdir).toHaveLength(1);
  });
});
