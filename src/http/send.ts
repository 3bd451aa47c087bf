import type { KyInstance, Options as KyOptions } from 'ky';
import type { ServerAnswer } from '../errors.js';
import { isReplayed, type Outcome, type Profile } from '../profiles/profiles.js';
import type { RetryBudget } from '../retry/policy.js';

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
  /**
   * The client's ky options see bodies (see {@link kySeesBodies}): ky's Request carries
   * the body and ky gets each answer with its body. Otherwise the fetch given to ky
   * attaches the body to each attempt, so that the copy ky makes of its Request before
   * the first attempt (for retries) has no body to tee: about 12 µs in Node, 0.3 ms in
   * Chromium. And ky gets each answer without its body (oncely has read it already).
   */
  kySeesBodies?: boolean;
}

/**
 * True when ky options passed to the client may read a request or response body (hooks,
 * progress callbacks), or set what a Request rebuilt with a body would reset
 * (`referrer`, `referrerPolicy`).
 */
export function kySeesBodies(options: KyOptions | undefined): boolean {
  if (!options) return false;
  const hooks = Object.values(options.hooks ?? {}) as unknown[];
  if (hooks.some((list) => Array.isArray(list) && list.length > 0)) return true;
  return ['onDownloadProgress', 'onUploadProgress', 'referrer', 'referrerPolicy'].some(
    (name) => options[name as keyof KyOptions] !== undefined,
  );
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
 * Thrown by the fetch given to ky for an answer oncely retries (409 in progress, 503…),
 * once its delay is set: ky's retry takes it like a network error and asks `shouldRetry`.
 * (An afterResponse hook returning `ky.retry()` did the same, but ky clones the response
 * for every afterResponse hook: a stream tee per attempt, about 13 µs in Node.)
 */
class RetryAnswer extends Error {
  override name = 'RetryAnswer';
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
  const { body } = spec;
  const attachBody = body !== undefined && !spec.kySeesBodies;
  try {
    await client(spec.url, {
      method: spec.method,
      headers: spec.headers,
      body: attachBody ? undefined : body,
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
          if (error instanceof RetryAnswer) return true;
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
        const sent = attachBody ? new Request(request, { body }) : input;
        // A network-error Response (`Response.error()`, status 0) is no answer: reject as fetch itself would.
        return fetchImpl(sent, init).then(async (response) => {
          if (response.type === 'error') throw new TypeError('fetch failed: network error response');
          // Read and classify the body here, once; ky and its hooks get the same answer
          // from memory. An answer to retry within the budget goes no further.
          const text = await response.text();
          const answered = classify(parseAnswer(response, text), profile);
          last = answered;
          const { outcome, answer } = answered;
          if (outcome === 'in_progress' || outcome === 'retryable') {
            const delay = budget.nextDelay(answer.headers);
            if (outcome === 'in_progress') hooks.onConflict(answer.status, delay);
            if (budget.allows(delay)) {
              pendingDelay = delay;
              hooks.onRetry(delay, 'status', answer.status);
              throw new RetryAnswer(`HTTP ${answer.status}, retried in ${delay} ms`);
            }
          }
          const { status, statusText, headers } = response;
          const kept = spec.kySeesBodies && !NULL_BODY_STATUS.has(status) ? text : null;
          return new Response(kept, { status, statusText, headers });
        });
      },
    });
  } catch (error) {
    // ky gave up on a retried answer (its own limit): that answer is the last word.
    if (error instanceof RetryAnswer && last) return { kind: 'answer', ...last };
    return { kind: 'no-answer', error };
  }
  if (!last) return { kind: 'no-answer', error: new Error('No response was classified') };
  return { kind: 'answer', ...last };
}
