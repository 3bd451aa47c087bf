/**
 * The server's idempotency records: per scoped key, the request fingerprint, the state
 * and the stored response. Retention is checked lazily against the injected clock.
 */
import type { StoredResponse } from './routes.js';

export type RecordState = 'in_progress' | 'completed';

export interface IdempotencyRecord {
  fingerprint: string;
  state: RecordState;
  /** When the key was first seen (server clock); retention counts from here. */
  createdAt: number;
  /** Set on completion. */
  response?: StoredResponse;
  /** A hold injected by an `in-progress` fault: released at this time. */
  heldUntil?: number;
  /** `Retry-After` seconds for the 409s this record causes, when not the default. */
  retryAfter?: number;
}

/** What the server finds for a key, checked in this order: mismatch wins over in progress. */
export type Lookup =
  | { kind: 'new' }
  | { kind: 'mismatch'; record: IdempotencyRecord }
  | { kind: 'in_progress'; record: IdempotencyRecord }
  | { kind: 'completed'; record: IdempotencyRecord; response: StoredResponse };

/** Identify a key within its scope: keys of different scopes never collide. */
export const scopedId = (scope: string, key: string): string => JSON.stringify([scope, key]);

export class RecordStore {
  readonly #records = new Map<string, IdempotencyRecord>();
  readonly #retentionMs: number;
  readonly #now: () => number;

  constructor(retentionMs: number, now: () => number) {
    this.#retentionMs = retentionMs;
    this.#now = now;
  }

  /** The live record for `id`, after dropping it if its retention or hold has run out. */
  get(id: string): IdempotencyRecord | undefined {
    const record = this.#records.get(id);
    if (!record) return undefined;
    const now = this.#now();
    const heldOut = record.heldUntil !== undefined && now >= record.heldUntil;
    const expired = record.state === 'completed' && now - record.createdAt >= this.#retentionMs;
    if (heldOut || expired) {
      this.#records.delete(id);
      return undefined;
    }
    return record;
  }

  lookup(id: string, fingerprint: string): Lookup {
    const record = this.get(id);
    if (!record) return { kind: 'new' };
    if (record.fingerprint !== fingerprint) return { kind: 'mismatch', record };
    if (record.state === 'in_progress' || !record.response) return { kind: 'in_progress', record };
    return { kind: 'completed', record, response: record.response };
  }

  /** Take the key for a request about to run. Call right after a `new` lookup, with no await between. */
  claim(id: string, fingerprint: string): IdempotencyRecord {
    const record: IdempotencyRecord = { fingerprint, state: 'in_progress', createdAt: this.#now() };
    this.#records.set(id, record);
    return record;
  }

  /** Hold a free key as in progress for `ms`, as if another request had it. */
  hold(id: string, fingerprint: string, ms: number, retryAfter: number | undefined): void {
    if (this.get(id)) return;
    const now = this.#now();
    this.#records.set(id, { fingerprint, state: 'in_progress', createdAt: now, heldUntil: now + ms, retryAfter });
  }

  complete(record: IdempotencyRecord, response: StoredResponse): void {
    record.state = 'completed';
    record.response = response;
  }

  /** Forget `record` (the request did not commit), unless the key has moved on to another record. */
  release(id: string, record: IdempotencyRecord): void {
    if (this.#records.get(id) === record) this.#records.delete(id);
  }

  /** Every live record's id and state. */
  *entries(): IterableIterator<[string, IdempotencyRecord]> {
    for (const id of [...this.#records.keys()]) {
      const record = this.get(id);
      if (record) yield [id, record];
    }
  }

  clear(): void {
    this.#records.clear();
  }
}
