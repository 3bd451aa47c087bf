/**
 * A checkout on TanStack Query 5 with oncely's keys: `useMutation` over the options of
 * `idempotentMutationOptions` (`oncely/tanstack`). The key is claimed when the page
 * mounts, not at the click; oncely retries (same key, one budget) and TanStack does not
 * (`retry: 0` is set for you).
 */
import { useMutation } from '@tanstack/react-query';
import type { Client } from 'oncely';
import { idempotentMutationOptions } from 'oncely/tanstack';
import { useEffect, useMemo, useState } from 'react';
import * as z from 'zod/mini';

export interface Cart {
  id: string;
  amount: number;
  currency: string;
}

const Payment = z.object({ id: z.string(), amount: z.number(), currency: z.string() });

/** The variables TanStack holds (and would persist): all a resumed mutation needs, the intent name included. */
export interface PayVariables {
  cartId: string;
  body: { amount: number; currency: string };
}

/** One options object per client; register it with `queryClient.setMutationDefaults(['checkout'], …)` to persist. */
export const paymentOptions = (client: Client) =>
  idempotentMutationOptions({
    client,
    mutationKey: ['checkout'],
    intent: (vars: PayVariables) => `checkout:${vars.cartId}`, // one intent per cart, derived from the variables
    mutationFn: (vars, { intent }) => intent.post('payments', { json: vars.body, schema: Payment }),
  });

export function Checkout({ client, cart }: { client: Client; cart: Cart }) {
  const payment = useMemo(() => paymentOptions(client), [client]);
  const vars = useMemo<PayVariables>(
    () => ({ cartId: cart.id, body: { amount: cart.amount, currency: cart.currency } }),
    [cart],
  );
  const [key, setKey] = useState<string>();
  // Claimed on mount: the key is stored before the click, so a reload finds it.
  useEffect(() => {
    payment.claim(vars).then((intent) => setKey(intent.key), console.error);
  }, [payment, vars]);
  const pay = useMutation(payment);

  if (pay.isSuccess) {
    const res = pay.data; // an IntentResponse: data, replayed, key, attempts
    return (
      <p role="status">
        Paid {res.data.id} after {res.attempts} attempt{res.attempts === 1 ? '' : 's'}
        {res.replayed ? ' (the stored answer)' : ''}
      </p>
    );
  }
  return (
    <section>
      <p>
        Cart {cart.id}: {cart.amount} {cart.currency} <small data-key={key}>{key ? 'key stored' : 'claiming…'}</small>
      </p>
      <button type="button" onClick={() => pay.mutate(vars)} disabled={!key || pay.isPending}>
        {pay.isPending ? 'Paying…' : 'Pay'}
      </button>
      {pay.isError && <p role="alert">{String(pay.error)}</p>}
    </section>
  );
}
