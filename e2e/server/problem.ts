/**
 * RFC 9457 problem details for the API's own errors. The idempotency answers (400 bad key,
 * 409, 413, 422) are `oncely/server`'s.
 */

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  [extension: string]: unknown;
}

const BASE = 'https://oncely.dev/problems/';

export const problems = {
  badRequest: (detail: string): Problem => ({ type: `${BASE}bad-request`, title: 'Bad request', status: 400, detail }),
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
