/**
 * The mutation state of one intent and its reducer: pure, one named action at a time, like
 * TanStack Query's `mutation.ts` dispatch. The observer dispatches; bindings render.
 */
import type { AnyOncelyError } from '../errors.js';
import type { IntentRecord, IntentState } from '../store/store.js';

/**
 * What `error` holds: one of oncely's errors (narrow with `isOncelyError` or `instanceof`),
 * or whatever Error the app's `request` threw. A thrown non-Error is wrapped in an `Error`
 * whose `cause` is the value, so `error.message` is always there.
 */
export type MutationError = AnyOncelyError | Error;

const asError = (error: unknown): MutationError =>
  error instanceof Error ? error : new Error(`request threw a non-Error value: ${String(error)}`, { cause: error });

/**
 * `idle`: nothing sent yet. `pending`: a request is on its way (here or in another tab).
 * `retrying`: the core is retrying it. `success` / `error`: settled. `unknown`: sent, but
 * the outcome is not known (budget exhausted, or found after a reload with
 * `resume: 'manual'`); `mutate()` resumes it with the same key.
 */
export type MutationStatus = 'idle' | 'pending' | 'retrying' | 'success' | 'error' | 'unknown';

export interface MutationState<T> {
  status: MutationStatus;
  /** `status === 'idle'`. */
  isIdle: boolean;
  /** `pending` or `retrying`: a request is on its way. Keep the button disabled while true. */
  isPending: boolean;
  /**
   * The call waits for the network: the platform is offline and nothing is sent until it
   * is back (TanStack's name). The same call goes on, under the same key, once online.
   */
  isPaused: boolean;
  /** `status === 'success'`. */
  isSuccess: boolean;
  /**
   * `error` or `unknown`: the last call threw. After `unknown`, `mutate()` resumes with the
   * same key (never a second effect); so does `reset()` followed by `mutate()`.
   */
  isError: boolean;
  /**
   * The response body of this observer's last successful call. `undefined` when the
   * success was read from the store (after a reload, or from another tab): oncely never
   * stores bodies. Call `mutate()` again to fetch it as a replay.
   */
  data: T | undefined;
  /**
   * What the last call threw (`KeyReusedError`, `OutcomeUnknownError`, `HttpError`…).
   * `undefined` for a failure read from the store; `record.status` has its HTTP status.
   */
  error: MutationError | undefined;
  /** The idempotency key, as soon as the intent is claimed (a few ms after mount). */
  key: string | undefined;
  /** The server answered from its stored result. `undefined` until known (and when `request` does not say). */
  replayed: boolean | undefined;
  /** Attempts of the current or last call; for an outcome read from the store, its stored count. */
  attempts: number;
  /** The stored record as last seen: state, attempts, timestamps, last HTTP status. No bodies. */
  record: IntentRecord | undefined;
  /**
   * With `success`: the server's answer could not be stored (a full disk, the storage
   * quota): the `StoreError`. `data` is the server's answer; the intent stays `in_flight` in
   * the store, so a reload sends it again under the same key and gets the replay.
   */
  warning: unknown;
}

/** Every state change of the observer, by name: the reducer's input. */
export type MutationAction<T> =
  /** A stored record was read or written (here, or by another tab); `status` when it decides the status. */
  | { type: 'stored'; record: IntentRecord; status?: MutationStatus }
  | { type: 'pending' }
  | { type: 'attempt'; attempt: number; retry: boolean }
  /** The call waits for the network (`paused: true`), or goes on. */
  | { type: 'paused'; paused: boolean }
  | {
      type: 'success';
      data: T;
      replayed: boolean | undefined;
      attempts: number;
      record: IntentRecord;
      warning?: unknown;
    }
  | { type: 'error'; error: unknown; status: MutationStatus; attempts: number; record: IntentRecord | undefined }
  /** The outcome of the success shown (under `key`) could not be stored: its write failed after the call ended. */
  | { type: 'warning'; key: string; warning: unknown; record: IntentRecord }
  /** `reset()`: clear what the UI shows, keep the key and the record. */
  | { type: 'reset' }
  /** `forget()`: the intent is gone; a new one is being claimed. */
  | { type: 'forgotten' };

type Fields<T> = Omit<MutationState<T>, 'isIdle' | 'isPending' | 'isSuccess' | 'isError'>;

const IDLE: Fields<never> = {
  status: 'idle',
  data: undefined,
  error: undefined,
  key: undefined,
  replayed: undefined,
  attempts: 0,
  record: undefined,
  isPaused: false,
  warning: undefined,
};

export const STATUS_OF: Record<IntentState, MutationStatus> = {
  ready: 'idle',
  in_flight: 'pending',
  succeeded: 'success',
  failed: 'error',
  unknown: 'unknown',
};

/** `pending` or `retrying`: a request is on its way. */
const busy = (status: MutationStatus): boolean => status === 'pending' || status === 'retrying';

const withFlags = <T>(fields: Fields<T>): MutationState<T> => ({
  ...fields,
  isIdle: fields.status === 'idle',
  isPending: busy(fields.status),
  isSuccess: fields.status === 'success',
  isError: fields.status === 'error' || fields.status === 'unknown',
});

/** The state before the first action. */
export const initialMutationState: MutationState<never> = withFlags(IDLE);

/** The state machine: pure, one action at a time; the booleans follow `status`. */
export function reduceMutation<T>(state: MutationState<T>, action: MutationAction<T>): MutationState<T> {
  const next = transition(state, action);
  return next === state ? state : withFlags(next);
}

function transition<T>(state: MutationState<T>, action: MutationAction<T>): MutationState<T> | Fields<T> {
  switch (action.type) {
    case 'stored': {
      const { record, status } = action;
      const same = record.key === state.key && (status === undefined || status === state.status);
      if (same && record === state.record) return state;
      if (same) return { ...state, record };
      if (status === undefined) return { ...IDLE, status: state.status, key: record.key, record };
      return { ...IDLE, status, key: record.key, attempts: record.attempts, record };
    }
    case 'pending':
      return { ...IDLE, status: 'pending', key: state.key, record: state.record };
    case 'attempt':
      if (!busy(state.status)) return state;
      return { ...state, status: action.retry ? 'retrying' : state.status, attempts: action.attempt, isPaused: false };
    case 'paused':
      if (!busy(state.status) || state.isPaused === action.paused) return state;
      return { ...state, isPaused: action.paused };
    case 'success': {
      const { data, replayed, attempts, record, warning } = action;
      return { ...IDLE, status: 'success', data, replayed, attempts, key: record.key, record, warning };
    }
    case 'warning':
      if (state.status !== 'success' || state.key !== action.key) return state;
      return { ...state, warning: action.warning, record: action.record };
    case 'error': {
      const { error, status, attempts } = action;
      const record = action.record ?? state.record;
      return { ...IDLE, status, error: asError(error), attempts, key: record?.key ?? state.key, record };
    }
    case 'reset':
      // A call on its way stays visible: the button must stay disabled until it settles.
      if (busy(state.status) || state.status === 'idle') return state;
      return { ...IDLE, key: state.key, record: state.record };
    case 'forgotten':
      return IDLE;
  }
}
