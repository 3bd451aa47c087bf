// `npm run demo`: one checkout against a real HTTP contract server on 127.0.0.1 that
// fails in three ways before it answers. Every attempt carries the same key; the server
// counts one effect. Keys are stored in SQLite on disk (a temp directory), as in production.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type OncelyEvent } from 'oncely';
import { createContractServer } from 'oncely/mock';
import { listenContractServer, SqliteStore } from 'oncely/node';

const dir = mkdtempSync(join(tmpdir(), 'oncely-demo-'));
const contract = createContractServer();
const server = await listenContractServer(contract);

contract.inject(
  { fault: 'fail-before-commit', status: 503 }, // the load balancer answers 503: nothing happened
  { fault: 'in-progress', ms: 400, retryAfter: 1 }, // "still processing" (409 + Retry-After: 1)
  { fault: 'drop-after-commit' }, // the charge is made, then the connection dies
);

const describeEvent = (event: OncelyEvent): string | undefined => {
  switch (event.type) {
    case 'attempt':
      return `attempt ${event.attempt}  ${event.method} ${new URL(event.url).pathname}  Idempotency-Key: "${event.key}"`;
    case 'retry':
      return `  -> ${event.status ? `HTTP ${event.status}` : `no answer (${event.reason} error)`}, retrying with the same key in ${event.delay} ms`;
    case 'success':
      return `  -> HTTP ${event.status}${event.replayed ? ' (Idempotent-Replayed: true, the stored answer)' : ''}`;
    default:
      return undefined;
  }
};

const api = createClient({
  baseUrl: server.url,
  scope: 'user_42',
  store: new SqliteStore({ dir }),
  onEvent: (event) => {
    const line = describeEvent(event);
    if (line) console.log(line);
  },
});

try {
  const checkout = await api.intent('checkout:cart_7'); // the key is minted and on disk now
  console.log(`intent checkout:cart_7 has key ${checkout.key} (stored in ${dir})\n`);
  const res = await checkout.post('payments', { json: { amount: 4200, currency: 'eur' } });
  console.log(`\npaid: ${JSON.stringify(res.data)}`);
  console.log(`attempts: ${res.attempts}, replayed: ${res.replayed}, intent state: ${checkout.state}`);
  console.log(`effects on the server for this key: ${contract.effects(checkout.key)}`);
  if (contract.effects(checkout.key) !== 1) process.exitCode = 1;
} finally {
  await api.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
