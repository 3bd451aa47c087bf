/**
 * `DurableObjectStore`'s own boundary, the Worker → Durable Object request, in Node
 * (IntentStoreObject over node:sqlite, test/cloudflare/sqlite-object.ts): the conformance
 * suite, and a fault matrix of that request — failed before the object ran, answer lost
 * after it ran, a 500, garbage, a hang — on the claim, the first write of a send and every
 * later write. For each: the call ends with an oncely error (or its answer), `sent: false`
 * only when no request reached the server, and once the fault is lifted the same intent
 * resumes under its one key: one charge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurableObjectStore } from '../../cloudflare/durable-object-store.js';
import { createClient } from '../../src/client.js';
import { OncelyError } from '../../src/errors.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';
import { runStoreConformance } from '../store-conformance.js';
import { fakeNamespace, type TransportFault } from './sqlite-object.js';

runStoreConformance(
  'DurableObjectStore (IntentStoreObject over node:sqlite)',
  async () => {
    const namespace = fakeNamespace();
    return { store: new DurableObjectStore(namespace), reopen: async () => new DurableObjectStore(namespace) };
  },
  { utf8Names: true },
);

let server: WireServer;
const charged = new Set<string>();
beforeAll(async () => {
  server = await wireServer((request) => {
    const key = String(request.headers['idempotency-key']);
    const replayed = charged.has(key);
    charged.add(key);
    const headers: Record<string, string> = replayed ? { 'idempotent-replayed': 'true' } : {};
    return { status: 201, headers, body: { id: 'pay_1' } };
  });
});
afterAll(() => server.close());

const FAULTS: TransportFault[] = ['before', 'after', 'status-500', 'garbage', 'hang'];
/** Which requests to the object fail: the claim, the first write (the in_flight one), or every write after it. */
const WHERE = {
  claim: (op: string) => op === 'claim',
  'first write': (op: string, writes: number) => op === 'write' && writes === 1,
  'later writes': (op: string, writes: number) => op === 'write' && writes > 1,
};

describe('DurableObjectStore: faults of the request to the Durable Object', () => {
  const cases = FAULTS.flatMap((fault) => Object.keys(WHERE).map((where) => [where, fault] as const));

  it.each(cases)('%s: %s', async (where, fault) => {
    const namespace = fakeNamespace();
    let writes = 0;
    let faulty = true;
    namespace.fault = (op) => {
      if (op === 'write') writes++;
      return faulty && WHERE[where as keyof typeof WHERE](op, writes) ? fault : undefined;
    };
    const scope = `s-${where}-${fault}`;
    const api = createClient({
      baseUrl: server.url,
      scope,
      store: new DurableObjectStore(namespace),
      storeTimeout: 300,
      leaseTtl: 200,
      retry: { deadline: 3_000 },
    });
    const before = server.requests.length;
    const started = performance.now();
    try {
      const intent = await api.intent('checkout:1');
      const res = await intent.post('payments', { json: { amount: 1 } });
      expect(res.status).toBe(201);
    } catch (error) {
      expect(error).toBeInstanceOf(OncelyError);
      if ((error as OncelyError & { sent?: boolean }).sent === false) expect(server.requests.length).toBe(before);
    }

    // Bounded: the deadline (3 s) and a store call's bound (300 ms), whatever the object does.
    expect(performance.now() - started).toBeLessThan(5_000);
    faulty = false;
    await new Promise((resolve) => setTimeout(resolve, 250)); // past a dead call's lease
    const again = await api.intent('checkout:1');
    const res = await again.post('payments', { json: { amount: 1 } });
    expect(res.status).toBe(201);
    const keys = new Set(server.requests.slice(before).map((r) => r.headers['idempotency-key']));
    expect(keys.size).toBe(1); // one key on every attempt, before and after the fault: one charge
    expect(charged.has([...keys][0] as string)).toBe(true);
    await api.close();
  });
});
