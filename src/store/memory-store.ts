import { intentId, isPending, isSweepable } from './record-rules.js';
import type { ClaimResult, DeleteOptions, IntentRecord, IntentState, RecordUpdater, Store } from './store.js';

/**
 * Keeps intents in memory: lost on reload or restart. Use it only in tests or where
 * losing a key is acceptable; durable stores are in `oncely/browser` and `oncely/node`.
 */
export class MemoryStore implements Store {
  readonly #records = new Map<string, IntentRecord>();

  async claim(fresh: IntentRecord): Promise<ClaimResult> {
    const id = intentId(fresh.scope, fresh.name);
    const existing = this.#records.get(id);
    if (existing) return { record: { ...existing }, created: false };
    this.#records.set(id, { ...fresh });
    return { record: { ...fresh }, created: true };
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    const record = this.#records.get(intentId(scope, name));
    return record && { ...record };
  }

  async update(scope: string, name: string, updater: RecordUpdater): Promise<IntentRecord | undefined> {
    const id = intentId(scope, name);
    const current = this.#records.get(id);
    const next = updater(current && { ...current });
    if (next === undefined) return current && { ...current };
    this.#records.set(id, { ...next });
    return { ...next };
  }

  async delete(scope: string, name: string, key?: string, options: DeleteOptions = {}): Promise<void> {
    const id = intentId(scope, name);
    const record = this.#records.get(id);
    if (record && options.keepPending !== undefined && isPending(record, options.keepPending)) return;
    if (key === undefined || record?.key === key) this.#records.delete(id);
  }

  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    const out: IntentRecord[] = [];
    for (const record of this.#records.values()) {
      if (record.scope === scope && (!states || states.includes(record.state))) out.push({ ...record });
    }
    return out;
  }

  async clear(scope: string, options: DeleteOptions = {}): Promise<void> {
    const keep = options.keepPending;
    for (const [id, record] of this.#records)
      if (record.scope === scope && (keep === undefined || !isPending(record, keep))) this.#records.delete(id);
  }

  async sweep(scope: string, now: number): Promise<number> {
    let removed = 0;
    for (const [id, record] of this.#records) {
      if (record.scope === scope && isSweepable(record, now)) {
        this.#records.delete(id);
        removed++;
      }
    }
    return removed;
  }
}
