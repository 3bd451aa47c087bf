/** The checkout: cart, Pay, and everything oncely knows about the payment intent. */
import type { Client, OncelyEvent } from 'oncely';
import { useIdempotentMutation } from 'oncely/react';
import { useEffect, useState } from 'react';
import * as z from 'zod/mini';
import { paymentBody, useCart } from './cart.ts';
import type { PageConfig } from './config.ts';
import { Ledger } from './ledger.tsx';
import { isMismatch, MISMATCH_MESSAGE, statusText } from './status-text.ts';

const Payment = z.object({
  id: z.string(),
  amount: z.number(),
  currency: z.string(),
  status: z.literal('succeeded'),
});

const SHOWN_EVENTS = new Set([
  'offline',
  'attempt',
  'retry',
  'conflict',
  'replay',
  'mismatch',
  'unknown',
  'success',
  'failure',
]);

function describeEvent(event: OncelyEvent): string {
  switch (event.type) {
    case 'offline':
      return event.phase === 'paused' ? 'offline: waiting for the network' : 'back online';
    case 'attempt':
      return `attempt ${event.attempt}: ${event.method} ${new URL(event.url).pathname}`;
    case 'retry':
      return `retry after ${event.delay} ms (${event.reason}${event.status ? ` ${event.status}` : ''})`;
    case 'conflict':
      return `${event.status}: still in progress on the server`;
    case 'replay':
      return `${event.status}: replayed by the server`;
    case 'mismatch':
      return `mismatch (${event.source})`;
    case 'unknown':
      return `outcome unknown after ${event.attempts} attempts`;
    case 'success':
      return `success${event.replayed ? ' (replayed)' : ''} after ${event.attempts} attempts`;
    case 'failure':
      return `failure ${event.code}${event.status ? ` ${event.status}` : ''}`;
    default:
      return event.type;
  }
}

/** The last few client events of this intent, for the demo's "what happened" panel. */
function useEvents(client: Client, intent: string): string[] {
  const [events, setEvents] = useState<string[]>([]);
  useEffect(
    () =>
      client.on('*', (event) => {
        if (!SHOWN_EVENTS.has(event.type) || !('intent' in event) || event.intent !== intent) return;
        const time = new Date().toISOString().slice(11, 23);
        setEvents((list) => [...list.slice(-11), `${time} ${describeEvent(event)}`]);
      }),
    [client, intent],
  );
  return events;
}

export function Checkout({ client, config }: { client: Client; config: PageConfig }) {
  const [cart, setAmount] = useCart(config.cartId);
  const intent = `checkout:${cart.id}`;
  const pay = useIdempotentMutation({
    client,
    intent,
    // Also called with no variables by the automatic resume after a reload: the body comes from the stored cart.
    request: (_vars, { intent: checkout, signal }) =>
      checkout.post('payments', { json: paymentBody(cart), schema: Payment, signal }),
  });
  const events = useEvents(client, intent);
  const [resetError, setResetError] = useState<string | undefined>();
  const message = statusText(pay.status, {
    attempts: pay.attempts,
    replayed: pay.replayed,
    hasData: pay.data !== undefined,
    error: pay.error,
    isPaused: pay.isPaused,
  });

  return (
    <main>
      <section>
        <h1>Checkout</h1>
        <p>
          Cart <code>{cart.id}</code>: {cart.items.map((item) => `${item.qty} × ${item.name}`).join(', ')}
        </p>
        <div className="row">
          <label>
            Total (EUR)
            <input
              data-testid="amount"
              type="number"
              min="1"
              step="1"
              value={cart.amount}
              onChange={(event) => {
                const amount = Number(event.target.value);
                if (Number.isFinite(amount) && amount > 0) setAmount(amount);
              }}
            />
          </label>
          {/* Deliberately never disabled: double clicks are the hook's job (one request in flight). */}
          <button type="button" data-testid="pay" onClick={() => pay.mutate()}>
            {pay.isPending ? 'Paying…' : `Pay ${cart.amount} EUR`}
          </button>
          <button
            type="button"
            className="secondary"
            data-testid="new-order"
            onClick={() => {
              setResetError(undefined);
              // forget() refuses while the outcome is unknown or in flight: a new key could pay twice.
              pay.forget().catch((error: unknown) => setResetError(String(error)));
            }}
          >
            New order (new key)
          </button>
        </div>
      </section>

      <section>
        <h2>Payment</h2>
        <div className="status" data-testid="status" data-status={pay.status}>
          {message}
        </div>
        {pay.status === 'error' && isMismatch(pay.error) && (
          <p className="alert" data-testid="mismatch" role="alert">
            {MISMATCH_MESSAGE}
          </p>
        )}
        {resetError && <p className="alert">{resetError}</p>}
        <dl>
          <dt>Status</dt>
          <dd data-testid="state">{pay.status}</dd>
          <dt>Waiting for the network</dt>
          <dd data-testid="paused">{pay.isPaused ? 'yes' : 'no'}</dd>
          <dt>Idempotency key</dt>
          <dd data-testid="key">{pay.key ?? '…'}</dd>
          <dt>Replayed</dt>
          <dd data-testid="replayed">{pay.replayed === undefined ? '–' : pay.replayed ? 'yes' : 'no'}</dd>
          <dt>Attempts</dt>
          <dd data-testid="attempts">{pay.attempts}</dd>
          <dt>Charge</dt>
          <dd data-testid="charge">{pay.data ? `${pay.data.id} (${pay.data.amount} ${pay.data.currency})` : '–'}</dd>
          <dt>Not stored</dt>
          <dd data-testid="warning">{pay.warning ? String(pay.warning) : '–'}</dd>
          <dt>Stored state</dt>
          <dd data-testid="stored-state">{pay.record?.state ?? '…'}</dd>
        </dl>
      </section>

      <Ledger api={config.api} refreshOn={`${pay.status}:${pay.attempts}`} />

      <section>
        <h2>Client events</h2>
        <ol className="events" data-testid="events">
          {events.map((line, index) => (
            <li key={index}>{line}</li>
          ))}
        </ol>
      </section>
    </main>
  );
}
