import type { RequestPart } from '../errors.js';
import { canonicalJson } from './canonical-json.js';
import { sha256 } from './sha256.js';

/**
 * The request fingerprint, stored when an intent is first sent so that a changed request
 * under the same intent is caught locally: `v2.<sha256>.<m>.<p>.<b>`, a SHA-256 over the
 * method, the path and query relative to `baseUrl` and the body, followed by short hashes
 * of each part that say which one changed. Relative paths keep pending intents valid when
 * the API moves to another host.
 */

export interface RequestParts {
  method: string;
  /** Path and query relative to the client's `baseUrl` (for `run()`, the intent name). */
  path: string;
  /** The body as sent (canonical JSON for `json`), or null. */
  body: string | null;
}

/** A short FNV-1a tag of a short string (the method, the path): it only says which part changed. */
function tag(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, '0');
}

export function fingerprint(parts: RequestParts): string {
  // The body is hashed once; the whole binds it through its digest.
  const body = sha256(parts.body ?? 'null');
  const all = sha256(JSON.stringify([parts.method, parts.path, body]));
  return ['v2', all, tag(parts.method), tag(parts.path), body.slice(0, 8)].join('.');
}

/** A received body as the fingerprint sees it: canonical JSON when it parses as JSON, else the text as is. */
export function canonicalBody(text: string): string {
  try {
    return canonicalJson(JSON.parse(text));
  } catch {
    return text;
  }
}

/**
 * The fingerprint of a request as a server receives it — the one function the client, the
 * server (`oncely/server`) and the mock share. `path` is the path and query relative to
 * where the API is mounted (the client's `baseUrl`), without its leading `/`; a JSON body
 * counts as its canonical form, so `{"a":1,"b":2}` and `{ "b": 2, "a": 1 }` agree, as the
 * client sends canonical JSON. An empty body is no body.
 *
 * @example
 * receivedFingerprint('POST', 'payments', '{"amount":100}') === fingerprint({ method: 'POST', path: 'payments', body: '{"amount":100}' });
 */
export function receivedFingerprint(method: string, path: string, bodyText: string): string {
  return fingerprint({
    method: method.toUpperCase(),
    path: path.replace(/^\//, ''),
    body: bodyText === '' ? null : canonicalBody(bodyText),
  });
}

/**
 * Compares a stored fingerprint with this request's. `[]` when they match; else the parts
 * that changed (all three when the stored one cannot tell).
 */
export function changedParts(stored: string, current: string): RequestPart[] {
  if (stored === current) return [];
  const a = stored.split('.');
  const b = current.split('.');
  if (a[0] !== 'v2' || a.length !== 5) return ['method', 'path', 'body'];
  const changed = (['method', 'path', 'body'] as const).filter((_, i) => a[i + 2] !== b[i + 2]);
  return changed.length ? changed : ['method', 'path', 'body'];
}
