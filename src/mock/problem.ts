/**
 * problem+json bodies (RFC 9457) for the contract server's own answers. The titles are
 * the draft's (draft-ietf-httpapi-idempotency-key-header §2.7).
 */

/** `type` URIs of the problems the contract server answers with (tag URIs: not resolvable). */
export const PROBLEM_TYPES = {
  keyMissing: 'tag:oncely.dev,2026:idempotency-key-missing',
  keyInvalid: 'tag:oncely.dev,2026:idempotency-key-invalid',
  keyReused: 'tag:oncely.dev,2026:idempotency-key-reused',
  inProgress: 'tag:oncely.dev,2026:idempotency-request-in-progress',
  notFound: 'tag:oncely.dev,2026:not-found',
  routeFailed: 'tag:oncely.dev,2026:route-failed',
  injected: 'tag:oncely.dev,2026:injected-fault',
  tooLarge: 'tag:oncely.dev,2026:content-too-large',
} as const;

/** An RFC 9457 problem details object. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
}

/** A response with an `application/problem+json` body. */
export function problemResponse(problem: Problem, headers?: HeadersInit): Response {
  const out = new Headers(headers);
  out.set('Content-Type', 'application/problem+json');
  return new Response(JSON.stringify(problem), { status: problem.status, headers: out });
}
