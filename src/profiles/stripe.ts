import { classifyStatus, DAY, type Profile } from './profiles.js';

const stripeErrorType = (body: unknown): unknown => {
  if (body === null || typeof body !== 'object') return undefined;
  const error = (body as { error?: unknown }).error;
  const holder = error !== null && typeof error === 'object' ? error : body;
  return (holder as { type?: unknown }).type;
};

/**
 * Stripe: bare key (≤ 255 chars); a key reused with other parameters is a 400 with
 * `error.type: "idempotency_error"`; 409 while the first request runs; honours
 * `Stripe-Should-Retry`; keys kept at least 24 h.
 */
export const stripe: Profile = {
  name: 'stripe',
  header: 'Idempotency-Key',
  encodeKey: (key) => key,
  replayHeaders: ['Idempotent-Replayed'],
  classify: ({ status, headers, body }) => {
    if (status === 400 && stripeErrorType(body) === 'idempotency_error') return 'mismatch';
    const outcome = classifyStatus(status);
    if (outcome === 'mismatch') return 'failed'; // Stripe's 422 is not about keys
    const shouldRetry = headers.get('Stripe-Should-Retry');
    if (outcome !== 'success' && shouldRetry === 'true') return 'retryable';
    if (outcome === 'retryable' && shouldRetry === 'false') return 'failed';
    return outcome;
  },
  keyTtl: DAY,
  keyedMethods: ['POST'],
};
