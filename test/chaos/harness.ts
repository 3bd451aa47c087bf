/**
 * Small shared pieces of the fuzz and security tests: a scripted server (a `fetch` that
 * answers from a function and counts effects), a client over it in virtual time, and
 * checks that an outcome is typed and coherent with the stored state.
 */
import { expect } from 'vitest';
import {
  type Client,
  type ClientOptions,
  createClient,
  HttpError,
  type IntentRecord,
  KeyReusedError,
  MemoryStore,
  OncelyError,
  type OncelyEvent,
  OutcomeUnknownError,
  ResponseValidationError,
} from '../../src/index.js';

export const BASE = 'https://api.test/';

/** What the scripted server answers to attempt `n` (1-based) of a key. */
export type Script = (attempt: number, request: Request) => Response | Promise<Response>;

export interface Scripted {
  fetch: typeof globalThis.fetch;
  /** Requests seen, with the raw key header. */
  requests: { key: string | null; attempt: number }[];
}

/** A fetch that answers from `script`; every request is logged with its key header. */
export function scriptedFetch(script: Script, header = 'idempotency-key'): Scripted {
  const requests: Scripted['requests'] = [];
  return {
    requests,
    fetch: async (input, init) => {
      const request = input instanceof Request && init === undefined ? input : new Request(input, init);
      const attempt = requests.length + 1;
      requests.push({ key: request.headers.get(header), attempt });
      return script(attempt, request);
    },
  };
}

export interface Observed {
  client: Client;
  events: OncelyEvent[];
  store: MemoryStore;
}

/** A client with small, realistic budgets (virtual time makes them free) and every event kept. */
export function observedClient(options: Partial<ClientOptions> & Pick<ClientOptions, 'fetch'>): Observed {
  const events: OncelyEvent[] = [];
  const store = (options.store as MemoryStore | undefined) ?? new MemoryStore();
  const client = createClient({
    baseUrl: BASE,
    scope: 'u1',
    now: () => Date.now(),
    random: () => 0.5,
    retry: {
      maxAttempts: 4,
      deadline: 60_000,
      timeout: 10_000,
      baseDelay: 300,
      maxDelay: 10_000,
      maxRetryAfter: 30_000,
    },
    ...options,
    store,
    onEvent: (event) => events.push(event),
  });
  return { client, events, store };
}

/** The error is one of oncely's (the caller's abort reason excepted), and the stored state agrees with it. */
export function expectTypedOutcome(outcome: { ok: true } | { ok: false; error: unknown }, record: IntentRecord): void {
  if (outcome.ok) {
    expect(record.state).toBe('succeeded');
    return;
  }
  const { error } = outcome;
  expect(error, `an untyped error: ${String(error)}`).toBeInstanceOf(OncelyError);
  if (error instanceof OutcomeUnknownError) expect(record.state).toBe('unknown');
  else if (error instanceof HttpError || error instanceof KeyReusedError) expect(record.state).toBe('failed');
  else if (error instanceof ResponseValidationError) expect(record.state).toBe('succeeded');
}

/** Resolves to `{ ok, value }` or `{ ok: false, error }`: never rejects. */
export async function settled<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Keeps only what a header value can hold (Latin-1 without CR, LF, NUL), so any generated text can be sent. */
export const headerSafe = (text: string): string => text.replace(/[^\x20-\x7e\x80-\xff\t]/g, '');
