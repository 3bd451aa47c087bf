/**
 * `FileStore.sweep` is bounded and incremental: each call examines at most `sweepBatch`
 * record files, streaming the listings, and the next call goes on where it stopped. The
 * file system is wrapped (`vi.mock`) to count what a sweep opens and lists, and to act
 * at the exact moment a sweep checks a file.
 */
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openFileStore } from '../node/file-store.js';
import type { IntentRecord, IntentState } from '../src/store/store.js';
import { recordPath, tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord } from './store-conformance.js';

type Hook = (file: string) => Promise<void> | void;

const probe = vi.hoisted(() => ({
  /** Every path opened (`open`, `readFile`), listed whole (`readdir`) or streamed (`opendir`). */
  opened: [] as string[],
  readdir: [] as string[],
  opendir: [] as string[],
  /** Runs before a file is opened / stat'ed, once per path. */
  beforeOpen: new Map<string, Hook>(),
  beforeStat: new Map<string, Hook>(),
}));

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const once = async (hooks: Map<string, Hook>, file: unknown) => {
    const hook = hooks.get(String(file));
    hooks.delete(String(file));
    await hook?.(String(file));
  };
  return {
    ...real,
    open: async (...args: Parameters<typeof real.open>) => {
      probe.opened.push(String(args[0]));
      await once(probe.beforeOpen, args[0]);
      return real.open(...args);
    },
    readFile: (async (...args: Parameters<typeof real.readFile>) => {
      probe.opened.push(String(args[0]));
      await once(probe.beforeOpen, args[0]);
      return real.readFile(...args);
    }) as typeof real.readFile,
    readdir: ((...args: Parameters<typeof real.readdir>) => {
      probe.readdir.push(String(args[0]));
      return real.readdir(...args);
    }) as typeof real.readdir,
    opendir: (...args: Parameters<typeof real.opendir>) => {
      probe.opendir.push(String(args[0]));
      return real.opendir(...args);
    },
    stat: (async (...args: Parameters<typeof real.stat>) => {
      await once(probe.beforeStat, args[0]);
      return real.stat(...args);
    }) as typeof real.stat,
  };
});

