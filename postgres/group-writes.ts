/**
 * Group writes: while `limit` write statements of a store are running, the claims and
 * compare-and-sets asked for meanwhile wait, and go as one statement when one finishes —
 * one round trip, one parse and one commit for many intents. A lone writer never waits
 * (its statement is the single one it always was). Under load the server's per-statement
 * CPU, not the rows, is what a request costs; see docs/postgres.md.
 *
 * Every statement waits at most {@link LOCK_WAIT_MS} for a row lock: a write whose row an
 * open transaction holds (the app's uncommitted claim of the same intent) gives its slot
 * back and tries again alone, after a pause, until its time bound, so rows held by one
 * tenant's transactions never stall the writes of the others.
 */
import { StoreError } from '../src/errors.js';
import type { IntentRecord } from '../src/store/store.js';
import type { QueryConfig, QueryResultLike } from './database.js';
import { groupRow, recordValues, type Seen } from './rows.js';
import { HELD_LOCK_WAIT_MS, LOCK_WAIT_MS, WRITES } from './statements.js';

export { HELD_LOCK_WAIT_MS, LOCK_WAIT, LOCK_WAIT_MS } from './statements.js';

export type WriteKind = 'insert' | 'cas';

export interface GroupWrite {
  kind: WriteKind;
  /** intentId: two writes of one intent never share a statement, nor run at once. */
  id: string;
  /** The record to write (validated): the row of an insert, the new row of a compare-and-set. */
  record: IntentRecord;
  /** A compare-and-set's row as its updater saw it. */
  seen?: Seen;
  relaxed: boolean;
  /** What the write does, for its errors. */
  what: string;
}

/** Runs a statement (time-bounded, failures as `StoreError`s with the driver's error as cause). */
export type Run = (
  config: QueryConfig,
  what: string,
  context: { scope?: string; intent?: string },
) => Promise<QueryResultLike>;

interface Waiting {
  write: GroupWrite;
  resolve(version: string | undefined): void;
  reject(error: unknown): void;
  /** When (performance.now()) this write stops trying for a held row. */
  deadline: number;
  /** Tries that found a row held past {@link LOCK_WAIT_MS}: such a write goes alone. */
  held: number;
}

/** Most writes in one statement. */
const GROUP_MAX = 64;
/** Parts a group refused for a held row is split into, each tried again at once. */
const HELD_SPLIT = 8;
/** Pauses (ms) between tries of a write whose row is held: doubling from the first to the last, jittered. */
const HELD_PAUSE_MS = [50, 1_000] as const;

const contextOf = (write: GroupWrite) => ({ scope: write.record.scope, intent: write.record.name });
/** The values of a write's single statement: the record's 12, a compare-and-set's row as seen. */
function singleValues(write: GroupWrite): unknown[] {
  const values = recordValues(write.record);
  if (write.seen) values.push(write.seen.version, write.seen.key, write.seen.createdAt);
  return values;
}
/** A returned row's (scope, name), as a map key: PostgreSQL text holds no NUL, so no two rows share one. */
const rowId = (scope: unknown, name: unknown) => `${scope}\u0000${name}`;

/**
 * The group statement failed on one row and rolled back (SQLSTATE classes 22 data
 * exception, 23 integrity violation, 40 rollback: a deadlock with another machine's group,
 * 54 program limit exceeded: one row too large for its index entry; 55P03: a row lock
 * held past {@link LOCK_WAIT_MS}): written alone, its rows may succeed. Under a
 * `StoreError`, the driver's error is the cause.
 */
const rolledBackOnOneRow = (error: unknown): boolean => {
  const code = causeCode(error);
  return typeof code === 'string' && (/^(22|23|40|54)[0-9A-Z]{3}$/.test(code) || code === LOCK_NOT_AVAILABLE);
};

