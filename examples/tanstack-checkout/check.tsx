/**
 * The TanStack checkout (./checkout.tsx) rendered in happy-dom with @testing-library/react,
 * paying against oncely's contract server over real HTTP on 127.0.0.1. Bundled and run
 * by ./main.ts (Node cannot strip JSX). Throws unless the cart is paid exactly once.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Window } from 'happy-dom';

// A DOM for React in Node: happy-dom's window globals, Node's own fetch and timers kept.
const dom = new Window({ url: 'http://127.0.0.1/' });
for (const name of Object.getOwnPropertyNames(dom)) {
  if (name in globalThis) continue;
  Object.defineProperty(globalThis, name, {
    value: (dom as unknown as Record<string, unknown>)[name],
    configurable: true,
    writable: true,
  });
}
Object.assign(globalThis, { window: dom, document: dom.document, IS_REACT_ACT_ENVIRONMENT: true });

const { QueryClient, QueryClientProvider } = await import('@tanstack/react-query');
const { cleanup, fireEvent, render, screen, waitFor } = await import('@testing-library/react');
const { createClient } = await import('oncely');
const { createContractServer } = await import('oncely/mock');
const { listenContractServer } = await import('oncely/node');
const { Checkout } = await import('./checkout.tsx');

// In a browser the page's client comes from `oncely/browser` (IndexedDB); here, Node's default store.
const stateDir = mkdtempSync(join(tmpdir(), 'oncely-tanstack-example-'));
process.env.ONCELY_STATE_DIR = stateDir;
const contract = createContractServer();
const server = await listenContractServer(contract);
const client = createClient({ baseUrl: server.url, scope: 'user_42', retry: { baseDelay: 50 } });
const cart = { id: 'cart_7', amount: 4200, currency: 'eur' };

/** One page load: a fresh QueryClient, the component mounted, its key claimed. */
async function openPage(queryClient = new QueryClient()): Promise<string> {
  render(
    <QueryClientProvider client={queryClient}>
      <Checkout client={client} cart={cart} />
    </QueryClientProvider>,
  );
  const pay = await screen.findByRole('button', { name: 'Pay' });
  await waitFor(() => assert.equal((pay as HTMLButtonElement).disabled, false)); // enabled once the key is stored
  return document.querySelector('[data-key]')!.getAttribute('data-key')!;
}

try {
  console.log('page 1: the server makes the payment, then the answer is lost');
  contract.inject({ fault: 'drop-after-commit', match: { method: 'POST', path: '/payments' } });
  const queryClient = new QueryClient();
  const key = await openPage(queryClient);
  assert.equal(contract.attempts(key), 0, 'claimed on mount, nothing sent before the click');
  fireEvent.click(screen.getByRole('button', { name: 'Pay' }));
  // A double click: TanStack has not re-rendered the button disabled yet, so it runs the
  // mutationFn twice; oncely joins the second call to the first (same intent, same request).
  fireEvent.click(screen.getByRole('button', { name: 'Pay' }));
  const paid = await screen.findByRole('status', {}, { timeout: 10_000 });
  console.log(`  ${paid.textContent}`);
  assert.match(paid.textContent ?? '', /after 2 attempts \(the stored answer\)/);
  assert.equal(queryClient.getMutationCache().getAll().length, 2, 'TanStack ran two mutations');
  assert.equal(contract.attempts(key), 2, 'two requests: the lost one and oncely’s retry; TanStack retried nothing');
  assert.equal(contract.effects(key), 1, 'one payment');
  cleanup();

  console.log('page 2: the page is opened again and Pay pressed again');
  const again = await openPage();
  assert.equal(again, key, 'the same intent, the same key');
  fireEvent.click(screen.getByRole('button', { name: 'Pay' }));
  console.log(`  ${(await screen.findByRole('status', {}, { timeout: 10_000 })).textContent}`);
  assert.equal(contract.effects(key), 1, 'still one payment');
  cleanup();
  console.log(`ok: ${contract.attempts(key)} requests with one key, ${contract.effects(key)} payment`);
} finally {
  cleanup();
  await client.close();
  await server.close();
  await dom.happyDOM.close();
  rmSync(stateDir, { recursive: true, force: true });
}
