import type { ObservableStore, Store, StoreEvent } from './store.js';

/**
 * A store that opens in the background: every call waits for `opening`. Lets the
 * platform entries hand `createClient` (synchronous) a durable store whose opening is
 * asynchronous (IndexedDB, a directory). An opening failure rejects every call with it.
 */
export function lazyStore(opening: Promise<Store>): Store & ObservableStore {
  // Keep an unawaited failure from being reported before anyone calls the store.
  opening.catch(() => undefined);
  return {
    claim: async (fresh, options) => (await opening).claim(fresh, options),
    get: async (scope, name) => (await opening).get(scope, name),
    update: async (scope, name, updater, options) => (await opening).update(scope, name, updater, options),
    delete: async (scope, name, key) => (await opening).delete(scope, name, key),
    list: async (scope, states) => (await opening).list(scope, states),
    clear: async (scope) => (await opening).clear(scope),
    sweep: async (scope, now, options) => (await opening).sweep(scope, now, options),
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