const cleanups: (() => Promise<void>)[] = [];
beforeEach(() => {
  probe.beforeOpen.clear();
  probe.beforeStat.clear();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const T0 = 1.7e12;
const OLD = T0 + 1_000;
const LIMIT = T0 + 5_000;

async function setup(sweepBatch: number) {
  const { dir, remove } = await tempStoreDir();
  cleanups.push(remove);
  const open = async () => {
    const store = await openFileStore({ dir, fsync: false, sweepBatch });
    cleanups.push(() => store.close());
    return store;
  };
  return { dir, store: await open(), open };
}

/** Runs one sweep; says which record files it opened and which directories it listed. */
async function observe(run: () => Promise<number>, dir: string) {
  const scopes = path.join(dir, 'scopes');
  probe.opened.length = 0;
  probe.readdir.length = 0;
  probe.opendir.length = 0;
  const removed = await run();
  const files = new Set(probe.opened.filter((file) => file.startsWith(scopes) && file.endsWith('.jsonl')));
  return { removed, files, readdir: [...probe.readdir], opendir: [...probe.opendir] };
}

const old = (scope: string, name: string, state: IntentState, extra: Partial<IntentRecord> = {}) =>
  intentRecord(scope, name, { state, updatedAt: OLD, ...extra });

describe('FileStore sweep, bounded', () => {
  it('takes several calls when there are more records than sweepBatch, each examining at most that many', async () => {
    const { dir, store } = await setup(10);
    const all: string[] = [];
    for (const scope of ['u1', 'u2', 'u3']) {
      const records = [
        ...(['ready', 'succeeded', 'failed'] as const).flatMap((state) => [
          old(scope, `${state}-a`, state),
          old(scope, `${state}-b`, state),
        ]),
        old(scope, 'succeeded-c', 'succeeded'),
        old(scope, 'failed-c', 'failed'),
        old(scope, 'in_flight-a', 'in_flight'),
        old(scope, 'in_flight-b', 'in_flight', { updatedAt: 0 }),
        old(scope, 'unknown-a', 'unknown'),
        old(scope, 'unknown-b', 'unknown', { updatedAt: 0 }),
        intentRecord(scope, 'recent', { state: 'succeeded', updatedAt: LIMIT + 1 }),
        intentRecord(scope, 'edge', { state: 'failed', updatedAt: LIMIT }),
      ];
      for (const record of records) {
        await store.claim(record);
        all.push(recordPath(dir, scope, record.name));
      }
    }
    expect(all).toHaveLength(42);

    const calls = [];
    for (let i = 0; i < 5; i++) calls.push(await observe(() => store.sweep(LIMIT), dir));
    for (const call of calls) {
      expect(call.files.size).toBeLessThanOrEqual(10);
      expect(call.removed).toBeLessThanOrEqual(10);
      // Listings are streamed, never read whole.
      expect(call.readdir).toEqual([]);
      expect(call.opendir).toContain(path.join(dir, 'scopes'));
    }
    expect(calls.map((call) => call.files.size)).toEqual([10, 10, 10, 10, 2 + 8]);
    // The first four calls examine each file once; the fifth wraps around to the start.
    const firstCycle = calls.slice(0, 4).flatMap((call) => [...call.files]);
    expect(new Set(firstCycle).size).toBe(40);
    expect(new Set([...firstCycle, ...calls[4]!.files])).toEqual(new Set(all));
    expect(calls[0]!.removed).toBeLessThan(24);
    expect(calls.reduce((sum, call) => sum + call.removed, 0)).toBe(24);

    for (const scope of ['u1', 'u2', 'u3']) {
      expect((await store.list(scope)).map((record) => record.name).sort()).toEqual(
        ['edge', 'in_flight-a', 'in_flight-b', 'recent', 'unknown-a', 'unknown-b'].sort(),
      );
    }
    // Never in_flight or unknown, however many rounds.
    let more = 0;
    for (let i = 0; i < 4; i++) more += await store.sweep(Number.MAX_SAFE_INTEGER);
    expect(more).toBe(6);
    for (const scope of ['u1', 'u2', 'u3']) {
      expect(await store.list(scope, ['in_flight', 'unknown'])).toHaveLength(4);
    }
  });

  it('goes on where it stopped, wraps around, and finds records added behind it', async () => {
    const { dir, store, open } = await setup(5);
    for (let i = 0; i < 7; i++) await store.claim(old('u1', `busy-${i}`, 'in_flight'));
    const first = await observe(() => store.sweep(LIMIT), dir);
    const second = await observe(() => store.sweep(LIMIT), dir);
    expect([first.files.size, second.files.size]).toEqual([5, 5]);
    // The second call examined the 2 files left, then 3 from the start.
    expect(new Set([...first.files, ...second.files]).size).toBe(7);

    await store.claim(old('u1', 'late', 'succeeded'));
    const removed = [await store.sweep(LIMIT), await store.sweep(LIMIT)];
    expect(removed.reduce((a, b) => a + b)).toBe(1);
    expect(await store.get('u1', 'late')).toBeUndefined();

    // Each store keeps its own place: a new one starts from the beginning.
    const again = await open();
    expect((await observe(() => again.sweep(LIMIT), dir)).files.size).toBe(5);
  });

  it('sweeps everything in one call when fewer records than sweepBatch remain, wherever it stopped', async () => {
    const { store } = await setup(5);
    for (let i = 0; i < 7; i++) await store.claim(old('u1', `job-${i}`, 'in_flight'));
    await store.sweep(LIMIT); // stops midway
    for (let i = 0; i < 3; i++) await store.delete('u1', `job-${i}`);
    for (let i = 3; i < 7; i++) {
      await store.update('u1', `job-${i}`, (current) => current && { ...current, state: 'succeeded' });
    }
    expect(await store.sweep(LIMIT)).toBe(4);
    expect(await store.list('u1')).toEqual([]);
  });

  it('skips empty and missing scope directories', async () => {
    const { store } = await setup(3);
    for (const scope of ['a', 'b', 'c', 'd', 'e']) await store.claim(old(scope, 'x', 'ready'));
    for (const scope of ['a', 'b', 'c', 'd']) await store.delete(scope, 'x'); // leaves empty directories
    await store.clear('e');
    await store.claim(old('f', 'x', 'failed'));
    expect(await store.sweep(LIMIT)).toBe(1);
    expect(await store.sweep(LIMIT)).toBe(0);
  });

  it('runs overlapping calls one after the other, each on its own batch', async () => {
    const { store } = await setup(4);
    for (let i = 0; i < 8; i++) await store.claim(old('u1', `done-${i}`, 'succeeded'));
    expect(await Promise.all([store.sweep(LIMIT), store.sweep(LIMIT)])).toEqual([4, 4]);
    expect(await store.list('u1')).toEqual([]);
  });
});

describe('FileStore sweep, concurrent writes', () => {
  it('keeps a record updated in this process while the sweep was examining it', async () => {
    const { dir, store } = await setup(10);
    for (let i = 0; i < 6; i++) await store.claim(old('u1', `pay-${i}`, 'succeeded'));
    let update: Promise<IntentRecord | undefined> | undefined;
    // The moment the sweep reads pay-3 (and finds it old), the app sends it again.
    probe.beforeOpen.set(recordPath(dir, 'u1', 'pay-3'), () => {
      update = store.update(
        'u1',
        'pay-3',
        (current) => current && { ...current, state: 'in_flight', attempts: 1, updatedAt: LIMIT + 1 },
      );
    });
    expect(await store.sweep(LIMIT)).toBe(5);
    expect(await update).toMatchObject({ state: 'in_flight' });
    expect(await store.list('u1')).toEqual([expect.objectContaining({ name: 'pay-3', state: 'in_flight' })]);
  });

  it('keeps a record another process rewrote after the check, just before the removal', async () => {
    const { dir, store, open } = await setup(10);
    const other = await open();
    for (let i = 0; i < 6; i++) await store.claim(old('u1', `pay-${i}`, 'failed'));
    const file = recordPath(dir, 'u1', 'pay-2');
    // The sweep has read pay-2 again under its lock; the other store rewrites it before the unlink.
    probe.beforeStat.set(file, async () => {
      await other.update('u1', 'pay-2', (current) => current && { ...current, state: 'in_flight' });
    });
    expect(await store.sweep(LIMIT)).toBe(5);
    expect(probe.beforeStat.has(file)).toBe(false);
    expect(await store.list('u1')).toEqual([expect.objectContaining({ name: 'pay-2', state: 'in_flight' })]);
  });

  it('a keyed delete likewise keeps a record another process rewrote under it', async () => {
    const { dir, store, open } = await setup(10);
    const other = await open();
    await store.claim(old('u1', 'pay', 'succeeded', { key: 'k1' }));
    const file = recordPath(dir, 'u1', 'pay');
    probe.beforeStat.set(file, async () => {
      await other.update('u1', 'pay', (current) => current && { ...current, state: 'in_flight' });
    });
    await store.delete('u1', 'pay', 'k1');
    expect(await store.get('u1', 'pay')).toMatchObject({ key: 'k1', state: 'in_flight' });
    await store.delete('u1', 'pay', 'k1');
    expect(await store.get('u1', 'pay')).toBeUndefined();
  });

  it('never loses an update or a claim made while sweeps run', async () => {
    const { store } = await setup(7);
    const names = Array.from({ length: 60 }, (_, i) => `job-${i}`);
    for (const name of names) await store.claim(old('u1', name, 'succeeded'));
    const sweeps = Array.from({ length: 12 }, () => store.sweep(LIMIT));
    const updates = names.map((name, i) =>
      i % 2 === 0
        ? store.update('u1', name, (current) => current && { ...current, state: 'in_flight', updatedAt: LIMIT + 1 })
        : store.claim(intentRecord('u1', `${name}-new`, { updatedAt: LIMIT + 1 })).then(({ record }) => record),
    );
    const [updated, removed] = await Promise.all([Promise.all(updates), Promise.all(sweeps)]);
    // Finish the round: 90 files at most, 7 a call.
    for (let i = 0; i < 14; i++) removed.push(await store.sweep(LIMIT));
    const kept = new Map((await store.list('u1')).map((record) => [record.name, record]));
    for (const record of updated) {
      // An update that found nothing came after its record was swept; any other must be there.
      if (record) expect(kept.get(record.name)).toEqual(record);
    }
    const resent = updated.filter((record) => record?.state === 'in_flight').length;
    expect(kept.size).toBe(resent + 30);
    expect(removed.reduce((a, b) => a + b)).toBe(60 - resent);
  });
});
