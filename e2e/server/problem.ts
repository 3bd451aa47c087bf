/** RFC 9457 problem details for the contract server's errors. */

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  [extension: string]: unknown;
}

const BASE = 'https://oncely.dev/problems/';

export const problems = {
  keyMissing: (detail: string): Problem => ({
    type: `${BASE}idempotency-key-missing`,
    title: 'Idempotency-Key is missing',
    status: 400,
    detail,
  }),
  keyInvalid: (detail: string): Problem => ({
    type: `${BASE}idempotency-key-invalid`,
    title: 'Idempotency-Key is not a valid key',
    status: 400,
    detail,
  }),
  badRequest: (detail: string): Problem => ({ type: `${BASE}bad-request`, title: 'Bad request', status: 400, detail }),
  tooLarge: (): Problem => ({ type: `${BASE}too-large`, title: 'Request body too large', status: 413 }),
  keyReused: (key: string): Problem => ({
    type: `${BASE}idempotency-key-reused`,
    title: 'Idempotency-Key is already used for a different request',
    status: 422,
    detail: `Key "${key}" was first used with a different request body. Use a new key for a new request.`,
  }),
  inProgress: (key: string): Problem => ({
    type: `${BASE}request-in-progress`,
    title: 'A request with this Idempotency-Key is still being processed',
    status: 409,
    detail: `Retry with the same key "${key}" after the Retry-After delay.`,
  }),
  unavailable: (detail: string): Problem => ({
    type: `${BASE}unavailable`,
    title: 'Service unavailable',
    status: 503,
    detail,
  }),
  notFound: (path: string): Problem => ({
    type: `${BASE}not-found`,
    title: 'Not found',
    status: 404,
    detail: `No route for ${path}`,
  }),
  methodNotAllowed: (method: string, path: string): Problem => ({
    type: `${BASE}method-not-allowed`,
    title: 'Method not allowed',
    status: 405,
    detail: `${method} is not allowed on ${path}`,
  }),
};
