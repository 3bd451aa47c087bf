/**
 * The cart, kept in localStorage so that a reload (or a second tab) rebuilds the same
 * request body: oncely stores no bodies, and resuming an intent means sending the same
 * request again under its key.
 */
import { useCallback, useEffect, useState } from 'react';

export interface CartItem {
  sku: string;
  name: string;
  qty: number;
}

export interface Cart {
  id: string;
  items: CartItem[];
  /** Total in EUR, editable in the demo to show what a changed cart does. */
  amount: number;
  currency: 'EUR';
}

export interface PaymentBody {
  amount: number;
  currency: string;
  cart: { id: string; items: CartItem[] };
}

const ITEMS: CartItem[] = [
  { sku: 'beans-1kg', name: 'Coffee beans, 1 kg', qty: 1 },
  { sku: 'filter-100', name: 'Paper filters, 100', qty: 2 },
];
const DEFAULT_AMOUNT = 42;

const storageKey = (cartId: string) => `oncely-demo:cart:${cartId}`;

function load(cartId: string): Cart {
  const stored = Number(localStorage.getItem(storageKey(cartId)));
  const amount = Number.isFinite(stored) && stored > 0 ? stored : DEFAULT_AMOUNT;
  return { id: cartId, items: ITEMS, amount, currency: 'EUR' };
}

export const paymentBody = (cart: Cart): PaymentBody => ({
  amount: cart.amount,
  currency: cart.currency,
  cart: { id: cart.id, items: cart.items },
});

/** The cart of `cartId`, shared by every tab through localStorage. */
export function useCart(cartId: string): [Cart, (amount: number) => void] {
  const [cart, setCart] = useState(() => load(cartId));
  useEffect(() => {
    const onStorage = (event: StorageEvent) => {
      if (event.key === storageKey(cartId)) setCart(load(cartId));
    };
    window.addEventListener('storage', onStorage);
    return () => window.removeEventListener('storage', onStorage);
  }, [cartId]);
  const setAmount = useCallback(
    (amount: number) => {
      localStorage.setItem(storageKey(cartId), String(amount));
      setCart(load(cartId));
    },
    [cartId],
  );
  return [cart, setAmount];
}
