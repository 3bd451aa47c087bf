import type { Store } from './store.js';

/** A method of the {@link Store} interface that every store has (`close` is optional). */
export type StoreMethod = Exclude<keyof Store, 'close'>;

/**
 * Every such method, by name. Written as a record so that a method added to `Store` is a
 * type error here until it is listed, and every wrapper built from this list forwards it.
 */
const METHODS = { claim: 0, get: 0, update: 0, delete: 0, list: 0, clear: 0, sweep: 0 } satisfies Record<
  StoreMethod,
  0
>;
export const STORE_METHODS = Object.keys(METHODS) as StoreMethod[];

/**
 * A view of a store that answers `close` itself (a store shared by several clients,
 * closed with the last) and sends every other property to `store` as it is, each method
 * called on `store` with every argument it was given: no method is re-written, so none
 * can lose a parameter.
 */
export function storeView<S extends object>(store: S, close: () => Promise<void>): S {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'close') return close;
      const value: unknown = Reflect.get(target, property, target);
      // Bound to the store itself: its private fields are not the proxy's.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
