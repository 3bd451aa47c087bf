import type { IntentRecord, IntentState } from '../src/store/store.js';

/**
 * What `DurableObjectStore` asks the scope's object (a POST of JSON, answered in JSON). The
 * object runs each in one synchronous SQLite transaction: atomic, and durable before the
 * answer leaves (the Durable Object's output gate).
 */
export type StoreRequest =
  | { op: 'claim'; fresh: IntentRecord }
  | { op: 'read'; name: string }
  | { op: 'write'; name: string; expected: string | null; next: IntentRecord }
  | { op: 'delete'; name: string; key?: string; keepPending?: number }
  | { op: 'list'; states?: readonly IntentState[] }
  | { op: 'clear'; keepPending?: number }
  | { op: 'sweep'; now: number; limit?: number };

/** The row as stored (its exact text is what a `write` compares), or null. */
export interface Row {
  text: string | null;
}
