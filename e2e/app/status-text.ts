/** Words for what the hook reports: what a customer should read in each state. */
import type { MutationStatus } from 'oncely/react';

export const MISMATCH_MESSAGE =
  'The cart changed after payment was sent, so this payment was not sent again: it stays bound to the cart it was sent with. Nothing new was charged. Restore the cart, or start a new order.';

const codeOf = (error: unknown): string | undefined =>
  typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string'
    ? (error as { code: string }).code
    : undefined;

/** True for the client-side mismatch (IntentMismatchError) and the server's 422 (KeyReusedError). */
export const isMismatch = (error: unknown): boolean => {
  const code = codeOf(error);
  return code === 'INTENT_MISMATCH' || code === 'KEY_REUSED';
};

export function statusText(
  status: MutationStatus,
  {
    attempts,
    replayed,
    hasData,
    error,
    isPaused,
  }: { attempts: number; replayed?: boolean; hasData: boolean; error: unknown; isPaused?: boolean },
): string {
  if (isPaused) return 'Offline: the payment waits for the network and goes on, under the same key, once it is back.';
  switch (status) {
    case 'idle':
      return 'Ready to pay. The idempotency key is already stored, before any click.';
    case 'pending':
      return 'Sending payment…';
    case 'retrying':
      return `No definitive answer yet: retrying with the same key (attempt ${attempts})…`;
    case 'success':
      if (replayed) return 'Payment succeeded. The server replayed its stored answer: no second charge.';
      if (!hasData) return 'Payment succeeded (read from this browser’s stored intent).';
      return 'Payment succeeded.';
    case 'unknown':
      return 'We do not know yet whether the payment went through. The key is kept: pressing Pay resumes it safely.';
    case 'error':
      if (isMismatch(error)) return 'Not sent: this checkout was already sent with a different cart.';
      return `Payment failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}
