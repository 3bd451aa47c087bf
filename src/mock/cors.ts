/**
 * CORS for browser tests against the contract server: preflight answers, and the
 * response headers a cross-origin page needs to read (`Retry-After` and
 * `Idempotent-Replayed` are invisible cross-origin unless exposed).
 */

/** CORS settings. `false` turns CORS off (OPTIONS then goes to the routes). */
export interface CorsOptions {
  /**
   * `Access-Control-Allow-Origin`.
   * @default '*'
   * @example { allowOrigin: 'http://localhost:5173' }
   */
  allowOrigin?: string;
  /**
   * Request headers allowed on top of `Idempotency-Key`, `Content-Type`, `Authorization`
   * and the server's key and scope headers.
   * @default []
   */
  allowHeaders?: readonly string[];
  /**
   * `Access-Control-Max-Age` in seconds.
   * @default 600
   */
  maxAge?: number;
}

export const EXPOSED_HEADERS = ['Retry-After', 'Idempotent-Replayed', 'Idempotency-Key'];

const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

const unique = (names: readonly string[]): string[] => {
  const seen = new Map<string, string>();
  for (const name of names) if (!seen.has(name.toLowerCase())) seen.set(name.toLowerCase(), name);
  return [...seen.values()];
};

/** The CORS headers of one server, computed once. */
export function corsHeaders(
  cors: CorsOptions,
  server: { keyHeader: string; scopeHeader: string | undefined },
): { common: Record<string, string>; preflight: Record<string, string> } {
  const origin = cors.allowOrigin ?? '*';
  const common: Record<string, string> = {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Expose-Headers': unique([...EXPOSED_HEADERS, server.keyHeader]).join(', '),
  };
  if (origin !== '*') common.Vary = 'Origin';
  const preflight: Record<string, string> = {
    ...common,
    'Access-Control-Allow-Methods': ALLOWED_METHODS,
    'Access-Control-Allow-Headers': unique([
      'Idempotency-Key',
      'Content-Type',
      'Authorization',
      server.keyHeader,
      ...(server.scopeHeader === undefined ? [] : [server.scopeHeader]),
      ...(cors.allowHeaders ?? []),
    ]).join(', '),
    'Access-Control-Max-Age': String(cors.maxAge ?? 600),
  };
  return { common, preflight };
}
