import type { StoreEvent } from './store.js';

/** The listeners of an `ObservableStore`: a listener that throws is reported, never breaks a write. */
export class StoreListeners {
  readonly #listeners = new Set<(event: StoreEvent) => void>();

  add(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  emit(event: StoreEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        console.error('oncely: a store listener threw', error);
      }
    }
  }
}
