import { type IntentCoordinator, LocalCoordinator, type LockSection } from '../src/coordinator/coordinator.js';
import { intentId } from '../src/store/record-rules.js';
import { parseRecord } from '../src/store/record-schema.js';
import type { IntentRecord } from '../src/store/store.js';
import { LockHolds } from './lock-holds.js';
import { type NoteStorage, SentNotes } from './sent-notes.js';

/** The field of a channel message by which a tab asks the holder of a lock for it. */
const WANT = 'oncelyWantsLock';

export interface WebLocksCoordinatorOptions {
  /**
   * Name of the BroadcastChannel the tabs share.
   * @default 'oncely'
   */
  channel?: string;
  /**
   * Prefix of Web Lock names; the lock of an intent is `prefix + JSON.stringify([scope, name])`.
   * @default 'oncely:'
   */
  lockPrefix?: string;
  /**
   * The Web Locks manager. Without one (old browsers, insecure contexts) locks are only
   * taken within this page, through a {@link LocalCoordinator}; pass `undefined`
   * explicitly to choose that.
   * @default globalThis.navigator.locks, read at first use
   */
  locks?: LockManager;
  /**
   * Where a call started under a kept lock notes, before its request leaves, that the
   * intent was sent, until its IndexedDB write lands: a reload in that frame then still
   * finds it sent. Pass `undefined` to keep no notes.
   * @default globalThis.localStorage, read at first use
   */
  notes?: NoteStorage;
}

/**
 * Coordinates the tabs of one origin: one attempt in flight per intent across all of
 * them (Web Locks, released by the browser if the holder tab dies), and records told
 * to the other tabs over a BroadcastChannel. Where Web Locks are missing it locks
 * within the page only; where BroadcastChannel is missing `publish` and `subscribe` do
 * nothing. Constructing it touches neither API.
 */
export class WebLocksCoordinator implements IntentCoordinator {
  readonly #channelName: string;
  readonly #lockPrefix: string;
  readonly #locksOption: { value: LockManager | undefined } | undefined;
  readonly #local = new LocalCoordinator();
  readonly #listeners = new Set<(record: IntentRecord) => void>();
  #channel: BroadcastChannel | undefined;
  #closed = false;
  #holdsOf: LockHolds | undefined;
  readonly #notes: SentNotes;

  constructor(options: WebLocksCoordinatorOptions = {}) {
    this.#channelName = options.channel ?? 'oncely';
    this.#lockPrefix = options.lockPrefix ?? 'oncely:';
    this.#locksOption = 'locks' in options ? { value: options.locks } : undefined;
    const notes = 'notes' in options ? () => options.notes : () => globalThis.localStorage;
    this.#notes = new SentNotes(notes, `${this.#lockPrefix}sent:`);
  }

  /** Kept once found: the getter of `navigator.locks` costs a click's request some µs. */
  #locksFound: LockManager | undefined;

  get #locks(): LockManager | undefined {
    if (this.#locksOption) return this.#locksOption.value;
    this.#locksFound ??= globalThis.navigator?.locks;
    return this.#locksFound;
  }

  /** True when locks span tabs (Web Locks), false when they only span this page. */
  get crossTab(): boolean {
    return this.#locks !== undefined;
  }

  /** Web Locks exclude every tab of the origin, and a dead tab's locks are released: no lease to wait on. */
  get coversStore(): boolean {
    return this.crossTab;
  }

  get #holds(): LockHolds | undefined {
    const locks = this.#locks;
    if (locks && !this.#holdsOf) {
      this.#holdsOf = new LockHolds(locks, (lock) => this.#post({ [WANT]: lock }));
      this.#open();
    }
    return this.#holdsOf;
  }

  /**
   * Runs `fn` holding the lock of (scope, name): at once if this tab holds it idle
   * ({@link hold}), else once granted, asking a tab that holds it to let it go. `signal`
   * aborts the wait for the lock (rejecting with its reason); once granted, `fn` runs to
   * the end.
   */
  exclusive<T>(
    scope: string,
    name: string,
    fn: (section?: LockSection) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const holds = this.#holds;
    if (holds) return holds.run(this.#lockPrefix + intentId(scope, name), fn, signal);
    return this.#local.exclusive(scope, name, () => fn(), signal);
  }

  /**
   * Keeps the lock of (scope, name) while no section runs, so that the next call starts
   * without asking the browser (whose answer after a click waits for the next frame). It
   * goes to another tab that asks (or waits in the browser's queue) as soon as idle, and is
   * taken again once free. `onHeld` runs
   * as the first section each time it is gained. Without Web Locks this does nothing.
   */
  hold(scope: string, name: string, onHeld: (section: LockSection) => Promise<void>): () => void {
    // Closed, it hears no other tab's ask: it must not keep a lock.
    if (this.#closed) return () => {};
    return this.#holds?.hold(this.#lockPrefix + intentId(scope, name), onHeld) ?? (() => {});
  }

  runHeld<T>(scope: string, name: string, fn: (section: LockSection) => Promise<T>): Promise<T> | undefined {
    return this.#holdsOf?.runHeld(this.#lockPrefix + intentId(scope, name), fn);
  }

  noteSent(record: IntentRecord): (() => void) | undefined {
    return this.#notes.note(intentId(record.scope, record.name), record);
  }

  sentNote(scope: string, name: string): { record: IntentRecord; drop: () => void } | undefined {
    const lock = intentId(scope, name);
    const record = this.#notes.read(lock);
    return record && { record, drop: () => this.#notes.drop(lock, record.key) };
  }

  clearNotes(scope: string): void {
    this.#notes.clear(scope);
  }

  /** Sends `record` to the coordinators of the other tabs (not to this one's listeners). */
  publish(record: IntentRecord): void {
    this.#post(record);
  }

  /** Hears records published by other tabs. Messages that are not valid records are ignored. */
  subscribe(listener: (record: IntentRecord) => void): () => void {
    this.#listeners.add(listener);
    this.#open();
    return () => {
      this.#listeners.delete(listener);
    };
  }

  close(): void {
    this.#closed = true;
    this.#holdsOf?.close();
    this.#listeners.clear();
    this.#channel?.close();
    this.#channel = undefined;
  }

  #post(message: unknown): void {
    try {
      this.#open()?.postMessage(message);
    } catch {
      // A closed or unclonable channel: telling the other tabs is best effort.
    }
  }

  #open(): BroadcastChannel | undefined {
    if (this.#channel || this.#closed || typeof BroadcastChannel === 'undefined') return this.#channel;
    try {
      const channel = new BroadcastChannel(this.#channelName);
      channel.onmessage = (event: MessageEvent) => this.#receive(event.data);
      // Node keeps the process alive for an open channel; a browser has no `unref`.
      (channel as { unref?: () => void }).unref?.();
      this.#channel = channel;
    } catch {
      // Opaque origins may refuse a channel: stay silent, as without BroadcastChannel.
    }
    return this.#channel;
  }

  #receive(data: unknown): void {
    const want = (data as { [WANT]?: unknown } | null)?.[WANT];
    if (typeof want === 'string') {
      this.#holdsOf?.wanted(want);
      return;
    }
    const parsed = parseRecord(data);
    if (!('record' in parsed)) return;
    for (const listener of this.#listeners) {
      try {
        listener({ ...parsed.record });
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
