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

/**
 * Resolves true once online (only `online === false` is offline), false after `ms`; rejects
 * with the signal's reason if it aborts first, or with what `online` or `onOnline` threw. A
 * listener called at once, twice or late, and an `onOnline` that returns no unsubscribe (or
 * one that throws), change nothing of that.
 */
export function untilOnline(network: Network, ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    let settled = false;
    let off: unknown;
    const unsubscribe = () => {
      try {
        if (settled && typeof off === 'function') off();
      } catch {
        // A listener left subscribed calls back into a settled wait: harmless.
      }
    };
    const done = (value: boolean | { reason: unknown }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      unsubscribe();
      if (typeof value === 'boolean') resolve(value);
      else reject(value.reason);
    };
    const onAbort = () => done({ reason: signal?.reason });
    const timer = setTimeout(() => done(false), ms);
    try {
      if (network.online !== false) return done(true);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      // The property decides, not the event: Chromium fires `online` in a page it unloads while still offline.
      off = network.onOnline(() => {
        try {
          if (network.online !== false) done(true);
        } catch (error) {
          done({ reason: error });
        }
      });
      unsubscribe(); // called back before onOnline returned: the unsubscribe came only now
    } catch (error) {
      done({ reason: error });
    }
  });
}
