/**
 * The contract server's request fingerprint: the client's own (`receivedFingerprint`,
 * shared with `oncely/server`), over the method, the URL path with its query, and the
 * canonical body text. A JSON body is canonicalised (object keys sorted, no whitespace) so
 * `{"a":1,"b":2}` and `{ "b": 2, "a": 1 }` are the same request; any other body counts
 * byte for byte.
 */
import { receivedFingerprint } from '../intent/fingerprint.js';

export { canonicalBody } from '../intent/fingerprint.js';

/**
 * The fingerprint of `METHOD path?query body`, the path taken from the origin's root.
 *
 * @example
 * await requestFingerprint('POST', new URL('https://api.test/payments'), '{"amount":100}');
 */
export async function requestFingerprint(method: string, url: URL, bodyText: string): Promise<string> {
  return receivedFingerprint(method, `${url.pathname}${url.search}`, bodyText);
}
