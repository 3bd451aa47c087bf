import type { Dir } from 'node:fs';
import { opendir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { KeyedQueue } from '../src/coordinator/keyed-queue.js';
import { CorruptRecordError } from '../src/errors.js';
import {
  corruptRecordError,
  isQuarantineMarker,
  type QuarantineMarker,
  readSlot,
  type SlotState,
} from '../src/store/corrupt-records.js';
import { StoreListeners } from '../src/store/listeners.js';
import { isSweepable } from '../src/store/record-rules.js';
import { parseRecord, validRecord } from '../src/store/record-schema.js';
import type {
  ClaimResult,
  IntentRecord,
  IntentState,
  ObservableStore,
  RecordUpdater,
  Store,
  StoreEvent,
} from '../src/store/store.js';
import { BatchWriter } from './batch-writer.js';
import {
  ensureDir,
  errorCode,
  readIfExists,
  readShared,
  readWithIdentity,
  type SharedFile,
  syncDir,
} from './fs-durable.js';
import { keepInQuarantine, type QuarantinedFile, readQuarantineNotes } from './quarantine-dir.js';
import {
  encodeLine,
  identify,
  indexLines,
  RECORD_FILE,
  recordFileName,
  recordId,
  scopeId,
  unidentifiedReason,
  unreadableReason,
  valueFor,
} from './record-file.js';
import { defaultStateDir } from './state-dir.js';

export type { QuarantinedFile } from './quarantine-dir.js';

import { removeStaleTemps, tempName } from './temp-files.js';

export interface FileStoreOptions {
  /**
   * The directory holding the store. Created if missing. Processes that use the same
   * directory share their intents.
   * @default defaultStateDir(): `$ONCELY_STATE_DIR`, else `$XDG_STATE_HOME/oncely` or
   * `~/.local/state/oncely` (Linux), `~/Library/Application Support/oncely` (macOS),
   * `%LOCALAPPDATA%\oncely` (Windows)
   * @example new FileStore({ dir: '/var/lib/my-worker/oncely' })
   */
  dir?: string;
  /**
   * Flush every write to disk (`fdatasync` of the data, `fsync` of the directory) before
   * its promise resolves, so that a claimed key survives a power cut or an OS crash, not
   * only a crash of the process. Turn off only for throwaway stores, e.g. in tests.
   * @default true
   */
  fsync?: boolean;
  /**
   * How many record files one `sweep()` call examines at most. Each call continues after
   * the last file the previous call of this store examined (in the order of their hashed
   * names, wrapping at the end), so a store of N intents is swept fully in
   * ⌈N / sweepBatch⌉ calls, and no call reads more than `sweepBatch` records: memory
   * stays flat however many intents are on disk. A call still lists the directories it
   * visits (streamed, about 1 to 2 µs a file).
   * @default 200
   */
  sweepBatch?: number;
  /**
   * Clock in ms since epoch, used for quarantine timestamps.
   * @default Date.now
   */
  now?: () => number;
}

/** Records committed together at most: one flush of data and one of the directory for all. */
const MAX_BATCH = 64;
const MAX_BATCH_BYTES = 256 * 1024;
/**
 * Commits of one scope on disk at once (see `BatchWriter`). 2 did not beat 1 on the
 * test VM (smaller batches, more flushes); a disk with slow flushes may differ.
 */
const MAX_IN_FLIGHT = 1;
/** Files read at once by `list` and `sweep`. */
const READ_CONCURRENCY = 16;
const DEFAULT_SWEEP_BATCH = 200;
/** Directory entries read from the OS at once while a sweep streams a listing. */
const LIST_BUFFER = 512;
/** A scope directory's name: the hex SHA-256 from `scopeId`. */
const SCOPE_DIR = /^[0-9a-f]{64}$/;
/** Length of a scope directory's name, the first part of a sweep position `<sid>/<file name>`. */
const SID_LENGTH = 64;

interface Slot {
  scope: string;
  name: string;
  sid: string;
  id: string;
  file: string;
}

/**
 * Intents on disk, for Node: durable across crashes and restarts, shared by the
 * processes of one machine (a worker pool) that use the same directory.
 *
 * **Layout** (under `dir`): `scopes/<sha256 of scope>/<sha256 of [scope, name]>.jsonl`
 * holds each intent (see `record-file.ts`), `tmp/` temp files, `quarantine/<scope hash>/`
 * bad files moved aside with a `.why.json` note, `trash/` cleared scopes being removed.
 * Opening reads no record: it creates the directories and removes stale temp files.
 *
 * **Claims** are exclusive creates: the record is written to a temp file, flushed, then
 * hard-linked under its final name (`link` fails with `EEXIST` if another claim won), and
 * the directory is flushed. A record appears whole or not at all, even if the process is
 * killed at any point; every racer, in any process, gets the one stored record. Claims
 * and updates of one scope made at the same time are committed together (group commit:
 * up to 64 records share one temp file, hard-linked under each name, one data flush and
 * one directory flush). Every promise resolves once its write is durable; a claim that
 * finds an existing record flushes it too, in case its writer has not yet.
 *
 * **Updates** replace the file atomically (temp file, flush, `rename`, directory flush).
 * Within one process, operations on one intent run one at a time. Across processes, an
 * update is read-modify-write without a lock: two processes updating one intent at once
 * may lose one of the two writes (never tear the record). The client holds its
 * coordinator's lock around updates; do the same if you update from several processes.
 * A keyed `delete` and `sweep` are check-then-remove: they read the record, check it,
 * and remove the file only if it is still the file they read (same inode, size and
 * modification time, compared right before the `unlink`), so a record rewritten by
 * another process before that comparison is kept; one rewritten in the instant between
 * the comparison and the `unlink` (two system calls) is lost. `get` and `list` do not
 * flush what they read: they may see a claim another process is still committing.
 * One machine only: not for network file systems.
 *
 * **Bad files** (corrupt, truncated, foreign) are moved to `quarantine/` and reported to
 * {@link FileStore.subscribe} listeners, with the same rules as the browser store: the
 * intent keeps its key when it can be read (state `unknown`); otherwise a marker blocks
 * it and `claim`, `get` and `update` throw `CorruptRecordError` until the app reconciles
 * and calls `delete(scope, name)`. A new key is never minted over a lost one.
 *
 * Construction touches nothing; the directory is prepared on first use. Use
 * {@link openFileStore} to prepare it up front (and see errors there).
 *
 * @example
 * const store = await openFileStore(); // ~/.local/state/oncely on Linux
 * const { record, created } = await store.claim(fresh);
 */
export class FileStore implements Store, ObservableStore {
  /** The directory holding the store. */
  readonly dir: string;
  readonly #sync: boolean;
  readonly #now: () => number;
  readonly #scopesDir: string;
  readonly #tempDir: string;
  readonly #quarantineDir: string;
  readonly #trashDir: string;
  readonly #writers = new Map<string, BatchWriter>();
  readonly #queue = new KeyedQueue();
  readonly #listeners = new StoreListeners();
  readonly #background = new Set<Promise<unknown>>();
  readonly #sweepBatch: number;
  /** The position (`<sid>/<file name>`) of the last file the previous sweep examined. */
  #sweepAfter: string | undefined;
  /** The last sweep started: sweeps of one store run one after the other. */
  #sweeping: Promise<unknown> = Promise.resolve();
  #ready: Promise<void> | undefined;

  constructor(options: FileStoreOptions = {}) {
    this.dir = path.resolve(options.dir ?? defaultStateDir());
    this.#sync = options.fsync ?? true;
    this.#now = options.now ?? Date.now;
    const batch = Math.floor(options.sweepBatch ?? DEFAULT_SWEEP_BATCH);
    this.#sweepBatch = Number.isNaN(batch) ? DEFAULT_SWEEP_BATCH : Math.max(1, batch);
    this.#scopesDir = path.join(this.dir, 'scopes');
    this.#tempDir = path.join(this.dir, 'tmp');
    this.#quarantineDir = path.join(this.dir, 'quarantine');
    this.#trashDir = path.join(this.dir, 'trash');
  }

  /** Prepares the directory (idempotent). Other methods call it; call it to fail early. */
  open(): Promise<void> {
    this.#ready ??= this.#prepare().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async claim(fresh: IntentRecord): Promise<ClaimResult> {
    const record = validRecord(fresh, fresh.scope, fresh.name);
    const slot = this.#slot(record.scope, record.name);
    return this.#exclusive(slot.id, async () => {
      await this.open();
      let text = await readIfExists(slot.file);
      for (;;) {
        if (text === undefined) {
          const outcome = await this.#writer(slot.sid).submit({
            kind: 'create',
            file: slot.file,
            line: encodeLine(slot.id, record),
          });
          if (outcome.created) return { record: { ...record }, created: true };
          // Another process won the race; its record was flushed by the writer.
          const existing = await this.#settle(slot, outcome.existing!);
          if (existing) return { record: existing, created: false };
          text = undefined;
          continue;
        }
        const existing = await this.#settle(slot, text);
        if (!existing) {
          text = undefined;
          continue;
        }
        // Its writer may not have flushed it yet: make sure before anyone acts on it.
        await this.#writer(slot.sid).submit({ kind: 'flush', file: slot.file });
        return { record: existing, created: false };
      }
    });
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    await this.open();
    const slot = this.#slot(scope, name);
    const text = await readIfExists(slot.file);
    if (text === undefined) return undefined;
    const { state } = this.#classify(slot, text);
    if (state.kind === 'record') return state.record;
    if (state.kind === 'blocked') throw blockedError(slot, state.marker);
    return this.#exclusive(slot.id, () => this.#current(slot));
  }

  /**
   * Read-modify-write of one intent. `updater` may run more than once if another
   * process creates the intent meanwhile; keep it a pure function of its argument.
   */
  async update(scope: string, name: string, updater: RecordUpdater): Promise<IntentRecord | undefined> {
    const slot = this.#slot(scope, name);
    return this.#exclusive(slot.id, async () => {
      await this.open();
      for (;;) {
        const current = await this.#current(slot);
        const next = updater(current && { ...current });
        if (next === undefined) return current;
        const record = validRecord(next, scope, name);
        const line = encodeLine(slot.id, record);
        if (current) {
          await this.#writer(slot.sid).submit({ kind: 'replace', file: slot.file, line });
          return { ...record };
        }
        const outcome = await this.#writer(slot.sid).submit({ kind: 'create', file: slot.file, line });
        if (outcome.created) return { ...record };
        // Another process created it meanwhile: run the updater on that record instead.
      }
    });
  }

  async delete(scope: string, name: string, key?: string): Promise<void> {
    const slot = this.#slot(scope, name);
    return this.#exclusive(slot.id, async () => {
      await this.open();
      if (key === undefined) {
        await this.#writer(slot.sid).submit({ kind: 'remove', file: slot.file });
        return;
      }
      const read = await readWithIdentity(slot.file);
      if (read === undefined) return;
      const parsed = parseRecord(valueFor(read.text, slot.id));
      if (!('record' in parsed) || parsed.record.key !== key) return;
      // Only if no other process replaced the file since it was read.
      await this.#writer(slot.sid).submit({ kind: 'remove', file: slot.file, ifIdentity: read.identity });
    });
  }

  /** Reads only the files of `scope`'s directory. Bad files met are quarantined. */
  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    await this.open();
    const records = await this.#scan(scopeId(scope), scope);
    return states ? records.filter((record) => states.includes(record.state)) : records;
  }

  /** Removes the scope's intents and its quarantined files. */
  async clear(scope: string): Promise<void> {
    await this.open();
    const sid = scopeId(scope);
    const writer = this.#writers.get(sid);
    await writer?.idle();
    const moved: string[] = [];
    for (const parent of [this.#scopesDir, this.#quarantineDir]) {
      const trash = path.join(this.#trashDir, `${sid}.${tempName()}`);
      try {
        await rename(path.join(parent, sid), trash);
        moved.push(trash);
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw error;
        continue;
      }
      if (this.#sync) await syncDir(parent);
    }
    writer?.forgetDir();
    // The renames above were the clear; removing the files is tidying up.
    await Promise.all(moved.map((trash) => rm(trash, { recursive: true, force: true }).catch(() => {})));
  }

  /**
   * Removes old `succeeded`, `failed` and `ready` records. Bounded and incremental:
   * examines at most `sweepBatch` record files per call, continuing after the last file
   * the previous call examined and wrapping around at the end (within a call too, never
   * examining a file twice), so one call covers a store of up to `sweepBatch` intents.
   * Directory listings are streamed; nothing loads every record. Bad files met on the
   * way are quarantined. Each removal re-reads the record under the intent's lock of
   * this process and removes the file only if it still holds the record that was judged
   * old and only if it is still the same file (see the class notes on other processes).
   * Calls on one store run one after the other. Resolves with the number this call
   * removed.
   */
  sweep(scope: string, now: number): Promise<number> {
    const run = async () => {
      await this.open();
      return this.#sweepNext(scope, now);
    };
    const result = this.#sweeping.then(run, run);
    this.#sweeping = result.catch(() => undefined);
    return result;
  }

  /** Files set aside as bad, of one scope or of all. Kept until `clear(scope)`. */
  async listQuarantined(scope?: string): Promise<QuarantinedFile[]> {
    await this.open();
    return readQuarantineNotes(this.#quarantineDir, scope === undefined ? undefined : [scopeId(scope)]);
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    return this.#listeners.add(listener);
  }

  /** Waits for pending writes, a running sweep and background clean-up. The store holds no open files. */
  async close(): Promise<void> {
    await this.#sweeping;
    await Promise.all([...this.#writers.values()].map((writer) => writer.idle()));
    await Promise.all([...this.#background]);
  }

  async #prepare(): Promise<void> {
    for (const dir of [this.#scopesDir, this.#tempDir, this.#quarantineDir, this.#trashDir]) {
      await ensureDir(dir, this.#sync);
    }
    await removeStaleTemps(this.#tempDir, this.#now());
    // Scopes cleared by a process that died before removing them: not worth waiting for.
    const emptying = readdir(this.#trashDir)
      .then((names) =>
        Promise.all(names.map((name) => rm(path.join(this.#trashDir, name), { recursive: true, force: true }))),
      )
      .catch(() => {});
    this.#background.add(emptying);
    void emptying.finally(() => this.#background.delete(emptying));
  }

  #slot(scope: string, name: string): Slot {
    const sid = scopeId(scope);
    const id = recordId(scope, name);
    return { scope, name, sid, id, file: path.join(this.#scopesDir, sid, recordFileName(id)) };
  }

  #writer(sid: string): BatchWriter {
    let writer = this.#writers.get(sid);
    if (!writer) {
      writer = new BatchWriter({
        dir: path.join(this.#scopesDir, sid),
        tempDir: this.#tempDir,
        sync: this.#sync,
        maxBatch: MAX_BATCH,
        maxBytes: MAX_BATCH_BYTES,
        maxInFlight: MAX_IN_FLIGHT,
      });
      this.#writers.set(sid, writer);
    }
    return writer;
  }

  /** Runs `fn` after every earlier operation of this process on the same intent. */
  #exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.#queue.run(id, fn);
  }

  #classify(slot: Slot, text: string): { state: SlotState; value: unknown } {
    const value = valueFor(text, slot.id);
    return { state: readSlot(value, slot.scope, slot.name, this.#now()), value };
  }

  /** The intent's record, settling a bad file. Throws when the intent is blocked. Run exclusively. */
  async #current(slot: Slot): Promise<IntentRecord | undefined> {
    for (;;) {
      const text = await readIfExists(slot.file);
      if (text === undefined) return undefined;
      const record = await this.#settle(slot, text);
      if (record) return record;
    }
  }

  /**
   * What `text` (read from the slot's file) means: a record, or a thrown
   * `CorruptRecordError`. A bad file is quarantined here. `undefined` means the file
   * changed meanwhile: read it again. Run exclusively.
   */
  async #settle(slot: Slot, text: string): Promise<IntentRecord | undefined> {
    const { state, value } = this.#classify(slot, text);
    switch (state.kind) {
      case 'empty':
        return undefined;
      case 'record':
        return state.record;
      case 'blocked':
        throw blockedError(slot, state.marker);
      case 'corrupt': {
        const reason = typeof value === 'string' ? unreadableReason(value) : state.reason;
        const intent = { scope: slot.scope, name: slot.name };
        const settled = await this.#quarantine(slot.sid, slot.id, slot.file, text, reason, intent, state.salvaged);
        if (settled === undefined) return undefined;
        if ('oncely' in settled) throw blockedError(slot, settled);
        return settled;
      }
    }
  }

  /**
   * Moves a bad file aside (a hard link in `quarantine/`, plus a note) and puts the
   * salvaged record, or a blocking marker, in its place. Reports it. Resolves
   * `undefined` if the file changed before it could be moved (nothing was done).
   */
  async #quarantine(
    sid: string,
    id: string,
    file: string,
    text: string,
    reason: string,
    intent: { scope?: string; name?: string },
    salvaged: IntentRecord | undefined,
  ): Promise<IntentRecord | QuarantineMarker | undefined> {
    const at = this.#now();
    const note = { reason, at, ...intent, ...(salvaged && { salvagedKey: salvaged.key }) };
    const options = { dir: this.#quarantineDir, sid, id, sync: this.#sync };
    const location = await keepInQuarantine(options, file, text, note);
    if (location === undefined) return undefined;

    const replacement: IntentRecord | QuarantineMarker = salvaged ?? {
      oncely: 'quarantined',
      reason,
      location,
      at,
    };
    await this.#writer(sid).submit({ kind: 'replace', file, line: encodeLine(id, replacement) });
    this.#listeners.emit({
      type: 'quarantine',
      reason: `${reason}; ${salvaged ? 'its key was kept and the intent set to unknown' : 'no usable key: the intent is blocked until it is reconciled and deleted'}`,
      location,
      ...intent,
    });
    return salvaged ? { ...salvaged } : replacement;
  }

  /**
   * The valid records in one scope directory. A file shared by a batch of claims is
   * read once. Bad files are settled one by one (quarantined; their salvaged records
   * are included).
   */
  async #scan(sid: string, scope?: string): Promise<IntentRecord[]> {
    const dir = path.join(this.#scopesDir, sid);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
    // Claims committed together share one file: read it once, index its lines once.
    const seen = new Map<string, SharedFile>();
    const records: IntentRecord[] = [];
    await pool(names, READ_CONCURRENCY, async (name) => {
      const id = RECORD_FILE.exec(name)?.[1];
      if (id === undefined) return;
      const found = await this.#examine(sid, id, path.join(dir, name), seen, scope);
      if (found) records.push(found.record);
    });
    return records;
  }

  async #sweepNext(scope: string, now: number): Promise<number> {
    const limit = this.#sweepBatch;
    const start = this.#sweepAfter;
    const files = await this.#sweepPositions(start, undefined, limit);
    let next = files.length >= limit ? files.at(-1) : undefined;
    if (next === undefined && start !== undefined) {
      // Reached the end: go on from the beginning, up to where this call started.
      const room = limit - files.length;
      const wrapped = await this.#sweepPositions(undefined, start, room);
      files.push(...wrapped);
      if (wrapped.length >= room && wrapped.at(-1) !== start) next = wrapped.at(-1);
    }
    // Moved on before the files are read, so that a file that fails every time cannot stall the sweep.
    this.#sweepAfter = next;

    const seen = new Map<string, SharedFile>();
    let removed = 0;
    await pool(files, READ_CONCURRENCY, async (position) => {
      const sid = position.slice(0, SID_LENGTH);
      const name = position.slice(SID_LENGTH + 1);
      const id = RECORD_FILE.exec(name)![1]!;
      const found = await this.#examine(sid, id, path.join(this.#scopesDir, sid, name), seen);
      if (!found || found.record.scope !== scope || !isSweepable(found.record, now)) return;
      if (await this.#removeIfUnchanged(found.slot, found.record)) removed++;
    });
    return removed;
  }

  /**
   * Positions (`<sid>/<file name>`) of record files after `after` (exclusive) and up to
   * `upTo` (inclusive), in order, at most `limit`. Streams the listings: holds at most
   * about `2 * limit` names at once.
   */
  async #sweepPositions(after: string | undefined, upTo: string | undefined, limit: number): Promise<string[]> {
    const afterSid = after?.slice(0, SID_LENGTH);
    const afterName = after?.slice(SID_LENGTH + 1);
    const upToSid = upTo?.slice(0, SID_LENGTH);
    const upToName = upTo?.slice(SID_LENGTH + 1);
    const positions: string[] = [];
    // The scope of `after` may have files left: it is included, the scopes after it are next.
    let fromSid = afterSid;
    let fromIncluded = true;
    for (;;) {
      const want = limit - positions.length;
      const sids = await smallestNames(
        this.#scopesDir,
        want,
        (sid) =>
          SCOPE_DIR.test(sid) &&
          (fromSid === undefined || sid > fromSid || (fromIncluded && sid === fromSid)) &&
          (upToSid === undefined || sid <= upToSid),
      );
      for (const sid of sids) {
        const lower = sid === afterSid ? afterName : undefined;
        const upper = sid === upToSid ? upToName : undefined;
        const names = await smallestNames(
          path.join(this.#scopesDir, sid),
          limit - positions.length,
          (name) =>
            RECORD_FILE.test(name) && (lower === undefined || name > lower) && (upper === undefined || name <= upper),
        );
        for (const name of names) positions.push(`${sid}/${name}`);
        if (positions.length >= limit) return positions;
      }
      // Fewer scopes than asked for: there are no more. (Empty scopes may leave room.)
      if (sids.length < want) return positions;
      fromSid = sids.at(-1);
      fromIncluded = false;
    }
  }

  /** Removes the slot's file if, read again under the intent's lock, it still holds `record`. */
  #removeIfUnchanged(slot: Slot, record: IntentRecord): Promise<boolean> {
    return this.#exclusive(slot.id, async () => {
      const read = await readWithIdentity(slot.file);
      if (read === undefined) return false;
      const { state } = this.#classify(slot, read.text);
      if (state.kind !== 'record') return false;
      const now = state.record;
      if (now.key !== record.key || now.updatedAt !== record.updatedAt || now.state !== record.state) return false;
      const outcome = await this.#writer(slot.sid).submit({
        kind: 'remove',
        file: slot.file,
        ifIdentity: read.identity,
      });
      return outcome.created;
    });
  }

  /**
   * The record in one file of a scope directory (`id` from its name), if it holds a
   * valid one of its intent (of `scope`, when given). A bad file is settled: a damaged
   * record is quarantined and its salvaged record returned; a file that does not say
   * which intent it is is moved aside and its slot blocked. `seen` shares the reads of
   * hard-linked files (see `readShared`).
   */
  async #examine(
    sid: string,
    id: string,
    file: string,
    seen: Map<string, SharedFile>,
    scope?: string,
  ): Promise<{ slot: Slot; record: IntentRecord } | undefined> {
    const read = await readShared(file, seen);
    if (read === undefined) return undefined;
    const { text } = read;
    read.lines ??= indexLines(text);
    const value = valueFor(text, id, read.lines);
    const intent = identify(value, id, scope);
    if (intent) {
      const slot: Slot = { ...intent, sid, id, file };
      const state = readSlot(value, intent.scope, intent.name, this.#now());
      if (state.kind === 'record') return { slot, record: state.record };
      if (state.kind !== 'corrupt') return undefined;
      const record = await this.#exclusive(id, () => this.#current(slot)).catch(ignoreBlocked);
      return record && { slot, record };
    }
    if (isQuarantineMarker(value)) return undefined;
    // Says nothing usable about its intent: move it aside and block the slot.
    await this.#exclusive(id, async () => {
      if ((await readIfExists(file)) !== text) return;
      const intent = scope === undefined ? {} : { scope };
      await this.#quarantine(sid, id, file, text, unidentifiedReason(value), intent, undefined);
    });
    return undefined;
  }
}

/** Creates a {@link FileStore} and prepares its directory; rejects if it cannot be used. */
export async function openFileStore(options: FileStoreOptions = {}): Promise<FileStore> {
  const store = new FileStore(options);
  await store.open();
  return store;
}

const blockedError = (slot: Slot, marker: QuarantineMarker) => corruptRecordError(slot.scope, slot.name, marker);

function ignoreBlocked(error: unknown): undefined {
  if (error instanceof CorruptRecordError) return undefined;
  throw error;
}

async function pool<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/**
 * The `limit` smallest names in `dir` that `accept` takes, sorted, without reading the
 * whole listing into memory: it is streamed (`opendir`), keeping at most `2 * limit`
 * names. A missing directory has none.
 */
async function smallestNames(dir: string, limit: number, accept: (name: string) => boolean): Promise<string[]> {
  let listing: Dir;
  try {
    listing = await opendir(dir, { bufferSize: LIST_BUFFER });
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw error;
  }
  let names: string[] = [];
  // Once `limit` names are kept, a name after the last of them cannot be among the first.
  let last: string | undefined;
  for await (const entry of listing) {
    if ((last !== undefined && entry.name > last) || !accept(entry.name)) continue;
    names.push(entry.name);
    if (names.length >= 2 * limit) {
      names = firstSorted(names, limit);
      last = names.at(-1);
    }
  }
  return firstSorted(names, limit);
}

/** The `limit` smallest of `names`, sorted, each once (a listing may repeat a name that changed meanwhile). */
function firstSorted(names: string[], limit: number): string[] {
  names.sort();
  const out: string[] = [];
  for (const name of names) {
    if (out.length >= limit) break;
    if (out.at(-1) !== name) out.push(name);
  }
  return out;
}
