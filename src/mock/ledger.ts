/** What the contract server counts, so tests can assert exactly-once. */
import type { Fault } from './faults.js';
import { scopedId } from './key-store.js';

/** One request as the server saw it, in arrival order. */
export interface RequestLogEntry {
  method: string;
  /** URL path, without the query. */
  path: string;
  /** The decoded idempotency key; `undefined` when the request carried none or an invalid one. */
  key: string | undefined;
  scope: string;
  /** The status the client got; `null` when it got no HTTP answer (dropped, hung, not answered yet). */
  status: number | null;
  /** True when the answer was a stored response replayed. */
  replayed: boolean;
  /** The injected fault this request consumed, if any. */
  fault: Fault['fault'] | undefined;
}

interface KeyCounts {
  scope: string;
  key: string;
  effects: number;
  attempts: number;
}

export class Ledger {
  readonly requests: RequestLogEntry[] = [];
  readonly #perKey = new Map<string, KeyCounts>();
  #totalEffects = 0;

  #counts(scope: string, key: string): KeyCounts {
    const id = scopedId(scope, key);
    let counts = this.#perKey.get(id);
    if (!counts) {
      counts = { scope, key, effects: 0, attempts: 0 };
      this.#perKey.set(id, counts);
    }
    return counts;
  }

  #sum(key: string, scope: string | undefined, field: 'effects' | 'attempts'): number {
    let total = 0;
    for (const counts of this.#perKey.values()) {
      if (counts.key === key && (scope === undefined || counts.scope === scope)) total += counts[field];
    }
    return total;
  }

  countAttempt(scope: string, key: string): void {
    this.#counts(scope, key).attempts += 1;
  }

  countEffect(scope: string, key: string | undefined): void {
    this.#totalEffects += 1;
    if (key !== undefined) this.#counts(scope, key).effects += 1;
  }

  /** Effects for `key` (in `scope`, or summed over scopes), or all effects when `key` is omitted. */
  effects(key?: string, scope?: string): number {
    return key === undefined ? this.#totalEffects : this.#sum(key, scope, 'effects');
  }

  /** Requests that carried `key` (in `scope`, or summed over scopes). */
  attempts(key: string, scope?: string): number {
    return this.#sum(key, scope, 'attempts');
  }

  clear(): void {
    this.requests.length = 0;
    this.#perKey.clear();
    this.#totalEffects = 0;
  }
}
