/**
 * The re-claim policy of the UI bindings (the hook's observer, `oncely/tanstack`'s
 * mutationFn), written once: a call refused as gone before sending (its intent was reset,
 * cleared or swept by another client, or another tab's sent key was put back over this
 * unsent one) claims the intent again, once, and sends under the key stored now. Nothing
 * left under the gone key, so sending again cannot take effect twice.
 */
import type { Intent } from '../intent/intent.js';

/** An `IntentGoneError`, known by its code: one from another copy of oncely too. */
export const isGone = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 'INTENT_GONE';

/**
 * Sends through the intent `claim()` gives (or resolves with); refused as gone, sends once more through the
 * one `claimAgain()` gives (which forgets the gone one first). A second refusal is thrown.
 * @example sendReclaiming(() => client.intent(name), (intent) => intent.post('payments', { json }), () => client.intent(name))
 */
export async function sendReclaiming<T>(
  claim: () => Intent | Promise<Intent>,
  send: (intent: Intent) => Promise<T>,
  claimAgain: () => Promise<Intent>,
): Promise<T> {
  const claimed = claim();
  // Claimed already (on mount): sent in this turn, with no wait for the microtask queue.
  const intent = claimed instanceof Promise ? await claimed : claimed;
  try {
    return await send(intent);
  } catch (error) {
    if (!isGone(error)) throw error;
  }
  return send(await claimAgain());
}
