import { STORE_METHODS, type StoreMethod } from './forward.js';
import type { ObservableStore, Store, StoreEvent } from './store.js';

/**
 * A store that opens in the background: every call waits for `opening`. Lets the
 * platform entries hand `createClient` (synchronous) a durable store whose opening is
 * asynchronous (IndexedDB, a directory). An opening failure rejects every call with it.
 */
export function lazyStore(opening: Promise<Store>): Store & ObservableStore {
  // Keep an unawaited failure from being reported before anyone calls the store.
  opening.catch(() => undefined);
  // Every call of the Store interface waits for the store, then goes to it as made.
  const forward =
    (method: StoreMethod) =>
    async (...args: unknown[]) => {
      const store = await opening;
      return (store[method] as (...args: unknown[]) => unknown).apply(store, args);
    };
  return {
    ...(Object.fromEntries(STORE_METHODS.map((method) => [method, forward(method)])) as Pick<Store, StoreMethod>),
    close: async () => (await opening.catch(() => undefined))?.close?.(),
    subscribe(listener: (event: StoreEvent) => void) {
      let unsubscribe: (() => void) | undefined;
      let closed = false;
      opening.then(
        (store) => {
          const observable = store as Partial<ObservableStore>;
          if (!closed && observable.subscribe) unsubscribe = observable.subscribe(listener);
        },
        () => undefined,
      );
      return () => {
        closed = true;
        unsubscribe?.();
      };
    },
  };
}
