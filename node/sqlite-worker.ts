/**
 * The worker thread that owns a SqliteStore's database (started by `sqlite-thread.ts`):
 * it opens the file, runs every statement, the group commit, the WAL's fdatasync and the
 * checkpoints, so that a slow or stuck disk blocks this thread, never the app's event
 * loop. It runs plain statements only: an update's closure stays on the main thread,
 * which sends the result as a conditional write (`write`: stored only if the row still
 * holds the text the updater saw).
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { corruptRecordError, type QuarantineMarker, readSlot } from '../src/store/corrupt-records.js';
import { isPending, isSweepable, SWEEPABLE_STATES } from '../src/store/record-rules.js';
import { parseRecord } from '../src/store/record-schema.js';
import type { IntentRecord, IntentState, StoreEvent } from '../src/store/store.js';
import { CommitQueue, commitChannel, type WriteContext } from './commit-queue.js';
import { legacyId } from './file-store-import.js';
import { openDatabase, retryWhileBusy } from './sqlite-open.js';
import { IntentRows, rowValue, type StoredRow } from './sqlite-rows.js';
import { storeError } from './sqlite-schema.js';
import type { Calls, CommitTiming, FromWorker, Op, SeenRow, ToWorker, WorkerConfig } from './sqlite-wire.js';
import { decodeCalls, encodeResult, toWire } from './sqlite-wire.js';
import { WalCheckpointer } from './wal-checkpointer.js';

/** Commits after which a durable store checkpoints from a thread of its own. */
const CHECKPOINTER_AFTER = 100;

/**
 * The store this thread serves now: a thread is kept for the next store once one closes
 * (it gets `open`). Without one in `workerData` it waits for `open`.
 */
let config = workerData as WorkerConfig;
let hooks: Int32Array | undefined;
const port = parentPort!;
const post = (message: FromWorker) => port.postMessage(message);

const wrap = (error: unknown): unknown => storeError(config.file, error);

const quarantineReason = (reason: string, salvaged: boolean) =>
  `${reason}; ${salvaged ? 'its key was kept and the intent set to unknown' : 'no usable key: the intent is blocked until it is reconciled and deleted'}`;

const events: StoreEvent[] = [];
const commits: CommitTiming[] = [];
let timed = false;
let syncs = 0;
const collect = (message: unknown) => commits.push(message as CommitTiming);
/** Commits are timed (two clock and CPU readings each) only while the main thread listens. */
function time(on: boolean): void {
  if (on === timed) return;
  timed = on;
  if (on) commitChannel.subscribe(collect);
  else commitChannel.unsubscribe(collect);
}

async function openStore() {
  hooks = config.hooks && new Int32Array(config.hooks);
  const { db, rows, imported } = await openDatabase({ ...config, now: () => config.now });
  for (const { salvaged, ...event } of imported?.quarantined ?? []) {
    events.push({ type: 'quarantine', ...event, reason: quarantineReason(event.reason, salvaged) });
  }
  let checkpointer: WalCheckpointer | undefined;
  let count = 0;
  const queue = new CommitQueue(db, {
    file: config.file,
    fsync: config.fsync,
    lockTimeout: config.lockTimeout,
    wrap,
    synced: () => {
      syncs++;
    },
    committing: () => {
      // A test's stuck disk: this thread stops inside the write, holding the lock.
      while (hooks && Atomics.load(hooks, 0) === 1) Atomics.wait(hooks, 0, 1);
    },
    committed: () => {
      if (hooks && Atomics.compareExchange(hooks, 1, 1, 0) === 1) process.exit(70);
      // A store that writes a lot checkpoints from a thread of its own (a checkpoint flushes
      // twice, and commits would wait for it); a short-lived one keeps SQLite's auto-checkpoint.
      if (++count !== CHECKPOINTER_AFTER || !config.fsync) return;
      checkpointer = new WalCheckpointer(config.file);
      db.exec('PRAGMA wal_autocheckpoint = 0');
    },
  });
  const legacy = {
    blocked: Number(db.prepare('SELECT count(*) AS n FROM legacy_blocked').get()?.n),
    lookup: db.prepare('SELECT reason, location FROM legacy_blocked WHERE id = ?'),
    remove: db.prepare('DELETE FROM legacy_blocked WHERE id = ?'),
  };
  const close = async () => {
    await queue.close();
    await checkpointer?.stop();
    db.close();
  };
  return { db, rows, queue, legacy, close };
}
type Opened = Awaited<ReturnType<typeof openStore>>;
// A thread started ahead gets `open` before any call: nothing waits on this promise.
let opening: Promise<Opened> = config ? openStore() : new Promise<Opened>(() => {});

