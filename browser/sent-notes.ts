import { parseRecord } from '../src/store/record-schema.js';
import type { IntentRecord } from '../src/store/store.js';

/** The part of `Storage` (localStorage) the notes use; `key` and `length` to clear a scope's. */
export type NoteStorage = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> &
  Partial<Pick<Storage, 'key' | 'length'>>;

/**
 * Notes of intents sent before their `in_flight` write landed (a click's request leaves
 * with the write, not after it: `WebLocksCoordinator.hold`). localStorage is written
 * synchronously, before the request leaves, and survives a reload or a crashed tab in the
 * frame before IndexedDB answers; the next read under the intent's lock finds the note and
 * stores the intent as sent. A note is dropped once a write of the call has landed. Where
 * storage is missing or refuses (workers, private modes, a full quota) nothing is noted,
 * and the call takes the strict path instead (its write before the first byte).
 */
export class SentNotes {
  constructor(
    private readonly storage: () => NoteStorage | undefined,
    private readonly prefix: string,
  ) {}

  /** Notes `record` as sent under `lock`; returns the function that drops the note, or `undefined` if none could be made. */
  note(lock: string, record: IntentRecord): (() => void) | undefined {
    const storage = this.#storage();
    try {
      if (!storage) return undefined;
      storage.setItem(this.prefix + lock, JSON.stringify(record));
    } catch {
      return undefined; // a full quota, a private mode
    }
    return () => this.drop(lock, record.key);
  }

  /** Drops the note under `lock` if it is still the one of `key`. */
  drop(lock: string, key: string): void {
    try {
      if (this.read(lock)?.key === key) this.#storage()?.removeItem(this.prefix + lock);
    } catch {
      // Left behind, the note is applied once more at the next read: harmless.
    }
  }

  /** Drops every note whose record is of `scope`. */
  clear(scope: string): void {
    try {
      const storage = this.#storage();
      if (!storage?.key) return;
      const names: string[] = [];
      for (let i = 0; i < (storage.length ?? 0); i++) {
        const name = storage.key(i);
        if (name?.startsWith(this.prefix)) names.push(name);
      }
      for (const name of names)
        if (this.read(name.slice(this.prefix.length))?.scope === scope) storage.removeItem(name);
    } catch {
      // Storage that refuses: the notes stay, and are checked against the store when read.
    }
  }

  /** The note left under `lock`, if any (an unreadable one counts as none). */
  read(lock: string): IntentRecord | undefined {
    try {
      const text = this.#storage()?.getItem(this.prefix + lock);
      const parsed = text ? parseRecord(JSON.parse(text)) : undefined;
      return parsed && 'record' in parsed ? parsed.record : undefined;
    } catch {
      return undefined;
    }
  }

  /** Kept once read: the getter of `localStorage` costs a click's request some 15 µs in Chromium. */
  #storageOf: NoteStorage | undefined;

  #storage(): NoteStorage | undefined {
    try {
      this.#storageOf ??= this.storage();
      return this.#storageOf;
    } catch {
      return undefined; // a sandboxed frame throws on `localStorage` itself
    }
  }
}
