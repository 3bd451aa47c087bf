import { InvalidArgumentError } from '../src/errors.js';
import { PENDING_STATES } from '../src/store/record-rules.js';
import type { IntentRecord, Store } from '../src/store/store.js';

export interface SettleOptions {
  /** The key the provider was asked about: the intent is settled only if it still has it. */
  key: string;
  /** What the provider says happened. */
  outcome: 'succeeded' | 'failed';
  /** The provider's HTTP status, if the check returned one. */
  status?: number;
  /** @default Date.now() */
  now?: number;
}

/**
 * Settles an intent by reconciliation, after the app asked the provider whether the
 * operation under `key` happened (for expired intents, which oncely will not resend).
 * A `succeeded` intent never becomes `failed`; settling it again the same way is a no-op.
 * Resolves with the record now stored, or `undefined` when the intent is gone or has
 * another key (re-formed meanwhile: nothing is changed).
 */
export async function settleIntent(
  store: Store,
  scope: string,
  name: string,
  options: SettleOptions,
): Promise<IntentRecord | undefined> {
  const now = options.now ?? Date.now();
  let refused = false;
  const stored = await store.update(scope, name, (current) => {
    refused = false;
    if (current?.key !== options.key) return undefined;
    if (current.state === 'succeeded' && options.outcome === 'failed') {
      refused = true;
      return undefined;
    }
    if (!PENDING_STATES.includes(current.state) && current.state !== 'ready') return undefined;
    const { lease: _lease, ...rest } = current;
    return {
      ...rest,
      state: options.outcome,
      updatedAt: now,
      ...(options.status !== undefined && { status: options.status }),
    };
  });
  if (refused)
    throw new InvalidArgumentError(`Intent "${name}" already succeeded; it cannot be settled as failed.`, {
      scope,
      intent: name,
    });
  return stored?.key === options.key ? stored : undefined;
}
