/**
 * A MemoryStore whose nth call of one kind misbehaves. `update` calls are told apart by
 * what their updater does to the stored record (run once on a copy first), since the
 * engine sends every write through one method.
 */
import { MemoryStore } from '../../src/index.js';
import type { ClaimResult, DeleteOptions, IntentRecord, IntentState, RecordUpdater } from '../../src/store/store.js';

export const STORE_OPS = [
  'claim',
  'get',
  'update:in_flight',
  'update:count',
  'update:renew',
  'update:settle',
  'update:undo',
  'delete',
  'list',
  'sweep',
  'clear',
  'close',
] as const;
export type StoreOp = (typeof STORE_OPS)[number];

export const STORE_FAULTS = [
  'throw-before',
  'throw-after',
  'hang',
  'late',
  'garbage-other',
  'garbage-empty',
  'garbage-undefined',
] as const;
export type StoreFault = (typeof STORE_FAULTS)[number];

/** How long a `late` call takes after applying its effect: well past any case's deadline. */
export const LATE_MS = 4000;

/** Which write an updater is, from what it changes. */
export function writeKind(current: IntentRecord | undefined, next: IntentRecord | undefined): StoreOp {
  if (next?.state === 'ready' && current?.state === 'in_flight') return 'update:undo'; // nothing left: back as before
  if (!next || !current) return next?.state === 'in_flight' ? 'update:in_flight' : 'update:undo';
  if (next.state === 'in_flight' && (current.state !== 'in_flight' || current.lease?.owner !== next.lease?.owner))
    return 'update:in_flight';
  if (current.lease && !next.lease) return next.state === current.state ? 'update:undo' : 'update:settle';
  if (next.attempts > current.attempts) return 'update:count';
  if (current.lease && next.lease && current.lease.until !== next.lease.until) return 'update:renew';
  return 'update:undo';
}

export class FaultyStore extends MemoryStore {
  fault: { op: StoreOp; kind: StoreFault; nth: number } | undefined;
  readonly calls = new Map<StoreOp, number>();
  /** Every call seen, in order: for reports. */
  readonly log: string[] = [];
  /** Every record a write left, in order: a succeeded one must stay succeeded. */
  readonly history: IntentRecord[] = [];
  /** Runs before a call of the given kind (another writer acting just before the settle). */
  before: { op: StoreOp; run: () => Promise<void> } | undefined;

  lift() {
    this.fault = undefined;
  }

  /** Runs `effect` through the fault planned for this call of `op`, if any. */
  async #through<T>(op: StoreOp, effect: () => Promise<T>, garbage: (kind: StoreFault) => unknown): Promise<T> {
    const n = (this.calls.get(op) ?? 0) + 1;
    this.calls.set(op, n);
    this.log.push(op);
    if (this.before?.op === op) {
      const { run } = this.before;
      this.before = undefined;
      await run();
    }
    const f = this.fault;
    if (!f || f.op !== op || f.nth !== n) return effect();
    if (f.kind === 'throw-before') throw new Error(`EIO before ${op}`);
    if (f.kind === 'hang') return new Promise<T>(() => {});
    const result = await effect();
    if (f.kind === 'throw-after') throw new Error(`EIO after ${op}`);
    if (f.kind === 'late') return new Promise<T>((resolve) => setTimeout(() => resolve(result), LATE_MS));
    return garbage(f.kind) as T;
  }

  #other(scope: string): IntentRecord {
    const t = Date.now();
    return {
      v: 1,
      scope,
      name: 'someone-else',
      key: 'other-key-0000',
      state: 'ready',
      attempts: 0,
      createdAt: t,
      updatedAt: t,
    };
  }

  #garbageRecord(scope: string, kind: StoreFault): unknown {
    return kind === 'garbage-other' ? this.#other(scope) : kind === 'garbage-empty' ? {} : undefined;
  }

  override claim(fresh: IntentRecord): Promise<ClaimResult> {
    return this.#through(
      'claim',
      () => super.claim(fresh),
      (k) => (k === 'garbage-undefined' ? undefined : { record: this.#garbageRecord(fresh.scope, k), created: true }),
    );
  }
  override get(scope: string, name: string) {
    return this.#through(
      'get',
      () => super.get(scope, name),
      (k) => this.#garbageRecord(scope, k),
    );
  }
  override async update(scope: string, name: string, updater: RecordUpdater) {
    const current = await super.get(scope, name);
    let op: StoreOp = 'update:undo';
    try {
      op = writeKind(current, updater(current ? structuredClone(current) : undefined));
    } catch {}
    return this.#through(
      op,
      async () => {
        const stored = await super.update(scope, name, updater);
        if (stored) this.history.push(structuredClone(stored));
        return stored;
      },
      (k) => this.#garbageRecord(scope, k),
    );
  }
  override delete(scope: string, name: string, key?: string, options?: DeleteOptions) {
    return this.#through(
      'delete',
      () => super.delete(scope, name, key, options),
      () => undefined,
    );
  }
  override list(scope: string, states?: readonly IntentState[]) {
    return this.#through(
      'list',
      () => super.list(scope, states),
      (k) => (k === 'garbage-undefined' ? undefined : [this.#garbageRecord(scope, k)]),
    );
  }
  override clear(scope: string, options?: DeleteOptions) {
    return this.#through(
      'clear',
      () => super.clear(scope, options),
      () => undefined,
    );
  }
  override sweep(scope: string, now: number) {
    return this.#through(
      'sweep',
      () => super.sweep(scope, now),
      (k) => (k === 'garbage-undefined' ? undefined : k === 'garbage-empty' ? {} : -1),
    );
  }
  async close() {
    return this.#through(
      'close',
      async () => undefined,
      () => undefined,
    );
  }
}
