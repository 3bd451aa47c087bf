import { del, get } from 'idb-keyval';
import { CorruptRecordError } from '../src/errors.js';
import {
  corruptRecordError,
  type QuarantineEntry,
  type QuarantineMarker,
  readSlot,
} from '../src/store/corrupt-records.js';
import { StoreListeners } from '../src/store/listeners.js';
import { intentId, isPending, isSweepable } from '../src/store/record-rules.js';
import { parseRecord, validRecord } from '../src/store/record-schema.js';
import type {
  ClaimResult,
  DeleteOptions,
  IntentRecord,
  IntentState,
  ObservableStore,
  RecordUpdater,
  Store,
  StoreEvent,
} from '../src/store/store.js';
import {
  allQuarantineRange,
  parseRecordKey,
  probeKey,
  quarantineKey,
  quarantineScopeRange,
  recordKey,
  scopeRange,
  scopeRangeAfter,
} from './idb-keys.js';
import { type IdbHandle, openIdb } from './idb-open.js';
import { runTransaction, type TxControl } from './idb-transaction.js';

export interface IdbStoreOptions {
  /**
   * IndexedDB database name. Never idb-keyval's default database.
   * @default 'oncely'
   */
  dbName?: string;
  /**
   * Object store name inside the database. If the database exists without it, it is
   * added (by a version upgrade).
   * @default 'intents'
   */
  storeName?: string;
  /**
   * Durability hint for writes. `strict` asks the browser to flush to disk before a
   * write resolves, so a claimed key survives a power cut or OS crash, not only a
   * reload or tab crash. Chrome and Firefox use `relaxed` when asked for `default`.
   * @default 'strict'
   */
  durability?: IDBTransactionDurability;
  /**
   * How many records one `sweep()` call examines at most. Each call continues where
   * the previous one stopped (wrapping at the end), so a store of N records is swept
   * fully in ⌈N / sweepBatch⌉ calls and no call holds the database for long.
   * @default 200
   */
  sweepBatch?: number;
  /**
   * The IndexedDB factory to use (a worker's, a test's `new IDBFactory()`).
   * @default globalThis.indexedDB, read at first use
   */
  indexedDB?: IDBFactory;
  /**
   * Clock in ms since epoch, used for quarantine timestamps.
   * @default Date.now
   */
  now?: () => number;
}

/** A record in quarantine, with the IndexedDB key it sits under. */
export interface QuarantinedRecord extends QuarantineEntry {
  location: string;
}

/**
 * Intents in IndexedDB: durable across reloads, tab crashes and browser restarts, and
 * shared by the tabs of an origin.
 *
 * Every operation that reads and then writes (`claim`, `update`, keyed `delete`,
 * `sweep`) is one readwrite transaction, so two tabs claiming at once end with one key;
 * every promise resolves after its transaction has committed. Records are validated on
 * read: a bad one is quarantined and reported to {@link IdbStore.subscribe} listeners,
 * and never replaced by a new key (see `corrupt-records.ts`; an intent whose key is lost
 * throws `CorruptRecordError`).
 *
 * Constructing it touches nothing; the database opens on first use. To fall back to
 * memory where IndexedDB is missing or blocked, use `openBrowserStore()`.
 */
export class IdbStore implements Store, ObservableStore {
  readonly #db: IdbHandle;
  readonly #dbName: string;
  readonly #storeName: string;
  readonly #sweepBatch: number;
  readonly #now: () => number;
  readonly #listeners = new StoreListeners();
  /** Per scope, the key of the last record the previous sweep examined. */
  readonly #sweepAfter = new Map<string, IDBValidKey>();
  /**
   * The last record this page read or wrote of each intent it touched: put back when the
   * browser deletes the database under it (the user cleared the site's data mid-payment).
   */
  readonly #known = new Map<string, IntentRecord>();

