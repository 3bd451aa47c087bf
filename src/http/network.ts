/**
 * Whether the platform can reach the network at all (`navigator.onLine` and the `online`
 * event, where the platform has them: browsers, workers). A call does not send while
 * offline: it waits for the network within its deadline (DESIGN rule 14).
 */
export interface Network {
  /** False when the platform knows it is offline. */
  readonly online: boolean;
  /** Calls `listener` once the platform is back online. Returns the unsubscribe. */
  onOnline(listener: () => void): () => void;
}

/** The platform's, or `undefined` where it cannot tell (Node). */
export function platformNetwork(): Network | undefined {
  const nav = (globalThis as { navigator?: { onLine?: unknown } }).navigator;
  const target = globalThis as { addEventListener?: unknown; removeEventListener?: unknown };
  if (typeof nav?.onLine !== 'boolean' || typeof target.addEventListener !== 'function') return undefined;
  return {
    get online() {
      return nav.onLine !== false;
    },
    onOnline(listener) {
      globalThis.addEventListener('online', listener);
      return () => globalThis.removeEventListener('online', listener);
    },
  };
}

/** Resolves true once online, false after `ms`; rejects with the signal's reason if it aborts first. */
export function untilOnline(network: Network, ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (network.online) return Promise.resolve(true);
  return new Promise<boolean>((resolve, reject) => {
    const done = (value: boolean | { reason: unknown }) => {
      clearTimeout(timer);
      off();
      signal?.removeEventListener('abort', onAbort);
      if (typeof value === 'boolean') resolve(value);
      else reject(value.reason);
    };
    const onAbort = () => done({ reason: signal?.reason });
    const timer = setTimeout(() => done(false), ms);
    // The property decides, not the event: Chromium fires `online` in a page it unloads while still offline.
    const off = network.onOnline(() => network.online && done(true));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}
