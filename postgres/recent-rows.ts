/**
 * The rows a `PostgresStore` saw last, by intent, about `size` of them: the most recently
 * written or read kept, the others forgotten a half at a time. Two maps that take turns (new
 * rows go to the younger; when it holds half, the older is dropped and it becomes the older)
 * cost one map operation per write, where a single map kept in order cost a delete, a set and,
 * once full, an eviction that walks past the holes earlier deletes left at its front.
 */
import type { StoredRecord } from './rows.js';

export class RecentRows {
  readonly #half: number;
  #young = new Map<string, StoredRecord>();
  #old = new Map<string, StoredRecord>();

  constructor(size: number) {
    this.#half = Math.ceil(size / 2);
  }

  get(id: string): StoredRecord | undefined {
    return this.#young.get(id) ?? this.#old.get(id);
  }

  set(id: string, stored: StoredRecord): void {
    if (!(this.#half > 0)) return; // `size` 0: remembers nothing
    if (this.#young.size >= this.#half && !this.#young.has(id)) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(id, stored);
    // The older copy would outlive a delete of the younger one: drop it now.
    this.#old.delete(id);
  }

  delete(id: string): void {
    this.#young.delete(id);
    this.#old.delete(id);
  }

  /** Forgets the rows `drop` says to. */
  deleteWhere(drop: (stored: StoredRecord) => boolean): void {
    for (const map of [this.#young, this.#old]) for (const [id, stored] of map) if (drop(stored)) map.delete(id);
  }

  clear(): void {
    this.#young.clear();
    this.#old.clear();
  }
}