const write = <T>(o: Opened, strict: boolean, run: (context: WriteContext) => T) => o.queue.submit(strict, run);
const read = <T>(fn: () => T) => retryWhileBusy(fn, config.lockTimeout);

/**
 * The record in `row`, settling a bad one: quarantined, replaced by its salvaged record
 * or by a marker that blocks the intent. Throws `CorruptRecordError` for a blocked
 * intent, unless `throwBlocked` is false (then an empty slot).
 */
function settle(
  context: WriteContext,
  o: Opened,
  scope: string,
  name: string,
  row: StoredRow | undefined,
  now: number,
  throwBlocked = true,
): SeenRow {
  const slot = readSlot(row?.value, scope, name, now);
  if (slot.kind === 'empty') return {};
  if (slot.kind === 'record') return { record: slot.record, text: row!.text };
  if (slot.kind === 'blocked') {
    if (throwBlocked) throw corruptRecordError(scope, name, slot.marker);
    return { text: row!.text };
  }
  const reason = typeof row!.value === 'string' ? 'stored record is not JSON' : slot.reason;
  const { salvaged } = slot;
  const location = o.rows.quarantine({ scope, name, reason, at: now, salvagedKey: salvaged?.key, value: row!.text });
  const marker: QuarantineMarker = { oncely: 'quarantined', reason, location, at: now };
  o.rows.put(scope, name, rowValue(salvaged ?? marker));
  context.afterCommit(() =>
    events.push({ type: 'quarantine', reason: quarantineReason(reason, !!salvaged), location, scope, name }),
  );
  if (salvaged) return { record: { ...salvaged }, text: JSON.stringify(salvaged) };
  if (throwBlocked) context.failAfterCommit(corruptRecordError(scope, name, marker));
  return { text: JSON.stringify(marker) };
}

/** A damaged row whose key can be salvaged, as an update sees it before it is quarantined. */
function salvage(row: StoredRow | undefined, scope: string, name: string, now: number): SeenRow | undefined {
  const slot = readSlot(row?.value, scope, name, now);
  return slot.kind === 'corrupt' && slot.salvaged
    ? { record: { ...slot.salvaged }, text: row!.text, damaged: true }
    : undefined;
}

/** A slot blocked by an unreadable FileStore file becomes a marker row here, and blocks. */
function checkLegacy(context: WriteContext, o: Opened, scope: string, name: string, now: number): void {
  if (o.legacy.blocked === 0) return;
  const id = legacyId(scope, name);
  const found = o.legacy.lookup.get(id) as { reason: string; location: string } | undefined;
  if (!found) return;
  o.legacy.remove.run(id);
  context.afterCommit(() => {
    o.legacy.blocked--;
  });
  // A row written since the import stands; otherwise the lost key blocks the intent.
  if (o.rows.read(scope, name)) return;
  const marker: QuarantineMarker = { oncely: 'quarantined', ...found, at: now };
  o.rows.put(scope, name, rowValue(marker));
  context.failAfterCommit(corruptRecordError(scope, name, marker));
}

type Handlers = { [K in Op]: (o: Opened, args: Calls[K][0]) => Calls[K][1] | Promise<Calls[K][1]> };

