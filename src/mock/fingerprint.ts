/**
 * The server's request fingerprint: SHA-256 over the method, the URL path
 * with its query, and the canonical body text. A JSON body is canonicalised (object keys
 * sorted, no whitespace) so `{"a":1,"b":2}` and `{ "b": 2, "a": 1 }` are the same
 * request; any other body counts byte for byte.
 */
import { canonicalJson } from '../intent/canonical-json.js';
import { sha256 } from '../intent/sha256.js';

/** The body as the fingerprint sees it: canonical JSON when it parses as JSON, else the text. */
export function canonicalBody(text: string): string {
  if (text === '') return '';
  try {
    return canonicalJson(JSON.parse(text));
  } catch {
    return text;
  }
}

/**
 * Hex SHA-256 of `METHOD\npath?query\ncanonical body`.
 *
 * @example
 * await requestFingerprint('POST', new URL('https://api.test/payments'), '{"amount":100}');
 */
export async function requestFingerprint(method: string, url: URL, bodyText: string): Promise<string> {
  const input = `${method.toUpperCase()}\n${url.pathname}${url.search}\n${canonicalBody(bodyText)}`;
  return sha256(input);
}
