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
import type { QueryConfig, QueryResultLike } from './database.js';

export type WriteKind = 'insert' | 'cas';

export interface GroupWrite {
  kind: WriteKind;
  /** intentId: two writes of one intent never share a statement, nor run at once. */
  id: string;
  /** The single statement (prepared, as written alone), what it does and for which intent. */
  single: QueryConfig;
  what: string;
  context: { scope: string; intent: string };
  /** This write's row of the group statement (its fields named as in {@link groupSql}). */
  row: Record<string, unknown>;
  relaxed: boolean;
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
const RELAXED = `set_config('synchronous_commit', 'off', true)`;
/**
 * How long one statement waits for a row lock (ms) before it gives up (55P03): a row held
 * by an open transaction (the app's uncommitted claim, a worker's FOR UPDATE) must not hold
 * a write slot, nor, in a group, the unrelated writes grouped with it. Set for the
 * statement's own transaction from an InitPlan, which runs before it takes its first row lock.
 */
export const LOCK_WAIT_MS = 200;
export const LOCK_WAIT = `(SELECT set_config('lock_timeout', '${LOCK_WAIT_MS}ms', true)) IS NOT NULL`;
/**
 * How long a try after a row was found held waits for it (ms). The pauses between tries do
 * the waiting, with no slot and no connection held; a long wait here would fill the slots.
 */
export const HELD_LOCK_WAIT_MS = 50;
const HELD_LOCK_WAIT = LOCK_WAIT.replace(`'${LOCK_WAIT_MS}ms'`, `'${HELD_LOCK_WAIT_MS}ms'`);
/** Parts a group refused for a held row is split into, each tried again at once. */
const HELD_SPLIT = 8;
/** Pauses (ms) between tries of a write whose row is held: doubling from the first to the last, jittered. */
const HELD_PAUSE_MS = [50, 1_000] as const;

/** The statement for a try after a held row: the same, with the shorter lock wait (and its own name). */
export const afterHeld = (config: QueryConfig): QueryConfig => ({
  ...config,
  text: config.text.replace(LOCK_WAIT, HELD_LOCK_WAIT),
  ...(config.name !== undefined && { name: `${config.name}_held` }),
});
const COLUMNS =
  'scope text, name text, key text, state text, fingerprint text, attempts integer, created_at bigint, updated_at bigint, ttl bigint, status integer, lease_owner text, lease_until bigint';
const NAMES =
  'scope, name, key, state, fingerprint, attempts, created_at, updated_at, ttl, status, lease_owner, lease_until';

/**
 * The rows travel as one JSON parameter (any driver passes text; no array encoding),
 * sorted by (scope, name). Groups lock rows in one order, so two (two machines) never wait
 * for each other in a cycle: an insert in the JSON's order; a compare-and-set locks its rows
 * first, in primary-key order, as its UPDATE's join locks them in the order its plan reads
 * the table (a hash join over a sequential scan: where each row's current version lies).
 */
function groupSql(kind: WriteKind, relaxed: boolean): string {
  const returning = `RETURNING t.scope, t.name, t.version${relaxed ? `, ${RELAXED}` : ''}`;
  if (kind === 'insert')
    return `INSERT INTO oncely_intents AS t (${NAMES})
            SELECT ${NAMES} FROM json_to_recordset($1::json) AS v(${COLUMNS}) WHERE ${LOCK_WAIT}
            ON CONFLICT (scope, name) DO NOTHING ${returning}`;
  // The identity (key, created_at) and version each write saw, as in the single compare-and-set.
  // A sub-SELECT per row, over the rows sorted first, locks in that order whatever the plan;
  // the UPDATE then writes only rows the statement already holds (`locked`): it never waits.
  return `WITH v AS MATERIALIZED (
            SELECT j.*, (SELECT true FROM oncely_intents l
                         WHERE l.scope = j.scope AND l.name = j.name AND l.version = j.seen_version
                           AND l.key = j.seen_key AND l.created_at = j.seen_created_at
                         FOR NO KEY UPDATE) AS locked
            FROM (SELECT * FROM json_to_recordset($1::json)
                    AS j(${COLUMNS}, seen_version bigint, seen_key text, seen_created_at bigint)
                  WHERE ${LOCK_WAIT} ORDER BY scope, name) j)
          UPDATE oncely_intents t SET key = v.key, state = v.state, fingerprint = v.fingerprint,
            attempts = v.attempts, created_at = v.created_at, updated_at = v.updated_at, ttl = v.ttl,
            status = v.status, lease_owner = v.lease_owner, lease_until = v.lease_until, version = t.version + 1
          FROM v WHERE v.locked AND t.scope = v.scope AND t.name = v.name AND t.version = v.seen_version
            AND t.key = v.seen_key AND t.created_at = v.seen_created_at
          ${returning}`;
}

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
      this.#queue.push({ write, resolve, reject, deadline: performance.now() + this.#timeout, held: 0 });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#running < this.#limit && this.#queue.length > 0) {
      const group = this.#take();
      if (group.length === 0) return; // every waiting write's intent is busy: the statement ending it pumps again
      this.#running++;
      for (const w of group) this.#busy.add(w.write.id);
      void this.#send(group).finally(() => {
        this.#running--;
        for (const w of group) this.#busy.delete(w.write.id);
        this.#pump();
      });
    }
  }

  /**
   * The oldest waiting write whose intent is idle, and the waiting writes of its kind that
   * can join it. A write that found its row held goes alone: it would stall a group again.
   */
  #take(): Waiting[] {
    const group: Waiting[] = [];
    const ids = new Set<string>();
    const rest: Waiting[] = [];
    for (const waiting of this.#queue) {
      const { id, kind } = waiting.write;
      const joins = group.length === 0 || (group.length < GROUP_MAX && group[0]!.held === 0 && waiting.held === 0);
      if (joins && !this.#busy.has(id) && !ids.has(id) && (group[0]?.write.kind ?? kind) === kind) {
        group.push(waiting);
        ids.add(id);
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
    const sorted = [...group].sort((a, b) => compare(a.write.row, b.write.row));
    const relaxed = group.every((w) => w.write.relaxed);
    let result: QueryResultLike;
    try {
      const statement = {
        name: `oncely_group_${group[0]!.write.kind}${relaxed ? '_relaxed' : ''}`,
        text: groupSql(group[0]!.write.kind, relaxed),
        values: [JSON.stringify(sorted.map((w) => w.write.row))],
      };
      result = await this.#run(afterHeldGroup ? afterHeld(statement) : statement, 'write intents', {
        scope: group[0]!.write.context.scope,
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
      else for (const w of group) w.reject(forCaller(error, w.write.context));
      return;
    }
    const versions = new Map<string, string>();
    for (const row of result.rows) versions.set(JSON.stringify([row.scope, row.name]), String(row.version));
    for (const w of group) w.resolve(versions.get(JSON.stringify([w.write.row.scope, w.write.row.name])));
  }

  async #alone(waiting: Waiting, afterHeldGroup = false): Promise<void> {
    const { single, what, context } = waiting.write;
    try {
      const statement = waiting.held > 0 || afterHeldGroup ? afterHeld(single) : single;
      const result = await this.#run(statement, what, context);
      waiting.resolve(result.rows.length === 1 ? String(result.rows[0].version) : undefined);
    } catch (error) {
      if (causeCode(error) !== LOCK_NOT_AVAILABLE) return waiting.reject(error);
      // Its row is held by another transaction: give the slot back, try again alone after a
      // pause, until the time bound. The statement rolled back: nothing was written.
      waiting.held++;
      const pause = heldPause(waiting.held);
      const now = performance.now();
      if (now + pause + HELD_LOCK_WAIT_MS > waiting.deadline)
        return waiting.reject(heldTooLong(error, what, context, this.#timeout - (waiting.deadline - now)));
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

const compare = (a: Record<string, unknown>, b: Record<string, unknown>): number => {
  const sa = String(a.scope);
  const sb = String(b.scope);
  if (sa !== sb) return sa < sb ? -1 : 1;
  const na = String(a.name);
  const nb = String(b.name);
  return na < nb ? -1 : na > nb ? 1 : 0;
};
