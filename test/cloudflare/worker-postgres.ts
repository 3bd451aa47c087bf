/**
 * A Worker on PostgresStore with `pg` (its `cloudflare:sockets` build, through pg-cloudflare):
 * `POST /checkout?db=<postgres url>&base=<url>` migrates, forms `checkout:1` and POSTs it to
 * `<url>payments`. The pool lives for one request: Workers share no socket between requests.
 */
import { createClient } from 'oncely';
import { PostgresStore } from 'oncely/postgres';
import pg from 'pg';

// The test's workerd config binds the INTENTS namespace for every Worker it runs.
export { IntentStoreObject } from 'oncely/cloudflare';

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const pool = new pg.Pool({ connectionString: url.searchParams.get('db')!, max: 2 });
    try {
      const store = new PostgresStore({ pool });
      await store.migrate();
      const api = createClient({ baseUrl: url.searchParams.get('base')!, scope: 'pg', store });
      const intent = await api.intent('checkout:1');
      const res = await intent.post('payments', { json: { amount: 1 } });
      await api.close();
      return Response.json({ status: res.status, key: res.key, replayed: res.replayed });
    } catch (error) {
      return Response.json({ error: String((error as Error)?.stack ?? error) }, { status: 500 });
    } finally {
      await pool.end();
    }
  },
};
