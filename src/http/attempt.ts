import type { KyInstance } from 'ky';
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
        const response = await sender.fetch(input, init);
        // A network-error Response (`Response.error()`, status 0) is no answer.
        if (response.type === 'error') throw new TypeError('fetch failed: network error response');
        return response;
      },
    });
    if (isRedirect(response)) {
      await response.body?.cancel().catch(() => undefined);
      const follow = followableRedirect(response, target.url);
      const value = { status: response.status, location: response.headers.get('location') ?? undefined };
      return { outcome: 'redirect', replayed: false, sent: true, status: response.status, follow, value };
    }
    const answer = parseAnswer(response, await response.text());
    return {
      outcome: sender.profile.classify(answer),
      replayed: isReplay(sender.profile, answer),
      sent: true,
      status: answer.status,
      headers: answer.headers,
      value: answer,
    };
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
    const response = await sender.fetch(request);
    if (response.type === 'error') throw new TypeError('fetch failed: network error response');
    if (isRedirect(response)) {
      await response.body?.cancel().catch(() => undefined);
      const follow = followableRedirect(response, target.url);
      const value = { status: response.status, location: response.headers.get('location') ?? undefined };
      return {
        outcome: 'redirect',
        replayed: false,
        sent: true,
        status: response.status,
        follow,
        value: value as never,
      };
    }
    const body = response.ok ? undefined : parseAnswer(response, await response.clone().text()).body;
    const answer = { status: response.status, headers: response.headers, body };
    return {
      outcome: sender.profile.classify(answer),
      replayed: isReplay(sender.profile, answer),
      sent: true,
      status: response.status,
      headers: response.headers,
      value: response,
    };
  } catch (error) {
    const cause = bounded.timedOut() ? new DOMException('The attempt timed out', 'TimeoutError') : error;
    return { outcome: 'no_answer', replayed: false, sent: reached && !provablyNotSent(error), error: cause };
  } finally {
    bounded.clear();
  }
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
    controller.abort(new DOMException('The attempt timed out', 'TimeoutError'));
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
