import type { ServerAnswer } from '../errors.js';

export type ReadAnswer = ServerAnswer & { json: boolean };

const isJsonType = (type: string | null) => type !== null && /[/+]json\b/i.test(type);

/** Parsed JSON when the server says it is JSON and it parses, else the text. */
export function parseAnswer(response: Response, text: string): ReadAnswer {
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

/** A redirect status, or a browser's opaque redirect (`redirect: 'manual'` hides its status and Location). */
export const isRedirect = (response: Response): boolean =>
  response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400 && response.status !== 304);

/**
 * Where a redirect may be followed under the same key and body: 307/308 (which keep the
 * method and body) to the same origin. `undefined` for every other redirect.
 */
export function followableRedirect(response: Response, from: string): string | undefined {
  if (response.status !== 307 && response.status !== 308) return undefined;
  const location = response.headers.get('location');
  if (!location || !URL.canParse(location, from)) return undefined;
  const to = new URL(location, from);
  return to.origin === new URL(from).origin ? to.href : undefined;
}

/** Connection errors that happen before any byte of the request is written. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EADDRNOTAVAIL',
]);

/** True when the error proves the request never left: it failed while connecting. */
export function provablyNotSent(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && NOT_SENT_CODES.has(e.code)) return true;
    const errors = (e as { errors?: unknown }).errors;
    // Happy eyeballs: an AggregateError of refused connections, one per address.
    if (Array.isArray(errors) && errors.length > 0 && errors.every(provablyNotSent)) return true;
    e = e.cause as typeof e;
  }
  return false;
}
