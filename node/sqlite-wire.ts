/**
 * What crosses between a SqliteStore (main thread) and the thread that owns its database
 * (`sqlite-worker.ts`): the calls, the answers, and errors as plain data (a structured
 * clone keeps no class, so each error the caller may narrow on is rebuilt on arrival).
 */
import { CorruptRecordError, StoreError } from '../src/errors.js';
import type { IntentRecord, StoreEvent } from '../src/store/store.js';
import type { RowValue } from './sqlite-rows.js';
import { StoreFileError, type StoreFileProblem } from './sqlite-schema.js';

/** What the worker is started with. */
export interface WorkerConfig {
  dir: string;
  file: string;
  fsync: boolean;
  lockTimeout: number;
  /** The clock's reading when the worker starts (a FileStore import stamps it). */
  now: number;
  /**
   * @internal tests only: [0] = 1 blocks the worker inside its next commit; [1] = 1 ends it
   * after its next commit; [2] = 1 holds an integrity check (`integrity-check.ts`).
   */
  hooks?: SharedArrayBuffer;
}

/** A row as last read: its record (none for an empty slot) and the exact stored text a conditional write compares on. */
export interface SeenRow {
  record?: IntentRecord;
  text?: string;
  /** The row is damaged and `record` what it salvages: not quarantined yet. */
  damaged?: true;
}

/** The calls, by name: their arguments and what they resolve with. */
export interface Calls {
  open: [Record<string, never>, undefined];
  /** `row`: the fresh record as stored. Created: nothing comes back (the caller has it); otherwise the row found. */
  claim: [
    { scope: string; name: string; row: RowValue; now: number },
    { created: true } | { created: false; record: IntentRecord; text: string },
  ];
  /** `peek`: a damaged row whose key can be salvaged is answered as salvaged, not yet quarantined (an update's write does that). */
  read: [{ scope: string; name: string; now: number; peek?: boolean }, SeenRow];
  /**
   * Stores `row` if the row still holds `expected` (null: no row); otherwise answers what it
   * holds. `damaged`: `expected` was answered as damaged (salvaged), to be quarantined.
   */
  write: [
    {
      scope: string;
      name: string;
      row: RowValue;
      expected: string | null;
      damaged: boolean;
      strict: boolean;
      now: number;
    },
    { ok: true } | { ok: false; current: SeenRow },
  ];
  delete: [{ scope: string; name: string; key?: string; keepPending?: number }, undefined];
  list: [{ scope: string; states?: readonly string[]; now: number }, IntentRecord[]];
  clear: [{ scope: string; keepPending?: number }, undefined];
  sweep: [{ scope: string; now: number; limit: number }, number];
  quarantined: [{ scope?: string }, import('./sqlite-rows.js').QuarantinedRecord[]];
}
export type Op = keyof Calls;

export type ToWorker =
  /** `timed`: the main thread listens on `oncely:sqlite:commit`, so answers carry the commits' timings. */
  | { type: 'calls'; calls: unknown[]; timed: boolean }
  | { type: 'close' }
  /** A thread kept from a closed store serves a new one. */
  | { type: 'open'; config: WorkerConfig };

/** A commit as the worker timed it (wall and its thread's CPU time, ms). */
export interface CommitTiming {
  ms: number;
  cpuMs: number;
  writes: number;
}

export type FromWorker =
  | {
      type: 'results';
      /** Quarantines reported by commits before these answers. */
      events: StoreEvent[];
      /** Flat, as `encodeResult` writes them. */
      results: unknown[];
      commits: CommitTiming[];
      /** Syncs of the WAL since the last answers. */
      syncs: number;
    }
  /** Sent every second while calls are outstanding: the thread's loop is alive. */
  | { type: 'alive' }
  | { type: 'closed' };

// Calls and answers cross flat, one array of strings and numbers per message: a structured
// clone of that costs a fifth of one of an object per call (1.4 vs 7 µs a claim, measured).

