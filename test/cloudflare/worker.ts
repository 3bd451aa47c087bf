/**
 * A Worker as an app writes it on oncely: `oncely` as workerd resolves it, its intents in
 * `DurableObjectStore` over the `INTENTS` namespace (SQLite-backed, local disk in workerd).
 * `GET /conformance`: the exported store conformance suite against it, as JSON.
 * `POST /checkout?base=<url>`: forms `checkout:1` and POSTs it to `<url>payments`
 * (`&store=memory`: in this isolate's memory instead, the control that dies with it).
 * `GET /no-store`: what `createClient` without a store says here.
 */
import { createClient, MemoryStore } from 'oncely';
import { type DurableObjectNamespaceLike, DurableObjectStore } from 'oncely/cloudflare';
import { checkStore } from 'oncely/testing';

export { IntentStoreObject } from 'oncely/cloudflare';

const memory = new MemoryStore();

interface Env {
  INTENTS: DurableObjectNamespaceLike;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === '/conformance') {
      const results = await checkStore(
        async () => {
          const prefix = `test-${crypto.randomUUID()}:`;
          // reopen: another store, as another isolate makes, over the same objects.
          return {
            store: new DurableObjectStore(env.INTENTS, { prefix }),
            reopen: async () => new DurableObjectStore(env.INTENTS, { prefix }),
          };
        },
        { utf8Names: true },
      );
      return Response.json(results);
    }
    if (url.pathname === '/checkout') {
      const api = createClient({
        baseUrl: url.searchParams.get('base')!,
        scope: 'smoke',
        store: url.searchParams.get('store') === 'memory' ? memory : new DurableObjectStore(env.INTENTS),
        leaseTtl: 500,
      });
      const intent = await api.intent('checkout:1');
      const res = await intent.post('payments', { json: { amount: 1 } });
      await api.close();
      return Response.json({ status: res.status, key: res.key, replayed: res.replayed, data: res.data });
    }
    if (url.pathname === '/no-store') {
      try {
        createClient({ baseUrl: 'https://api.example/' });
        return new Response('createClient accepted no store', { status: 500 });
      } catch (error) {
        return new Response((error as Error).message);
      }
    }
    return new Response('not found', { status: 404 });
  },
};
