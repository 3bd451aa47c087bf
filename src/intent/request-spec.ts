import { InvalidArgumentError } from '../errors.js';
import { canonicalJson } from './canonical-json.js';

/** Where a request goes: the absolute URL, and its path and query relative to `baseUrl`. */
export interface Target {
  url: string;
  path: string;
}

type Context = { intent: string; scope: string };

/** `baseUrl` with a trailing slash, so that `payments` resolves under it, not beside it. */
export const normalizeBase = (baseUrl: string): string => baseUrl.replace(/\/?$/, '/');

/**
 * Resolves a request path against `baseUrl`. An absolute URL is accepted only on the
 * same origin: the client's headers and the key never go anywhere else.
 */
export function resolveTarget(base: string, path: string, context: Context): Target {
  if (typeof path !== 'string')
    throw new InvalidArgumentError(`A request path must be a string, got ${typeof path}.`, context);
  const known = resolved.get(base)?.get(path);
  if (known) return known;
  const target = resolve(base, path, context);
  const paths = resolved.get(base) ?? new Map<string, Target>();
  if (paths.size >= 256) paths.clear(); // an app with more paths than that pays the parse again
  resolved.set(base, paths.set(path, target));
  return target;
}

/** Paths resolved before, by base URL: an app sends to a few, and parsing two URLs per call costs. */
const resolved = new Map<string, Map<string, Readonly<Target>>>();

function resolve(base: string, path: string, context: Context): Target {
  const absolute = /^[a-z][a-z0-9+.-]*:/i.test(path);
  const url = new URL(absolute ? path : path.replace(/^\//, ''), base);
  const origin = new URL(base).origin;
  if (url.username !== '' || url.password !== '')
    throw new InvalidArgumentError(
      `Refusing to send intent "${context.intent}" to a URL with credentials in it: fetch refuses those; pass them in a header.`,
      context,
    );
  if (url.origin !== origin)
    throw new InvalidArgumentError(
      `Refusing to send intent "${context.intent}" to ${url.origin}: requests go to the client's origin (${origin}) only, so its headers and key never reach another. Use a client with that baseUrl.`,
      context,
    );
  const relative = url.href.startsWith(base) ? url.href.slice(base.length) : url.pathname.slice(1) + url.search;
  return { url: url.href, path: relative };
}

/** The body as sent: canonical JSON (RFC 8785) for `json`, the string as given for `body`. */
export function serializeBody(json: unknown, body: unknown, context: Context): string | undefined {
  if (json !== undefined && body !== undefined)
    throw new InvalidArgumentError('Pass either `json` or `body`, not both.', context);
  if (body !== undefined && typeof body !== 'string')
    throw new InvalidArgumentError(
      `\`body\` must be a string (oncely fingerprints what it sends); use \`json\` for objects, got ${typeof body}.`,
      context,
    );
  if (json === undefined) return body;
  try {
    return canonicalJson(json);
  } catch (error) {
    throw new InvalidArgumentError(`\`json\` cannot be sent: ${(error as Error).message}.`, {
      ...context,
      cause: error,
    });
  }
}

/** Merges header sources into one `Headers`, turning a bad name or value into a clear error. */
export function mergeHeaders(sources: readonly (HeadersInit | undefined)[], context: Context): Headers {
  try {
    const headers = new Headers(sources[0]);
    for (let i = 1; i < sources.length; i++) {
      const source = sources[i];
      if (source !== undefined) for (const [name, value] of new Headers(source)) headers.set(name, value);
    }
    return headers;
  } catch (error) {
    throw new InvalidArgumentError(
      `A header of intent "${context.intent}" is invalid (${(error as Error).message}): names must be tokens, values must not contain newlines.`,
      { ...context, cause: error },
    );
  }
}
