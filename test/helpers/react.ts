import { cleanup } from '@testing-library/react';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  type ClientOptions,
  createClient,
  type Intent,
  type IntentCoordinator,
  LocalCoordinator,
  type Store,
} from '../../src/index.js';
import { createContractServer } from '../../src/mock/index.js';
import { mswHandlers } from '../../src/mock/msw.js';

/** One MSW-mounted contract server per hook test file; DOM and server reset after each test. */
export function setupHookContract() {
  const contract = createContractServer();
  const server = setupServer(...mswHandlers(contract, { baseUrl: 'https://api.test' }));
  beforeAll(() => server.listen({ onUnhandledFrame: 'error' }));
  afterEach(() => {
    cleanup();
    contract.reset();
  });
  afterAll(() => server.close());
  return { contract, server };
}

/**
 * happy-dom's `Response.clone()` empties bodies read from a socket (capricorn86/happy-dom#2353)
 * and ky clones every response: hand ky an in-memory copy.
 */
export const buffered: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  const body = [101, 204, 205, 304].includes(res.status) ? null : await res.arrayBuffer();
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
};

export const makeClient = (store: Store, options: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: 'https://api.test/', store, fetch: buffered, retry: { baseDelay: 1 }, ...options });

export const cart = { amount: 4200, currency: 'EUR' };
/** The request of the hook tests, in `request`'s `(variables, { intent })` order. */
export const pay = (_vars: unknown, { intent }: { intent: Intent }) => intent.post('payments', { json: cart });
export const NAME = 'checkout:cart_1';

/** A fetch whose responses wait for `release()` (the server has already answered). */
export function gatedFetch() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const res = await buffered(input, init);
    await gate;
    return res;
  };
  return { fetch, release };
}

/**
 * The coordinator of a page after a reload. Its old self still hangs in this process (a
 * real reload would have killed it and freed its Web Lock), so it gets a lock of its own
 * that, like Web Locks, covers the store: no lease to wait out.
 */
export function reloaded(): IntentCoordinator {
  const lock = new LocalCoordinator();
  return {
    exclusive: (scope, name, fn) => lock.exclusive(scope, name, fn),
    publish() {},
    subscribe: () => () => {},
    coversStore: true,
  };
}