  constructor(options: IdbStoreOptions = {}) {
    this.#dbName = options.dbName ?? 'oncely';
    this.#storeName = options.storeName ?? 'intents';
    this.#sweepBatch = Math.max(1, Math.floor(options.sweepBatch ?? 200));
    this.#now = options.now ?? Date.now;
    this.#db = openIdb({
      dbName: this.#dbName,
      storeName: this.#storeName,
      factory: options.indexedDB,
      durability: options.durability ?? 'strict',
      onLost: () => {
        this.#restoreSoon(0);
      },
    });
  }

  async claim(fresh: IntentRecord): Promise<ClaimResult> {
    const record = validRecord(fresh, fresh.scope, fresh.name);
    const claimed = await this.#slot<ClaimResult>(record.scope, record.name, (current, store, tx, id) => {
      if (current) return tx.result({ record: current, created: false });
      store.put(record, id);
      tx.result({ record: { ...record }, created: true });
    });
    this.#saw(record.scope, record.name, claimed.record);
    return claimed;
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    const value: unknown = await get(recordKey(scope, name), this.#db.use);
    const slot = readSlot(value, scope, name, this.#now());
    if (slot.kind === 'empty') return this.#saw(scope, name, undefined);
    if (slot.kind === 'record') return this.#saw(scope, name, slot.record);
    // Blocked or corrupt: settle it (quarantine, salvage or throw) in a write transaction.
    return this.update(scope, name, () => undefined);
  }

  async update(scope: string, name: string, updater: RecordUpdater): Promise<IntentRecord | undefined> {
    const updated = await this.#slot<IntentRecord | undefined>(scope, name, (current, store, tx, id) => {
      const next = updater(current && { ...current });
      if (next === undefined) return tx.result(current);
      const record = validRecord(next, scope, name);
      store.put(record, id);
      tx.result({ ...record });
    });
    return this.#saw(scope, name, updated);
  }

  async delete(scope: string, name: string, key?: string, options: DeleteOptions = {}): Promise<void> {
    const id = recordKey(scope, name);
    const keep = options.keepPending;
    // Deleted by a decision (reset): never put back.
    const known = this.#known.get(intentId(scope, name));
    if (known && (key === undefined || known.key === key) && (keep === undefined || !isPending(known, keep)))
      this.#known.delete(intentId(scope, name));
    if (key === undefined && keep === undefined) return del(id, this.#db.use);
    return this.#run<void>('readwrite', (store, tx) => {
      const request = store.get(id);
      request.onsuccess = tx.guard(() => {
        const parsed = parseRecord(request.result);
        if (!('record' in parsed)) return;
        if ((key === undefined || parsed.record.key === key) && (keep === undefined || !isPending(parsed.record, keep)))
          store.delete(id);
      });
    });
  }

  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    const records: IntentRecord[] = [];
    const damaged: string[] = [];
    const entries = await this.#entries(scopeRange(scope));
    const now = this.#now();
    for (const [key, value] of entries) {
      const ids = parseRecordKey(key);
      if (!ids || ids.scope !== scope) continue;
      const slot = readSlot(value, scope, ids.name, now);
      if (slot.kind === 'record') records.push(slot.record);
      else if (slot.kind === 'corrupt') damaged.push(ids.name);
    }
    for (const name of damaged) {
      const record = await this.get(scope, name).catch((error: unknown) => {
        if (error instanceof CorruptRecordError) return undefined;
        throw error;
      });
      if (record) records.push(record);
    }
    return states ? records.filter((record) => states.includes(record.state)) : records;
  }

  /** With `keepPending`, only the settled and unsent intents (one cursor walk), quarantine kept. */
  async clear(scope: string, options: DeleteOptions = {}): Promise<void> {
    const keep = options.keepPending;
    for (const [id, record] of this.#known)
      if (record.scope === scope && (keep === undefined || !isPending(record, keep))) this.#known.delete(id);
    return this.#run<void>('readwrite', (store, tx) => {
      if (keep === undefined) {
        store.delete(scopeRange(scope));
        store.delete(quarantineScopeRange(scope));
        return;
      }
      const walk = store.openCursor(scopeRange(scope));
      walk.onsuccess = tx.guard(() => {
        const cursor = walk.result;
        if (!cursor) return;
        const parsed = parseRecord(cursor.value);
        if ('record' in parsed && !isPending(parsed.record, keep)) cursor.delete();
        cursor.continue();
      });
    });
  }

  /**
   * Removes old `succeeded`, `failed` and `ready` records. Bounded: examines at most
   * `sweepBatch` records per call (one cursor walk in one transaction), continuing
   * after the last record the previous call examined. Bad records met on the way are
   * quarantined. Resolves with the number removed by this call.
   */
  async sweep(scope: string, now: number): Promise<number> {
    return this.#run<number>('readwrite', (store, tx) => {
      let seen = 0;
      let removed = 0;
      tx.result(0);
      const after = this.#sweepAfter.get(scope);
      const request = store.openCursor(after === undefined ? scopeRange(scope) : scopeRangeAfter(scope, after));
      request.onsuccess = tx.guard(() => {
        const cursor = request.result;
        if (!cursor) {
          this.#sweepAfter.delete(scope);
          return;
        }
        const ids = parseRecordKey(cursor.primaryKey);
        if (ids) {
          const { record } = this.#settle(store, tx, cursor.value, ids.scope, ids.name);
          if (record && isSweepable(record, now)) {
            cursor.delete();
            tx.result(++removed);
          }
        }
        if (++seen >= this.#sweepBatch) {
          this.#sweepAfter.set(scope, cursor.primaryKey);
          return;
        }
        cursor.continue();
      });
    });
  }

  /** Records set aside as corrupt, of one scope or of all. Kept until `clear(scope)`. */
  async listQuarantined(scope?: string): Promise<QuarantinedRecord[]> {
    const entries = await this.#entries(scope === undefined ? allQuarantineRange() : quarantineScopeRange(scope));
    return entries.map(([key, value]) => ({ ...(value as QuarantineEntry), location: this.#location(key) }));
  }

  /**
   * Opens the database and checks that a write goes through (it writes and removes a
   * probe key). Rejects where IndexedDB is missing, blocked or read-only.
   */
  async probe(): Promise<void> {
    return this.#run<void>('readwrite', (store) => {
      store.put(0, probeKey());
      store.delete(probeKey());
    });
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  async close(): Promise<void> {
    await this.#db.close();
  }

  /** Notes what the store holds for (scope, name) now; returns `record`. */
  #saw<R extends IntentRecord | undefined>(scope: string, name: string, record: R): R {
    if (record) this.#known.set(intentId(scope, name), { ...record });
    else this.#known.delete(intentId(scope, name));
    return record;
  }

  /** Restores now, and again a while later while the browser is still deleting (it closes new connections too). */
  #restoreSoon(tries: number): void {
    this.#restore().catch(() => {
      if (tries < RESTORE_TRIES) setTimeout(() => this.#restoreSoon(tries + 1), 10 * 2 ** tries);
    });
  }

  /**
   * The browser deleted the database under this page (site data cleared) or lost it: puts
   * back what this page knew of each intent, where the new database has nothing better —
   * an empty slot, the same key not yet sent, or another key never sent (a sent key is a
   * fact at the server; a deleted database is no decision to forget it). Reports `restored`.
   */
  async #restore(): Promise<void> {
    const known = [...this.#known.values()];
    if (known.length === 0) return;
    const names = await this.#run<string[]>('readwrite', (store, tx) => {
      const names: string[] = [];
      tx.result(names);
      for (const record of known) {
        const id = recordKey(record.scope, record.name);
        const request = store.get(id);
        request.onsuccess = tx.guard(() => {
          const parsed = parseRecord(request.result);
          if (request.result !== undefined && !('record' in parsed)) return; // a quarantine marker: left alone
          if (!restorable('record' in parsed ? parsed.record : undefined, record)) return;
          store.put(record, id);
          names.push(record.name);
        });
      }
    });
    if (names.length > 0)
      this.#listeners.emit({
        type: 'restored',
        reason: 'the browser deleted the IndexedDB database (site data cleared)',
        names,
      });
  }

  #run<T>(mode: IDBTransactionMode, body: (store: IDBObjectStore, tx: TxControl<T>) => void): Promise<T> {
    return runTransaction(this.#db.use, mode, body, (events) => {
      for (const event of events) this.#listeners.emit(event);
    });
  }

  /** Every (key, value) in `range`, read in one readonly transaction. */
  #entries(range: IDBKeyRange): Promise<[IDBValidKey, unknown][]> {
    return this.#run('readonly', (store, tx) => {
      const keys = store.getAllKeys(range);
      const values = store.getAll(range);
      values.onsuccess = tx.guard(() => tx.result(keys.result.map((key, i) => [key, values.result[i]])));
    });
  }

  /**
   * One readwrite transaction over the slot of (scope, name): `body` gets its record once
   * settled (`undefined` when empty); a blocked slot fails the transaction instead.
   */
  #slot<T>(
    scope: string,
    name: string,
    body: (current: IntentRecord | undefined, store: IDBObjectStore, tx: TxControl<T>, id: IDBValidKey) => void,
  ): Promise<T> {
    const id = recordKey(scope, name);
    return this.#run<T>('readwrite', (store, tx) => {
      const request = store.get(id);
      request.onsuccess = tx.guard(() => {
        const current = this.#settle(store, tx, request.result, scope, name);
        if (current.error) tx.fail(current.error);
        else body(current.record, store, tx, id);
      });
    });
  }

  /**
   * Reads the slot of (scope, name) inside a readwrite transaction. A corrupt value is
   * quarantined here, in the same transaction, and the slot gets either the salvaged
   * record or a marker that blocks the intent.
   */
  #settle(
    store: IDBObjectStore,
    tx: TxControl<never>,
    value: unknown,
    scope: string,
    name: string,
  ): { record?: IntentRecord; error?: CorruptRecordError } {
    const now = this.#now();
    const slot = readSlot(value, scope, name, now);
    switch (slot.kind) {
      case 'empty':
        return {};
      case 'record':
        return { record: slot.record };
      case 'blocked':
        return { error: corruptRecordError(scope, name, slot.marker) };
      case 'corrupt': {
        const key = quarantineKey(scope, name, now);
        const location = this.#location(key);
        const entry: QuarantineEntry = { scope, name, reason: slot.reason, at: now, value };
        const { salvaged } = slot;
        if (salvaged) entry.salvagedKey = salvaged.key;
        store.put(entry, key);
        tx.report({
          type: 'quarantine',
          reason: `${slot.reason}; ${salvaged ? 'its key was kept and the intent set to unknown' : 'no usable key: the intent is blocked until it is reconciled and deleted'}`,
          location,
          scope,
          name,
        });
        // The slot gets the salvaged record, else a marker that blocks the intent.
        const marker: QuarantineMarker = { oncely: 'quarantined', reason: slot.reason, location, at: now };
        store.put(salvaged ?? marker, recordKey(scope, name));
        return salvaged ? { record: { ...salvaged } } : { error: corruptRecordError(scope, name, marker) };
      }
    }
  }

  #location(key: IDBValidKey): string {
    return `indexeddb:${this.#dbName}/${this.#storeName}/${JSON.stringify(key)}`;
  }
}

/** Restore tries after the database was deleted: 10, 20, … 640 ms apart (about 1.3 s in all). */
const RESTORE_TRIES = 7;

const SETTLED: readonly IntentState[] = ['succeeded', 'failed'];

/** Whether `known` (this page's last sight) beats what the database holds after it was deleted. */
function restorable(current: IntentRecord | undefined, known: IntentRecord): boolean {
  if (!current) return true;
  if (current.key !== known.key) return current.state === 'ready' && known.state !== 'ready';
  if (current.state === 'ready') return known.state !== 'ready';
  return current.state === 'in_flight' && SETTLED.includes(known.state);
}
