import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { type ClientOptions, createClient, MemoryStore } from '../../src/index.js';
import { type ContractServerOptions, createContractServer } from '../../src/mock/index.js';
import { mswHandlers } from '../../src/mock/msw.js';

export const BASE = 'https://api.test/';

/**
 * One MSW-mounted contract server per test file, reset after each test, and a factory of
 * clients over a shared memory store (so "a new client over the same store" is a restart).
 */
export function setupContract(serverOptions: ContractServerOptions = {}) {
  const contract = createContractServer(serverOptions);
  const msw = setupServer(...mswHandlers(contract, { baseUrl: BASE }));
  beforeAll(() => msw.listen({ onUnhandledFrame: 'error' }));
  afterEach(() => contract.reset());
  afterAll(() => msw.close());
  return {
    contract,
    msw,
    client: (options: Partial<ClientOptions> = {}) =>
      createClient({
        baseUrl: BASE,
        store: new MemoryStore(),
        retry: { baseDelay: 1, maxDelay: 5 },
        random: () => 0.5,
        ...options,
      }),
  };
}
