import type { KyInstance } from 'ky';
import type { ServerAnswer } from '../errors.js';
import { isReplay, type Profile } from '../profiles/profiles.js';
import type { AttemptReport } from '../retry/loop.js';
import { followableRedirect, isRedirect, parseAnswer, provablyNotSent, type ReadAnswer } from './answer.js';

/** One HTTP request as the intent sends it, the key header included. */
export interface HttpTarget {
  method: string;
  url: string;
  headers: Headers;
  body?: string;
}

export interface HttpSender {
  ky: KyInstance;
  fetch: typeof globalThis.fetch;
  profile: Profile;
}

/** A redirect oncely does not follow: what the caller is told. */
export interface RedirectAnswer {
  status: number;
  location: string | undefined;
}

/** What a timed-out attempt is aborted with (as `AbortSignal.timeout` would). */
const timeoutError = () => new DOMException('The attempt timed out', 'TimeoutError');

/** A network-error Response (`Response.error()`, status 0) is no answer: throw as fetch would. */
function answerOrThrow(response: Response): Response {
  if (response.type === 'error') throw new TypeError('fetch failed: network error response');
  return response;
}

/** A redirect answer ends the attempt: followed at once when `from`'s origin keeps it, else reported. */
export async function redirectReport(response: Response, from: string): Promise<AttemptReport<RedirectAnswer>> {
  await response.body?.cancel().catch(() => undefined);
  const value = { status: response.status, location: response.headers.get('location') ?? undefined };
  const follow = followableRedirect(response, from);
  return { outcome: 'redirect', replayed: false, sent: true, status: response.status, follow, value };
}

/** An answer ends the attempt as the profile reads it. */
export function answerReport<V>(profile: Profile, answer: ServerAnswer, value: V): AttemptReport<V> {
  return {
    outcome: profile.classify(answer),
    replayed: isReplay(profile, answer),
    sent: true,
    status: answer.status,
    headers: answer.headers,
    value,
  };
}

/**
 * Sends exactly one attempt through ky (its hooks run once per attempt; its retry is off:
 * the one loop is oncely's) and reports how it ended. Never throws.
 */
export async function httpAttempt(
  sender: HttpSender,
  target: HttpTarget,
  timeout: number,
  signal: AbortSignal | undefined,
): Promise<AttemptReport<ReadAnswer | RedirectAnswer>> {
  let reached = false;
  try {
    const response = await sender.ky(target.url, {
      method: target.method,
      headers: target.headers,
      body: target.body,
      signal,
      timeout,
      retry: 0,
      throwHttpErrors: false,
      redirect: 'manual',
      fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
        reached = true;
        return answerOrThrow(await sender.fetch(input, init));
      },
    });
    if (isRedirect(response)) return await redirectReport(response, target.url);
    const answer = parseAnswer(response, await response.text());
    return answerReport(sender.profile, answer, answer);
  } catch (error) {
    return { outcome: 'no_answer', replayed: false, sent: reached && !provablyNotSent(error), error };
  }
}

/**
 * One attempt of `intent.fetch()`: the caller's own fetch, no ky, the body left unread
 * for the caller (the profile reads a copy of error bodies). Never throws.
 */
export async function fetchAttempt(
  sender: HttpSender,
  target: HttpTarget,
  init: RequestInit,
  timeout: number,
  signal: AbortSignal | undefined,
): Promise<AttemptReport<Response>> {
  let reached = false;
  const bounded = withTimeout(signal, timeout);
  try {
    const request = new Request(target.url, {
      ...init,
      method: target.method,
      headers: target.headers,
      body: target.body,
      redirect: 'manual',
      signal: bounded.signal,
    });
    reached = true;
    const response = answerOrThrow(await sender.fetch(request));
    if (isRedirect(response)) return (await redirectReport(response, target.url)) as AttemptReport<never>;
    return answerReport(sender.profile, await readCopy(response), response);
  } catch (error) {
    const cause = bounded.timedOut() ? timeoutError() : error;
    return { outcome: 'no_answer', replayed: false, sent: reached && !provablyNotSent(error), error: cause };
  } finally {
    bounded.clear();
  }
}

/**
 * The answer of a Response the caller keeps: the profile may read an error body (Stripe's
 * error type), so it reads a copy.
 */
export async function readCopy(response: Response): Promise<ServerAnswer> {
  const body = response.ok ? undefined : parseAnswer(response, await response.clone().text()).body;
  return { status: response.status, headers: response.headers, body };
}

/** A signal that aborts with `parent` or after `ms` (on the timers tests can fake). */
export function withTimeout(parent: AbortSignal | undefined, ms: number) {
  const controller = new AbortController();
  let timedOut = false;
  const onAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(timeoutError());
  }, ms);
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    clear: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}
