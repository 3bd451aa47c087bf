/**
 * The library as the benchmarks use it: by package name (`oncely`, `oncely/node`), i.e.
 * the built `dist/`. Where an entry does not export a piece yet (work in progress), the
 * built file is imported directly and a note says so.
 */
// Types from the sources, so that type-checking needs no build; values from dist/.
import type { FileStore as FileStoreClass, FileStoreOptions } from '../node/file-store.ts';
import type * as Core from '../src/index.ts';

export const notes: string[] = [];

async function importFirst<T>(what: string, candidates: string[], has: (m: T) => boolean): Promise<T> {
  const failures: string[] = [];
  for (const specifier of candidates) {
    try {
      const m = (await import(specifier)) as T;
      if (has(m)) {
        if (specifier !== candidates[0])
          notes.push(`${what} loaded from ${specifier} (not exported by ${candidates[0]})`);
        return m;
      }
      failures.push(`${specifier}: no ${what}`);
    } catch (error) {
      failures.push(`${specifier}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`cannot load ${what}: ${failures.join('; ')}`);
}

export const oncely: typeof Core = await importFirst<typeof Core>(
  'createClient',
  ['oncely', '../dist/src/index.js'],
  (m) => typeof m.createClient === 'function' && typeof m.MemoryStore === 'function',
);

type FileStoreModule = {
  FileStore: typeof FileStoreClass;
  openFileStore?: (options?: FileStoreOptions) => Promise<FileStoreClass>;
};
const fileStoreModule = await importFirst<FileStoreModule>(
  'FileStore',
  ['oncely/node', '../dist/node/file-store.js'],
  (m) => typeof m.FileStore === 'function',
);

export const { FileStore } = fileStoreModule;
export type FileStore = FileStoreClass;

/** A disk store in `dir`, opened (directories made) before it is timed. */
export async function openDiskStore(dir: string, options: { fsync?: boolean } = {}): Promise<FileStoreClass> {
  const store = new FileStore({ dir, ...options });
  await store.open();
  return store;
}
