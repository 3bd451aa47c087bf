/**
 * What one case runs in: its own ledger server, its own faulty store, a client built from
 * the case's option changes, and the flags every injected fault checks (`lifted`).
 */
import { type Client, type ClientOptions, createClient, type Intent } from '../../src/index.js';
import { FaultyStore } from './faulty-store.js';
import { type Ledger, ledgerServer } from './ledger-server.js';

/** Short budgets so a case ends in seconds. */
export const BUDGET = {
  maxAttempts: 4,
  deadline: 1500,
  timeout: 300,
  baseDelay: 1,
  maxDelay: 20,
  inProgressDelay: 100,
};
export const STORE_TIMEOUT = 1000;
export const LEASE_TTL = 600;

export interface Env {
  ledger: Ledger;
  store: FaultyStore;
  order: string;
  body: Record<string, unknown>;
  /** Faults are on until the call under test ends. */
  lifted: boolean;
  /** A custom transport or `run()` function was entered: something may have been sent. */
  mayHaveSent: boolean;
  /** Option changes the case makes to the client under test. */
  options: Partial<ClientOptions>;
  /** Errors of other writers (checked for being typed). */
  sideErrors: unknown[];
  /** Case-specific failure messages (a wrong body on the wire…). */
  findings: string[];
  client(extra?: Partial<ClientOptions>): Client;
  /** The default act: form the intent and POST the order. */
  post(client: Client): Promise<unknown>;
  intent(client: Client): Promise<Intent>;
  closers: (() => unknown)[];
  /** Ledger requests before the call under test began (a follow-up call after a good POST). */
  before: number;
}

export async function makeEnv(id: string): Promise<Env> {
  const ledger = await ledgerServer();
  const store = new FaultyStore();
  const order = `order:${id}`;
  const env: Env = {
    ledger,
    store,
    order,
    body: { order, amount: 1000 },
    lifted: false,
    mayHaveSent: false,
    options: {},
    sideErrors: [],
    findings: [],
    closers: [() => ledger.close()],
    before: 0,
    client(extra = {}) {
      return createClient({
        baseUrl: ledger.url,
        store,
        retry: BUDGET,
        storeTimeout: STORE_TIMEOUT,
        leaseTtl: LEASE_TTL,
        ...env.options,
        ...extra,
      });
    },
    intent: (client) => client.intent(order),
    async post(client) {
      const intent = await env.intent(client);
      return intent.post('pay', { json: env.body });
    },
  };
  return env;
}