const handlers: Handlers = {
  open: () => undefined,
  // Always strict: an acknowledged claim survives a power cut, because the app may act on its key.
  claim: (o, { scope, name, row, now }) =>
    write(o, true, (context) => {
      checkLegacy(context, o, scope, name, now);
      if (o.rows.insert(scope, name, row)) return { created: true as const };
      const found = settle(context, o, scope, name, o.rows.read(scope, name), now);
      // The row cannot vanish inside the transaction; a settled one is a record or a throw.
      return { created: false as const, record: found.record!, text: found.text! };
    }),
  read: async (o, { scope, name, now, peek }) => {
    // Behind writes still waiting, a read waits too: a caller's earlier write is seen by its later read.
    if (o.legacy.blocked === 0 && !o.queue.busy) {
      const row = await read(() => o.rows.read(scope, name));
      const slot = readSlot(row?.value, scope, name, now);
      if (slot.kind === 'empty') return {};
      if (slot.kind === 'record') return { record: slot.record, text: row!.text };
      if (slot.kind === 'blocked') throw corruptRecordError(scope, name, slot.marker);
      if (peek && slot.salvaged) return { record: { ...slot.salvaged }, text: row!.text, damaged: true };
    }
    // Relaxed: a quarantine lost in a crash is redone the next time the row is read.
    return write(o, false, (context) => {
      checkLegacy(context, o, scope, name, now);
      const row = o.rows.read(scope, name);
      return (peek && salvage(row, scope, name, now)) || settle(context, o, scope, name, row, now);
    });
  },
  write: (o, { scope, name, row: value, expected, damaged, strict, now }) =>
    write(o, strict, (context) => {
      checkLegacy(context, o, scope, name, now);
      // Compared as text: the row is parsed only when it is not the one the update saw.
      const text = o.rows.readText(scope, name);
      if ((text ?? null) !== expected) {
        const row = IntentRows.parsed(name, text);
        return { ok: false, current: salvage(row, scope, name, now) ?? settle(context, o, scope, name, row, now) };
      }
      // A damaged row the update saw salvaged is set aside now, in the transaction that replaces it.
      const row = damaged ? IntentRows.parsed(name, text) : undefined;
      if (row && readSlot(row.value, scope, name, now).kind === 'corrupt')
        settle(context, o, scope, name, row, now, false);
      o.rows.put(scope, name, value);
      return { ok: true as const };
    }),
  delete: (o, { scope, name, key, keepPending }) =>
    write(o, true, () => {
      if (keepPending !== undefined) {
        const parsed = parseRecord(o.rows.read(scope, name)?.value);
        // Not a readable record (a quarantine marker) is kept too: its key may have been sent.
        if (
          !('record' in parsed) ||
          isPending(parsed.record, keepPending) ||
          (key !== undefined && parsed.record.key !== key)
        )
          return undefined;
        o.rows.remove(scope, name);
        return undefined;
      }
      if (key === undefined) {
        o.rows.remove(scope, name);
        if (o.legacy.blocked > 0) o.legacy.remove.run(legacyId(scope, name));
        return undefined;
      }
      const parsed = parseRecord(o.rows.read(scope, name)?.value);
      if ('record' in parsed && parsed.record.key === key) o.rows.remove(scope, name);
      return undefined;
    }),
  list: async (o, { scope, states, now }) => {
    // Behind writes still waiting, as `read`: a caller's earlier write is in its later list.
    const rows = o.queue.busy
      ? await write(o, false, () => o.rows.list(scope, states))
      : await read(() => o.rows.list(scope, states));
    const records: IntentRecord[] = [];
    const bad: string[] = [];
    for (const row of rows) {
      const slot = readSlot(row.value, scope, row.name, now);
      if (slot.kind === 'record') records.push(slot.record);
      else if (slot.kind === 'corrupt') bad.push(row.name);
    }
    if (bad.length > 0) {
      const salvaged = await write(o, false, (context) =>
        bad.map((name) => settle(context, o, scope, name, o.rows.read(scope, name), now, false).record),
      );
      for (const record of salvaged) {
        if (record && (!states || states.includes(record.state))) records.push(record);
      }
    }
    return records;
  },
  clear: (o, { scope, keepPending }) =>
    write(o, true, () => {
      o.rows.clear(scope, keepPending);
      return undefined;
    }),
  // Relaxed: a removal lost in a crash only leaves an old record for the next sweep.
  sweep: (o, { scope, now, limit }) =>
    write(o, false, (context) => {
      let removed = 0;
      let examined = 0;
      for (const state of SWEEPABLE_STATES) {
        for (const row of o.rows.sweepable(scope, state as IntentState, now, limit - examined)) {
          examined++;
          const { record } = settle(context, o, scope, row.name, row, now, false);
          if (record && isSweepable(record, now)) {
            o.rows.remove(scope, row.name);
            removed++;
          }
        }
        if (examined >= limit) break;
      }
      return removed;
    }),
  quarantined: (o, { scope }) => read(() => o.rows.quarantined(scope)),
};

