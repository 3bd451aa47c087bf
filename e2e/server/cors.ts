/**
 * CORS for the API: the checkout page is served from another origin (another port), so
 * the browser preflights every keyed POST. The key header must be allowed, and the
 * headers the SDK reads from responses must be exposed, or `fetch` hides them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const ALLOWED_METHODS = ['GET', 'POST', 'OPTIONS'];
export const ALLOWED_HEADERS = ['Idempotency-Key', 'Content-Type', 'X-Account'];
/** Not CORS-safelisted response headers the client must see. */
export const EXPOSED_HEADERS = ['Retry-After', 'Idempotent-Replayed', 'Location'];

/** Origins allowed to call the API: a list, or `'*'` for any (reflected, never a literal `*`). */
export type AllowedOrigins = '*' | readonly string[];

/** Sets the CORS headers of an actual response. Returns false when the origin is refused. */
export function applyCors(req: IncomingMessage, res: ServerResponse, allowed: AllowedOrigins): boolean {
  const origin = req.headers.origin;
  res.setHeader('Vary', 'Origin');
  if (!origin) return true;
  if (allowed !== '*' && !allowed.includes(origin)) return false;
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS.join(', '));
  return true;
}

/** Answers a preflight (`OPTIONS` with `Access-Control-Request-Method`). */
export function answerPreflight(req: IncomingMessage, res: ServerResponse, allowed: AllowedOrigins): void {
  const ok = applyCors(req, res, allowed);
  if (ok) {
    res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS.join(', '));
    res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS.join(', '));
    res.setHeader('Access-Control-Max-Age', '600');
  }
  res.writeHead(ok ? 204 : 403).end();
}
