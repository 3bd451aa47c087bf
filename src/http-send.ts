import type { KyInstance } from 'ky';
import ky from 'ky';
import type { ServerAnswer } from './errors.js';
import { isReplayed, type Outcome, type Profile } from './profiles.js';
import type { RetryBudget } from './retry-policy.js';

/** One classified server answer. */
export interface ClassifiedAnswer {
  answer: ServerAnswer & { json: boolean };
  outcome: Outcome;
  replayed: boolean;
}

/** How a sequence of attempts ended: with a server answer, or with none (network, timeout, abort). */
export type SendResult = ({ kind: 'answer' } & ClassifiedAnswer) | { kind: 'no-answer'; error: unknown };

export interface SendHooks {
  onAttempt(attempt: number, request: Request): void;
  onRetry(delay: number, reason: 'network' | 'timeout' | 'status', status?: number): void;
  onConflict(status: number, retryAfter: number): void;
}

export interface SendSpec {
  method: string;
  url: string;
  headers: Headers;
  body?: string;
  signal?: AbortSignal;
}

const isJsonType = (type: string | null) => type !== null && /[/+]json\b/i.test(type);

/** Statuses whose Response cannot have a body. */
const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

/** Reads the whole body: parsed JSON when the server says it is JSON and it parses, else text. */
export async function readAnswer(response: Response): Promise<ServerAnswer & { json: boolean }> {
  return parseAnswer(response, await response.text());
}

function parseAnswer(response: Response, text: string): ServerAnswer & { json: boolean } {
  const base = { status: response.status, headers: response.headers };
  if (text !== '' && isJsonType(response.headers.get('content-type'))) {
    try {
      return { ...base, body: JSON.parse(text), json: true };
    } catch {
      // Not JSON after all: keep the text, let the caller decide.
    }
  }
  return { ...base, body: text, json: false };
}

/** Applies the profile, and the rule that a replayed error is the server's final word. */
export function classify(answer: ServerAnswer & { json: boolean }, profile: Profile): ClassifiedAnswer {
  const replayed = isReplayed(answer.headers, profile.replayHeaders);
  let outcome = profile.classify(answer);
  if (replayed && (outcome === 'retryable' || outcome === 'in_progress')) outcome = 'failed';
  return { answer, outcome, replayed };
}

/**
 * Sends one request through ky, with ky's own retry switched on for this method and
 * driven by oncely's budget: ky re-sends the cloned Request (so the key header is on
 * every attempt), oncely decides whether and how long to wait.
 */
export async function sendWithKy(
  client: KyInstance,
  spec: SendSpec,
  profile: Profile,
  budget: RetryBudget,
  hooks: SendHooks,
  fetchImpl: typeof globalThis.fetch = globalThis.fetch,
): Promise<SendResult> {
  let last: ClassifiedAnswer | undefined;
  let pendingDelay = 0;
  try {
    await client(spec.url, {
      method: spec.method,
      headers: spec.headers,
      body: spec.body,
      signal: spec.signal,
      timeout: budget.options.timeout || false,
      totalTimeout: Math.max(1, budget.remaining()),
      throwHttpErrors: false,
      retry: {
        limit: budget.options.maxAttempts - 1,
        methods: [spec.method.toLowerCase()],
        statusCodes: [],
        afterStatusCodes: [],
        retryOnTimeout: true,
        backoffLimit: Number.POSITIVE_INFINITY,
        delay: () => pendingDelay,
        shouldRetry: ({ error }) => {
          if (spec.signal?.aborted) return false;
          const delay = budget.nextDelay();
          if (!budget.allows(delay)) return false;
          pendingDelay = delay;
          hooks.onRetry(delay, error.name === 'TimeoutError' ? 'timeout' : 'network');
          return true;
        },
      },
      fetch: (input: RequestInfo | URL, init?: RequestInit) => {
        budget.attempts++;
        last = undefined;
        const request = input instanceof Request ? input : new Request(input, init);
        hooks.onAttempt(budget.attempts, request);
        // A network-error Response (`Response.error()`, status 0) is no answer: reject as fetch itself would.
        return fetchImpl(input, init).then(async (response) => {
          if (response.type === 'error') throw new TypeError('fetch failed: network error response');
          // Read and classify the body here, once: ky clones the response for each
          // afterResponse hook (a stream tee) and cancels the clone after, which throws
          // on a consumed one. ky and its other hooks get the same answer from memory.
          const text = await response.text();
          last = classify(parseAnswer(response, text), profile);
          const { status, statusText, headers } = response;
          return new Response(NULL_BODY_STATUS.has(status) ? null : text, { status, statusText, headers });
        });
      },
      hooks: {
        afterResponse: [
          () => {
            if (!last) return;
            const { outcome, answer } = last;
            if (outcome !== 'in_progress' && outcome !== 'retryable') return;
            const delay = budget.nextDelay(answer.headers);
            if (outcome === 'in_progress') hooks.onConflict(answer.status, delay);
            if (!budget.allows(delay)) return;
            hooks.onRetry(delay, 'status', answer.status);
            return ky.retry({ delay, code: `HTTP_${answer.status}` });
          },
        ],
      },
    });
  } catch (error) {
    return { kind: 'no-answer', error };
  }
  if (!last) return { kind: 'no-answer', error: new Error('No response was classified') };
  return { kind: 'answer', ...last };
}