// Answers go out together, once the turn's promise jobs have run (a tick): one message per
// commit, not per call, and without waiting for another turn of the loop.
let outbox: unknown[] = [];
let flushing = false;
let outstanding = 0;
/** An open that failed is every call's answer; then the thread ends, and the next call starts a new one. */
let failed = false;
const watchOpen = () =>
  opening.catch(() => {
    failed = true;
  });
watchOpen();
let heartbeat: ReturnType<typeof setInterval> | undefined;
/** Waiting for every call received so far to have its answer (a close). */
const whenAnswered: (() => void)[] = [];
const allAnswered = (): Promise<void> =>
  outstanding === 0 ? Promise.resolve() : new Promise((resolve) => whenAnswered.push(resolve));

function answer(id: number, result: { value: unknown } | { error: ReturnType<typeof toWire> }): void {
  encodeResult(outbox, id, result);
  if (--outstanding === 0) for (const resolve of whenAnswered.splice(0)) resolve();
  if (flushing) return;
  flushing = true;
  process.nextTick(() => {
    flushing = false;
    post({ type: 'results', events: events.splice(0), results: outbox, commits: commits.splice(0), syncs });
    outbox = [];
    syncs = 0;
    if (failed) process.exit(0);
  });
}

/**
 * The next message already queued, if any. Deno's `parentPort` is no MessagePort to
 * `receiveMessageOnPort` (a TypeError): there messages come one per event, and writes of
 * one turn still share a commit (the queue flushes a turn later).
 */
let drains = true;
function queued(): { message: ToWorker } | undefined {
  if (!drains) return undefined;
  try {
    return receiveMessageOnPort(port);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    drains = false;
    return undefined;
  }
}

port.on('message', (first: ToWorker) => {
  // Messages already queued are taken now, so that their writes share the next commit.
  for (let next: { message: ToWorker } | undefined = { message: first }; next; next = queued()) {
    receive(next.message);
  }
});

function receive(message: ToWorker): void {
  if (message.type === 'close') {
    // After the answers of the calls received before it: one taken in the same drain may
    // not have reached its write yet (a list's quarantine runs after its read).
    void allAnswered()
      .then(() => opening)
      .then((o) => o.close())
      .catch(() => undefined)
      // After the last answers, which go out on a tick: this waits a turn of the loop.
      .finally(() => setImmediate(() => post({ type: 'closed' })));
    return;
  }
  if (message.type === 'open') {
    config = message.config;
    opening = openStore();
    watchOpen();
    return;
  }
  time(message.timed);
  // The main thread takes a silent thread with calls outstanding for a stuck one. Kept
  // between calls (one per call costs a timer each); it stops once nothing is outstanding.
  heartbeat ??= setInterval(() => {
    if (outstanding > 0) return post({ type: 'alive' });
    clearInterval(heartbeat);
    heartbeat = undefined;
  }, 1000);
  decodeCalls(message.calls, (id, op, args) => {
    outstanding++;
    opening
      .then((o) => (handlers[op] as (o: Opened, args: unknown) => unknown)(o, args))
      .then(
        (value) => answer(id, { value }),
        (error: unknown) => answer(id, { error: toWire(wrap(error)) }),
      );
  });
}
