import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IdbStore } from '../browser/idb-store.js';
import { CorruptRecordError } from '../src/errors.js';
import type { IntentRecord, StoreEvent } from '../src/store/store.js';

const NOW = 5_000_000;
const open: IdbStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((store) => store.close()));
});

function tab(factory: IDBFactory): { store: IdbStore; events: StoreEvent[] } {
  const store = new IdbStore({ indexedDB: factory, now: () => NOW });
  open.push(store);
  const events: StoreEvent[] = [];
  store.subscribe((event) => events.push(event));
  return { store, events };
}

function record(name: string, key: string, extra: Partial<IntentRecord> = {}): IntentRecord {
  return { v: 1, scope: 'u1', name, key, state: 'ready', attempts: 0, createdAt: 1_000, updatedAt: 1_000, ...extra };
}

/** Writes `value` straight into the object store, as a bug, an old version or another library might. */
async function writeRaw(factory: IDBFactory, key: IDBValidKey, value: unknown): Promise<void> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = factory.open('oncely');
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  await new Promise<void>((resolve, reject) => {
    const tx = db.transaction('intents', 'readwrite');
    tx.objectStore('intents').put(value, key);
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error);
  });
  db.close();
}

async function storeWith(value: unknown, name = 'pay') {
  const factory = new IDBFactory();
  const tabA = tab(factory);
  await tabA.store.probe();
  await writeRaw(factory, ['u1', name], value);
  return { factory, ...tabA };
}

describe('IdbStore quarantine: a corrupt record with a readable key', () => {
  const damaged = { ...record('pay', 'k-sent'), state: 'exploded', attempts: 'two', fingerprint: 'fp' };

  it('keeps the key (state unknown), moves the raw value aside and reports it once', async () => {
    const { store, events } = await storeWith(damaged);
    const claim = await store.claim(record('pay', 'k-new'));
    expect(claim.created).toBe(false);
    expect(claim.record).toMatchObject({ key: 'k-sent', state: 'unknown', attempts: 0, createdAt: 1_000 });
    expect(claim.record.fingerprint).toBe('fp');
    expect(events).toEqual([
      {
        type: 'quarantine',
        reason: expect.stringMatching(/^invalid intent record: state: .*its key was kept/),
        location: expect.stringMatching(/^indexeddb:oncely\/intents\/\[\["quarantine"\],"u1","pay",/),
        scope: 'u1',
        name: 'pay',
      },
    ]);
    const quarantined = await store.listQuarantined('u1');
    expect(quarantined).toHaveLength(1);
    expect(quarantined[0]).toMatchObject({ name: 'pay', salvagedKey: 'k-sent', value: damaged, at: NOW });
    expect(quarantined[0]!.location).toBe((events[0] as { location: string }).location);
    // Settled: later reads see the salvaged record and report nothing new.
    expect((await store.get('u1', 'pay'))?.key).toBe('k-sent');
    expect(events).toHaveLength(1);
  });

  it('treats an unreadable or future createdAt as expired (0), never as fresh', async () => {
    for (const createdAt of ['yesterday', NOW + 1, -5]) {
      const { store } = await storeWith({ ...damaged, createdAt });
      expect((await store.get('u1', 'pay'))?.createdAt).toBe(0);
    }
  });

  it('two tabs meeting it at once quarantine it once and agree on the key', async () => {
    const { factory, store, events } = await storeWith(damaged);
    const other = tab(factory);
    const [a, b] = await Promise.all([store.claim(record('pay', 'k-a')), other.store.claim(record('pay', 'k-b'))]);
    expect([a.record.key, b.record.key]).toEqual(['k-sent', 'k-sent']);
    expect(events.length + other.events.length).toBe(1);
    expect(await store.listQuarantined()).toHaveLength(1);
  });
});

describe('IdbStore quarantine: a corrupt record without a usable key', () => {
  for (const [label, value] of [
    ['a string', 'garbage'],
    ['a record with a numeric key', { ...record('pay', 'x'), key: 42 }],
    ['a record of another intent', record('other', 'k-other')],
  ] as const) {
    it(`${label}: claim throws CorruptRecordError, never mints a new key, until the intent is deleted`, async () => {
      const { store, events } = await storeWith(value);
      const error = await store.claim(record('pay', 'k-new')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptRecordError);
      expect(error).toMatchObject({ code: 'CORRUPT_RECORD', scope: 'u1', intent: 'pay' });
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'quarantine', reason: expect.stringMatching(/no usable key/) });
      expect((error as CorruptRecordError).location).toBe((events[0] as { location: string }).location);

      // Still blocked on every path, with no second report.
      await expect(store.claim(record('pay', 'k-newer'))).rejects.toBeInstanceOf(CorruptRecordError);
      await expect(store.get('u1', 'pay')).rejects.toBeInstanceOf(CorruptRecordError);
      await expect(store.update('u1', 'pay', (r) => r)).rejects.toBeInstanceOf(CorruptRecordError);
      expect(await store.list('u1')).toEqual([]);
      await store.delete('u1', 'pay', 'k-new');
      await expect(store.claim(record('pay', 'k-new'))).rejects.toBeInstanceOf(CorruptRecordError);
      expect(events).toHaveLength(1);
      expect((await store.listQuarantined('u1'))[0]?.value).toEqual(value);

      // The app reconciled and forms the intent afresh.
      await store.delete('u1', 'pay');
      expect(await store.claim(record('pay', 'k-new'))).toMatchObject({ created: true, record: { key: 'k-new' } });
      expect(await store.listQuarantined('u1')).toHaveLength(1);
      await store.clear('u1');
      expect(await store.listQuarantined('u1')).toEqual([]);
    });
  }
});

describe('IdbStore quarantine on bulk reads', () => {
  it('list and sweep settle corrupt records they meet and never crash', async () => {
    const { factory, store, events } = await storeWith({ ...record('a', 'k-a'), state: 42 }, 'a');
    await writeRaw(factory, ['u1', 'b'], null);
    await store.claim(record('c', 'k-c', { state: 'succeeded' }));
    const listed = await store.list('u1');
    expect(listed.map((r) => `${r.name}:${r.key}:${r.state}`).sort()).toEqual(['a:k-a:unknown', 'c:k-c:succeeded']);
    expect(events.map((e) => e.type === 'quarantine' && e.name).sort()).toEqual(['a', 'b']);

    await writeRaw(factory, ['u1', 'd'], { v: 7 });
    expect(await store.sweep('u1', Number.MAX_SAFE_INTEGER)).toBe(1); // c; the salvaged `a` is unknown, kept
    expect(events.map((e) => e.type === 'quarantine' && e.name).sort()).toEqual(['a', 'b', 'd']);
    expect((await store.get('u1', 'a'))?.key).toBe('k-a');
  });

  it('a throwing listener does not break the store; the error is reported on the console', async () => {
    const { store } = await storeWith({ ...record('pay', 'k'), state: 'x' });
    store.subscribe(() => {
      throw new Error('listener bug');
    });
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect((await store.get('u1', 'pay'))?.key).toBe('k');
      expect(spy.mock.calls.some((args) => args.some((a) => a instanceof Error && a.message === 'listener bug'))).toBe(
        true,
      );
    } finally {
      spy.mockRestore();
    }
  });
});
