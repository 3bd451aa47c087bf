/**
 * Thrown by a handler whose work is not settled yet (a provider call under way elsewhere,
 * an outcome handed to reconciliation): everything it wrote in the key's transaction is
 * rolled back, nothing is stored, and the request is answered as if the key were held —
 * 409 + `Retry-After` (`in_progress`, `pending_review`) or the mismatch answer (`mismatch`).
 * The next attempt with the key runs the handler again.
 */
export class Unsettled extends Error {
  override readonly name = 'Unsettled';
  constructor(
    /** `in_progress`: another call owns the work; `pending_review`: reconciliation decides; `mismatch`: another request used the key. */
    readonly reason: 'in_progress' | 'pending_review' | 'mismatch',
    /** Seconds for `Retry-After`. @default the idempotency's `retryAfter` */
    readonly retryAfter?: number,
    /** The problem's `detail`. @default the in-progress or mismatch text */
    readonly detail?: string,
  ) {
    super(detail ?? `The request's work is not settled (${reason}).`);
  }
}