/** SQLSTATE 55P03: the statement's `lock_timeout` ran out waiting for a row another transaction holds. */
export const LOCK_NOT_AVAILABLE = '55P03';
const causeCode = (error: unknown): unknown => (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;

/** The pause before the next try of a write whose row was held `held` times: doubling, with jitter. */
export const heldPause = (held: number): number => {
  const ceiling = Math.min(HELD_PAUSE_MS[1], HELD_PAUSE_MS[0] * 2 ** Math.max(0, held - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
};

/** The error of a write that gave up on a held row: retryable, nothing was written. */
export function heldTooLong(error: unknown, what: string, context: { scope?: string; intent?: string }, ms: number) {
  return new StoreError(
    `PostgresStore could not ${what}: its row stayed locked by another transaction (an open transaction of the app?) for ${Math.round(ms)} ms; nothing was written, try again.`,
    { ...context, cause: (error as { cause?: unknown }).cause ?? error },
  );
}

export class GroupWrites {
  readonly #run: Run;
  readonly #limit: number;
  /** How long (ms) a write keeps trying for a held row: the store's `timeout`. */
  readonly #timeout: number;
  #running = 0;
  /** Intents with a write in a running statement. */
  readonly #busy = new Set<string>();
  #queue: Waiting[] = [];

  constructor(run: Run, limit: number, timeout: number) {
    this.#run = run;
    this.#limit = limit;
    this.#timeout = timeout;
  }

  /**
   * Resolves with the row's new version, or `undefined` when no row was written (conflict,
   * CAS lost). A row held by another transaction past the store's `timeout` rejects with a
   * `StoreError` (cause: 55P03) and nothing written.
   */
  write(write: GroupWrite): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      const waiting = { write, resolve, reject, deadline: performance.now() + this.#timeout, held: 0 };
      // A slot free and nothing waiting: it goes at once, alone (what a lone writer always does).
      if (this.#running < this.#limit && this.#queue.length === 0 && !this.#busy.has(write.id)) {
        this.#busy.add(write.id);
        this.#start([waiting]);
      } else {
        this.#queue.push(waiting);
        this.#pump();
      }
    });
  }

  #pump(): void {
    while (this.#running < this.#limit && this.#queue.length > 0) {
      const group = this.#take();
      if (group.length === 0) return; // every waiting write's intent is busy: the statement ending it pumps again
      this.#start(group);
    }
  }

  /** Runs `group` (its intents marked busy) in a slot; when it ends, the next writes go. */
  #start(group: Waiting[]): void {
    this.#running++;
    const ended = () => {
      this.#running--;
      for (const w of group) this.#busy.delete(w.write.id);
      this.#pump();
    };
    (group.length === 1 ? this.#alone(group[0]!) : this.#send(group)).then(ended, ended);
  }

  /**
   * The oldest waiting write whose intent is idle, and the waiting writes of its kind that
   * can join it, their intents marked busy. A write that found its row held goes alone: it
   * would stall a group again.
   */
  #take(): Waiting[] {
    const group: Waiting[] = [];
    const rest: Waiting[] = [];
    for (const waiting of this.#queue) {
      const { id, kind } = waiting.write;
      const joins = group.length === 0 || (group.length < GROUP_MAX && group[0]!.held === 0 && waiting.held === 0);
      if (joins && !this.#busy.has(id) && (group[0]?.write.kind ?? kind) === kind) {
        group.push(waiting);
        this.#busy.add(id);
      } else rest.push(waiting);
    }
    this.#queue = rest;
    return group;
  }

  /**
   * `afterHeld`: the group is part of one refused for a held row (55P03), and waits for a
   * row lock only HELD_LOCK_WAIT_MS.
   */
  async #send(group: Waiting[], afterHeldGroup = false): Promise<void> {
    if (group.length === 1) return this.#alone(group[0]!, afterHeldGroup);
    const sorted = group.slice().sort(byIntent);
    const first = sorted[0]!.write;
    const relaxed = group.every((w) => w.write.relaxed);
    const statements = WRITES[first.kind][relaxed ? 1 : 0];
    const { name, text } = afterHeldGroup ? statements.groupHeld : statements.group;
    const rows = sorted.map((w) => groupRow(w.write.record, w.write.seen));
    let result: QueryResultLike;
    try {
      result = await this.#run({ name, text, values: [JSON.stringify(rows)] }, 'write intents', {
        scope: first.record.scope,
      });
    } catch (error) {
      // A row held by another transaction: the group in up to 8 parts, at once, each with the
      // short lock wait, and so on down to the held rows' writes alone (which go on to their
      // pauses): a few statements instead of one per write, and the writes grouped with a
      // held row wait little longer than the group's own lock wait.
      if (causeCode(error) === LOCK_NOT_AVAILABLE) {
        const size = Math.ceil(sorted.length / HELD_SPLIT);
        const parts = Array.from({ length: Math.ceil(sorted.length / size) }, (_, i) =>
          sorted.slice(i * size, (i + 1) * size),
        );
        await Promise.all(parts.map((part) => this.#send(part, true)));
      }
      // Refused for one row otherwise (a key taken twice, a deadlock): each write alone and
      // at once, each with its own answer and its own time bound (one after another, the last
      // would wait out every earlier one's). Anything else (a timeout, a lost connection)
      // fails them all, as it would a single write.
      else if (rolledBackOnOneRow(error)) await Promise.all(group.map((w) => this.#alone(w)));
      else for (const w of group) w.reject(forCaller(error, contextOf(w.write)));
      return;
    }
    const versions = new Map<string, string>();
    for (const row of result.rows) versions.set(rowId(row.scope, row.name), String(row.version));
    for (const w of group) w.resolve(versions.get(rowId(w.write.record.scope, w.write.record.name)));
  }

  async #alone(waiting: Waiting, afterHeldGroup = false): Promise<void> {
    const { write } = waiting;
    const statements = WRITES[write.kind][write.relaxed ? 1 : 0];
    const { name, text } = waiting.held > 0 || afterHeldGroup ? statements.singleHeld : statements.single;
    try {
      const result = await this.#run({ name, text, values: singleValues(write) }, write.what, contextOf(write));
      waiting.resolve(result.rows.length === 1 ? String(result.rows[0].version) : undefined);
    } catch (error) {
      if (causeCode(error) !== LOCK_NOT_AVAILABLE) return waiting.reject(error);
      // Its row is held by another transaction: give the slot back, try again alone after a
      // pause, until the time bound. The statement rolled back: nothing was written.
      waiting.held++;
      const pause = heldPause(waiting.held);
      const now = performance.now();
      if (now + pause + HELD_LOCK_WAIT_MS > waiting.deadline)
        return waiting.reject(
          heldTooLong(error, write.what, contextOf(write), this.#timeout - (waiting.deadline - now)),
        );
      setTimeout(() => {
        this.#queue.push(waiting);
        this.#pump();
      }, pause);
    }
  }
}

/** The group's failure as this caller's own error: its scope and intent, never another caller's. */
function forCaller(error: unknown, context: { scope: string; intent: string }): unknown {
  if (!(error instanceof StoreError)) return error;
  return new StoreError(error.message, { ...context, cause: error.cause ?? error });
}

/** Order of (scope, name), the primary key's: every group locks its rows in it. */
const byIntent = (a: Waiting, b: Waiting): number => {
  const x = a.write.record;
  const y = b.write.record;
  if (x.scope !== y.scope) return x.scope < y.scope ? -1 : 1;
  return x.name < y.name ? -1 : x.name > y.name ? 1 : 0;
};
