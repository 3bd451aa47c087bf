/**
 * The same checkout through TanStack Query: `useMutation` over `oncely/tanstack` options,
 * the client persisted to localStorage, so a reload mid-flight restores the mutation and
 * resumes it (same variables, so same intent, so same key). The page holds the intent's
 * cross-tab lock while shown (`payment.hold`), so a click's request leaves at once. Opened
 * with `?ui=tanstack`.
 */
import { createSyncStoragePersister } from '@tanstack/query-sync-storage-persister';
import { QueryClient, useMutation, useMutationState } from '@tanstack/react-query';
import { PersistQueryClientProvider } from '@tanstack/react-query-persist-client';
import type { Client, IntentResponse } from 'oncely';
import { idempotentMutationOptions, resumeMutations, shouldDehydrateMutation } from 'oncely/tanstack';
import { useEffect, useMemo, useState } from 'react';
import * as z from 'zod/mini';
import { type PaymentBody, paymentBody, useCart } from './cart.ts';
import type { PageConfig } from './config.ts';
import { Ledger } from './ledger.tsx';

const Payment = z.object({ id: z.string(), amount: z.number(), currency: z.string() });
type Charge = z.infer<typeof Payment>;

/** What TanStack persists: everything the resumed mutationFn needs, the intent name included. */
interface PayVariables {
  cartId: string;
  body: PaymentBody;
}

const MUTATION_KEY = ['checkout'];
export const PERSIST_KEY = 'oncely-demo:tanstack';

const paymentOptions = (client: Client) =>
  idempotentMutationOptions({
    client,
    mutationKey: MUTATION_KEY,
    intent: (vars: PayVariables) => `checkout:${vars.cartId}`,
    mutationFn: (vars, { intent }) => intent.post('payments', { json: vars.body, schema: Payment }),
  });

type PaymentOptions = ReturnType<typeof paymentOptions>;

/** The page's QueryClient: mutation defaults registered before the persisted state is restored. */
export function TanstackApp({ client, config }: { client: Client; config: PageConfig }) {
  // One options object for the defaults and useMutation: what hold() keeps, mutationFn sends through.
  const [payment] = useState(() => paymentOptions(client));
  const [queryClient] = useState(() => {
    const qc = new QueryClient();
    qc.setMutationDefaults(MUTATION_KEY, payment);
    return qc;
  });
  const [persister] = useState(() =>
    createSyncStoragePersister({ storage: localStorage, key: PERSIST_KEY, throttleTime: 0 }),
  );
  return (
    <PersistQueryClientProvider
      client={queryClient}
      persistOptions={{ persister, dehydrateOptions: { shouldDehydrateMutation } }}
      onSuccess={() => resumeMutations(queryClient)}
    >
      <TanstackCheckout payment={payment} config={config} />
    </PersistQueryClientProvider>
  );
}

function TanstackCheckout({ payment, config }: { payment: PaymentOptions; config: PageConfig }) {
  const [cart] = useCart(config.cartId);
  const variables = useMemo<PayVariables>(() => ({ cartId: cart.id, body: paymentBody(cart) }), [cart]);
  const [key, setKey] = useState<string>();
  // Claimed on mount (the key is in IndexedDB before the click), its lock kept while shown.
  useEffect(() => payment.hold(variables), [payment, variables]);
  useEffect(() => {
    payment.claim(variables).then((intent) => setKey(intent.key), console.error);
  }, [payment, variables]);
  const pay = useMutation(payment);
  // The newest checkout mutation, restored ones included (useMutation only sees its own).
  const latest = useMutationState({ filters: { mutationKey: MUTATION_KEY }, select: (m) => m.state }).at(-1);
  const status = latest?.status ?? 'idle';
  const response = latest?.data as IntentResponse<Charge> | undefined;

  return (
    <main>
      <section>
        <h1>Checkout (TanStack Query)</h1>
        <p>
          Cart <code>{cart.id}</code>: {cart.amount} EUR
        </p>
        <button type="button" data-testid="pay" disabled={status === 'pending'} onClick={() => pay.mutate(variables)}>
          {status === 'pending' ? 'Paying…' : `Pay ${cart.amount} EUR`}
        </button>
      </section>
      <section>
        <h2>Payment</h2>
        <dl>
          <dt>Status</dt>
          <dd data-testid="state">{status}</dd>
          <dt>Idempotency key</dt>
          <dd data-testid="key">{key ?? '…'}</dd>
          <dt>Replayed</dt>
          <dd data-testid="replayed">{response === undefined ? '–' : response.replayed ? 'yes' : 'no'}</dd>
          <dt>Attempts</dt>
          <dd data-testid="attempts">{response?.attempts ?? '–'}</dd>
          <dt>Charge</dt>
          <dd data-testid="charge">{response ? `${response.data.id} (${response.data.amount})` : '–'}</dd>
          <dt>Error</dt>
          <dd data-testid="error">{latest?.error ? String(latest.error) : '–'}</dd>
        </dl>
      </section>
      <Ledger api={config.api} refreshOn={status} />
    </main>
  );
}
