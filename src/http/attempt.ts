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
  /** Outlives the page (browsers): set for small bodies when the client asks for it. */
  keepalive?: boolean;
}

export interface HttpSender {
  /**
   * ky with the app's `ky` options (hooks…), loaded when a first attempt needs it; without
   * such options an attempt goes to `fetch` directly (ky would only copy the request).
   */
  ky: (() => Promise<KyInstance>) | undefined;
  fetch: typeof globalThis.fetch;
  /**
   * `fetch` is oncely's own (the platform's): a refusal it throws proves nothing left. A
   * fetch the app gave is foreign code: it may have sent before whatever it throws.
   */
  ownFetch: boolean;
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
  // 1xx is not a final answer, and outside 100–599 is no HTTP status: both are unanswered.
  if (!(answer.status >= 200 && answer.status <= 599))
    return { outcome: 'no_answer', replayed: false, sent: true, error: new TypeError(`HTTP status ${answer.status}`) };
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
 * the one loop is oncely's) and reports how it ended. The attempt's bound covers the whole
 * of it, the body's last byte included, whatever the fetch does with its signal. Throws
 * only what the profile's `classify` throws (the engine reports it).
 */
export async function httpAttempt(
  sender: HttpSender,
  target: HttpTarget,
  timeout: number,
  signal: AbortSignal | undefined,
): Promise<AttemptReport<ReadAnswer | RedirectAnswer>> {
  const handed = handOver(sender);
  const bounded = withTimeout(signal, timeout);
  let answer: ReadAnswer;
  try {
    const response = await bounded.race(send(sender, target, bounded.signal, handed.fetch));
    if (isRedirect(response)) return await bounded.race(redirectReport(response, target.url));
    answer = parseAnswer(response, await bounded.race(response.text()));
  } catch (error) {
    return unanswered(error, handed.sent(), bounded);
  } finally {
    bounded.clear();
  }
  return answerReport(sender.profile, answer, answer);
}

/**
 * One request of `target`: through ky when the app gave ky options (its hooks run), else
 * straight to the fetch — oncely's own gets the URL and init (the platform makes the one
 * Request), an app's fetch a Request, as ky would hand it.
 */
async function send(
  sender: HttpSender,
  target: HttpTarget,
  signal: AbortSignal,
  fetch: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>,
): Promise<Response> {
  const init: RequestInit = {
    method: target.method,
    headers: target.headers,
    body: target.body ?? null,
    redirect: 'manual',
    signal,
  };
  if (target.keepalive) init.keepalive = true;
  if (!sender.ky) return sender.ownFetch ? fetch(target.url, init) : fetch(new Request(target.url, init));
  const ky = await sender.ky();
  return ky(target.url, { ...init, timeout: false, retry: 0, throwHttpErrors: false, fetch });
}

/**
 * The one rule of `sent` for an attempt oncely makes itself: sent once the request was
 * handed to the fetch, unless oncely's own fetch, called once, threw an error that proves
 * nothing left (refused, DNS). Whatever a fetch of the app's throws proves nothing: it may
 * have sent first (a retry of its own, a second request).
 */
function handOver(sender: HttpSender) {
  let handed = false;
  let refused = false;
  return {
    fetch: async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      const first = !handed;
      handed = true;
      refused = false;
      try {
        return answerOrThrow(await sender.fetch(input, init));
      } catch (error) {
        refused = first && sender.ownFetch && provablyNotSent(error);
        throw error;
      }
    },
    /** Whether the attempt may have reached a server. */
    sent: () => handed && !refused,
  };
}

/** An attempt that ended without an answer. */
function unanswered(error: unknown, sent: boolean, bounded: Bounded): AttemptReport<never> {
  const cause = bounded.timedOut() ? timeoutError() : error;
  return { outcome: 'no_answer', replayed: false, sent, error: cause };
}

/**
 * One attempt of `intent.fetch()`: the caller's own fetch, no ky, the body left unread
 * for the caller (the profile reads a copy of error bodies, within the attempt's bound).
 */
export async function fetchAttempt(
  sender: HttpSender,
  target: HttpTarget,
  init: RequestInit,
  timeout: number,
  signal: AbortSignal | undefined,
): Promise<AttemptReport<Response>> {
  const handed = handOver(sender);
  const bounded = withTimeout(signal, timeout);
  let response: Response;
  let answer: ServerAnswer;
  try {
    const request = new Request(target.url, {
      ...init,
      method: target.method,
      headers: target.headers,
      body: target.body,
      redirect: 'manual',
      signal: bounded.signal,
    });
    response = await bounded.race(handed.fetch(request));
    if (isRedirect(response)) return (await bounded.race(redirectReport(response, target.url))) as AttemptReport<never>;
    answer = await bounded.race(readCopy(response));
  } catch (error) {
    return unanswered(error, handed.sent(), bounded);
  } finally {
    bounded.clear();
  }
  return answerReport(sender.profile, answer, response);
}

/**
 * The answer of a Response the caller keeps: the profile may read an error body (Stripe's
 * error type), so it reads a copy.
 */
export async function readCopy(response: Response): Promise<ServerAnswer> {
  const body = response.ok ? undefined : parseAnswer(response, await response.clone().text()).body;
  return { status: response.status, headers: response.headers, body };
}

export type Bounded = ReturnType<typeof withTimeout>;

/**
 * A signal that aborts with `parent` or after `ms` (on the timers tests can fake), and
 * `race(work)`: `work`, or the signal's reason as soon as it aborts, for work that does not
 * listen to the signal (a foreign fetch, a body stream of its own). The timer and the
 * listener on `parent` are set at the first `race`, once the request has been handed over:
 * until then only synchronous code runs, and a click's request leaves without waiting for them.
 */
export function withTimeout(parent: AbortSignal | undefined, ms: number) {
  const controller = new AbortController();
  const { signal } = controller;
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let armed = false;
  const onAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  const arm = () => {
    if (armed) return;
    armed = true;
    if (parent?.aborted) onAbort();
    else parent?.addEventListener('abort', onAbort, { once: true });
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort(timeoutError());
    }, ms);
  };
  return {
    signal,
    timedOut: () => timedOut,
    race<T>(work: Promise<T>): Promise<T> {
      arm();
      work.catch(() => undefined); // a late failure of abandoned work is nobody's
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise<T>((resolve, reject) => {
        const stop = () => reject(signal.reason);
        signal.addEventListener('abort', stop, { once: true });
        work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
      });
    },
    clear: () => {
      armed = true; // nothing to arm once cleared
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}
