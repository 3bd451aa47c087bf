import type { UseStore } from 'idb-keyval';
import type { StoreEvent } from '../src/store/store.js';

/** What a transaction body uses to hand back its outcome. All calls are synchronous. */
export interface TxControl<T> {
  /** The value the transaction resolves with once it has committed. */
  result(value: T): void;
  /** Reject with `error` after the transaction commits (its writes are kept). */
  fail(error: unknown): void;
  /** Reject with `error` and roll every write of the transaction back. */
  abort(error: unknown): void;
  /** An event to report once the transaction has committed. */
  report(event: StoreEvent): void;
  /** Wraps a request callback: an exception inside it aborts the transaction. */
  guard(fn: () => void): () => void;
}

/**
 * Runs `body` in one IndexedDB transaction and settles when the transaction does: a
 * readwrite transaction resolves only after `complete`, i.e. once its writes are
 * committed. The body issues raw requests and must stay synchronous between them (no
 * `await`): a transaction commits as soon as no request is pending.
 */
export function runTransaction<T>(
  use: UseStore,
  mode: IDBTransactionMode,
  body: (store: IDBObjectStore, tx: TxControl<T>) => void,
  onCommitted: (events: StoreEvent[]) => void,
): Promise<T> {
  return use(
    mode,
    (store) =>
      new Promise<T>((resolve, reject) => {
        const transaction = store.transaction;
        let value: T | undefined;
        let failure: { error: unknown } | undefined;
        const events: StoreEvent[] = [];
        const abort = (error: unknown) => {
          failure ??= { error };
          try {
            transaction.abort();
          } catch {
            // Already finished or aborting: the abort handler reports `failure`.
          }
        };
        const control: TxControl<T> = {
          result: (v) => {
            value = v;
          },
          fail: (error) => {
            failure ??= { error };
          },
          abort,
          report: (event) => {
            events.push(event);
          },
          guard: (fn) => () => {
            try {
              fn();
            } catch (error) {
              abort(error);
            }
          },
        };
        transaction.oncomplete = () => {
          onCommitted(events);
          if (failure) reject(failure.error);
          else resolve(value as T);
        };
        transaction.onabort = () => {
          reject(failure ? failure.error : (transaction.error ?? new Error('IndexedDB transaction aborted')));
        };
        control.guard(() => body(store, control))();
      }),
  );
}