/** Appends a call: its id, its op, then a claim's or a write's fields in order (another op's arguments as one object). */
export function encodeCall(out: unknown[], id: number, op: Op, args: unknown): void {
  if (op === 'claim') {
    const a = args as Calls['claim'][0];
    out.push(id, op, a.scope, a.name, a.row.text, a.row.state, a.row.sweepAt, a.now);
  } else if (op === 'write') {
    const a = args as Calls['write'][0];
    out.push(id, op, a.scope, a.name, a.row.text, a.row.state, a.row.sweepAt, a.expected, a.damaged, a.strict, a.now);
  } else out.push(id, op, args);
}

/** The calls `encodeCall` wrote, in order. */
export function decodeCalls(flat: readonly unknown[], each: (id: number, op: Op, args: unknown) => void): void {
  for (let i = 0; i < flat.length; ) {
    const id = flat[i] as number;
    const op = flat[i + 1] as Op;
    const f = (n: number) => flat[i + 2 + n] as never;
    if (op === 'claim') {
      each(id, op, { scope: f(0), name: f(1), row: { text: f(2), state: f(3), sweepAt: f(4) }, now: f(5) });
      i += 8;
    } else if (op === 'write') {
      const row = { text: f(2), state: f(3), sweepAt: f(4) };
      each(id, op, { scope: f(0), name: f(1), row, expected: f(5), damaged: f(6), strict: f(7), now: f(8) });
      i += 11;
    } else {
      each(id, op, f(0));
      i += 3;
    }
  }
}

/** An answer's tag: `Created` a claim's `{ created: true }`, `Written` a write's `{ ok: true }`. */
const Tag = { Value: 0, Error: 1, Created: 2, Written: 3 } as const;

/** Appends an answer: id, tag, payload (the common answers of claims and writes as a tag alone). */
export function encodeResult(out: unknown[], id: number, result: { value: unknown } | { error: WireError }): void {
  if ('error' in result) return void out.push(id, Tag.Error, result.error);
  const value = result.value as { created?: unknown; ok?: unknown } | undefined;
  if (value?.created === true) out.push(id, Tag.Created, 0);
  else if (value?.ok === true) out.push(id, Tag.Written, 0);
  else out.push(id, Tag.Value, value);
}

/** The answers `encodeResult` wrote, in order. */
export function decodeResults(
  flat: readonly unknown[],
  each: (id: number, result: { value: unknown } | { error: WireError }) => void,
): void {
  for (let i = 0; i < flat.length; i += 3) {
    const tag = flat[i + 1];
    const payload = flat[i + 2];
    each(
      flat[i] as number,
      tag === Tag.Error
        ? { error: payload as WireError }
        : { value: tag === Tag.Created ? { created: true } : tag === Tag.Written ? { ok: true } : payload },
    );
  }
}

export type WireError =
  | { kind: 'corrupt'; scope: string | undefined; intent: string | undefined; reason: string; location: string }
  | { kind: 'file'; file: string; problem: StoreFileProblem; message: string }
  | { kind: 'store'; message: string }
  | { kind: 'other'; name: string; message: string };

export function toWire(error: unknown): WireError {
  if (error instanceof CorruptRecordError) {
    const { scope, intent, reason, location } = error;
    return { kind: 'corrupt', scope, intent, reason, location };
  }
  if (error instanceof StoreFileError) {
    return { kind: 'file', file: error.file, problem: error.problem, message: error.message };
  }
  if (error instanceof StoreError) return { kind: 'store', message: error.message };
  const e = error instanceof Error ? error : new Error(String(error));
  return { kind: 'other', name: e.name, message: e.message };
}

export function fromWire(wire: WireError): Error {
  switch (wire.kind) {
    case 'corrupt':
      return new CorruptRecordError({
        scope: wire.scope,
        intent: wire.intent,
        reason: wire.reason,
        location: wire.location,
      });
    case 'file': {
      const error = new StoreFileError(wire.file, wire.problem, '');
      Object.defineProperty(error, 'message', { value: wire.message, writable: true, configurable: true });
      return error;
    }
    case 'store':
      return new StoreError(wire.message);
    default: {
      const error = new Error(wire.message);
      error.name = wire.name;
      return error;
    }
  }
}
